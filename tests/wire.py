"""What the round-trip tests share: ``Wire`` (the PostgreSQL round trips of a call, from libpq's
trace) and a ``run`` record; the ``pg_repo`` fixture is conftest's."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from typing import Any

from conftest import make_record
from psycopg import pq
from sqlalchemy import event
from sqlalchemy.engine import Engine

from acti_store import ExecutionRecord


def _pgconn(connection: Any) -> Any:
    """libpq's connection under a psycopg one, or under SQLAlchemy's async adapter of one."""
    return getattr(connection, "_connection", connection).pgconn


class Wire:
    """What the engines' connections send and wait for, from libpq's trace of the protocol.

    libpq buffers its trace: each call is traced from a fresh handle, flushed when the trace is
    turned off after the call."""

    def __init__(self, *engines: Engine) -> None:
        self._trace = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._connections: list[Any] = []
        self._on = False
        for engine in engines:
            event.listen(engine, "connect", self._connected)

    def _connected(self, dbapi_connection: Any, _record: object) -> None:
        self._connections.append(dbapi_connection)
        if self._on:
            self._start(dbapi_connection)

    def _start(self, connection: Any) -> None:
        pgconn = _pgconn(connection)
        pgconn.trace(os.dup(self._trace.fileno()))
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    def during(self, call: Callable[[], object]) -> tuple[int, list[str]]:
        """The round trips ``call`` made (times the client sent, then waited for the server),
        and the first word of each statement it sent."""
        self._trace.seek(0)
        self._trace.truncate()
        self._on = True
        for connection in self._connections:
            if not connection.closed:
                self._start(connection)
        try:
            call()
        finally:
            self._on = False
            for connection in self._connections:
                if not connection.closed:
                    _pgconn(connection).untrace()
        self._trace.seek(0)
        lines = [line.split("\t") for line in self._trace.read().splitlines()]
        directions = [line[0] for line in lines if len(line) > 2]
        trips = sum(1 for pair in itertools.pairwise(directions) if pair == ("F", "B"))
        sent = [
            (line[3].split('"')[1] if line[2] == "Query" else line[3].split('"')[3]).split()[0]
            for line in lines
            if len(line) > 3 and line[0] == "F" and line[2] in ("Query", "Parse")
        ]
        return trips, [word.upper() for word in sent]


def run(success: bool = True) -> ExecutionRecord:
    return make_record(success=success)
