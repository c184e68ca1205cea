"""psycopg's pipeline mode, as PostgreSQL's writes (and, behind a transaction pooler, its reads)
run in it: psycopg's sync connection as it is, its async one (the async API's twin, in the
greenlet bridge) through ``BridgedConnection``, whose calls are awaited with ``await_only``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from sqlalchemy.util import await_only


@cache
def psycopg_connection() -> type[Any]:
    """psycopg's (synchronous) connection class; a class nothing is an instance of when the
    driver is not installed."""
    try:
        from psycopg import Connection
    except ImportError:
        return type("NoPsycopg", (), {})
    return Connection


@cache
def psycopg_async_connection() -> type[Any]:
    """psycopg's async connection class (under SQLAlchemy's adapter, the async API's twin runs
    on one, through the greenlet bridge); a class nothing is an instance of without psycopg."""
    try:
        from psycopg import AsyncConnection
    except ImportError:
        return type("NoAsyncPsycopg", (), {})
    return AsyncConnection


class BridgedCursor:
    """A psycopg async cursor as a sync one, each call awaited through the greenlet bridge
    (``await_only``), what a pipelined write on the async API sends on. Not SQLAlchemy's
    adapter's cursor: that one fetches every row as it executes, which in a pipeline would wait
    for each answer."""

    __slots__ = ("_cursor", "connection")

    def __init__(self, connection: BridgedConnection) -> None:
        self.connection = connection
        self._cursor = connection.driver.cursor()

    def execute(self, sql: str, params: Any = None) -> BridgedCursor:
        await_only(self._cursor.execute(sql, params))
        return self

    def executemany(self, sql: str, params: Any, *, returning: bool = False) -> None:
        await_only(self._cursor.executemany(sql, params, returning=returning))

    def results(self) -> Iterator[BridgedCursor]:
        """Each result of ``executemany(..., returning=True)``, this cursor moved to it."""
        results = self._cursor.results()
        while True:
            try:
                await_only(anext(results))
            except StopAsyncIteration:
                return
            yield self

    def fetchall(self) -> list[Any]:
        return list(await_only(self._cursor.fetchall()))

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def close(self) -> None:
        await_only(self._cursor.close())

    def __enter__(self) -> BridgedCursor:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class BridgedPipeline:
    __slots__ = ("_pipeline",)

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    def sync(self) -> None:
        await_only(self._pipeline.sync())


class BridgedConnection:
    """psycopg's async connection (``driver``) as the sync one a pipelined write uses: its
    ``pipeline()`` and ``cursor()``, awaited through the greenlet bridge. The async API's
    writes so take the round trips of the sync ones."""

    __slots__ = ("driver",)

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def cursor(self) -> BridgedCursor:
        return BridgedCursor(self)

    @contextmanager
    def pipeline(self) -> Iterator[BridgedPipeline]:
        manager = self.driver.pipeline()
        pipeline = await_only(manager.__aenter__())
        try:
            yield BridgedPipeline(pipeline)
        except BaseException as exc:
            if not await_only(manager.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            await_only(manager.__aexit__(None, None, None))
