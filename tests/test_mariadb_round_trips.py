"""MariaDB round trips, from what PyMySQL sends: each statement is one, so a call costs what it
sends. The pool's ROLLBACK on check-in is sent only for a connection whose transaction may still
be open (``mariadb.reset``), never after the repository's own COMMIT."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymysql
import pytest
from conftest import make_config

from acti_store import AgentUpdate, ExecutionRecord, SearchQuery
from acti_store.repository.sql import SqlAgentRepository

pytestmark = pytest.mark.mysql


@pytest.fixture
def repo(mysql_repo: SqlAgentRepository) -> SqlAgentRepository:
    return mysql_repo


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], list[str]]:
    """``sent(call)``: the statements PyMySQL sent to the server while ``call`` ran."""
    statements: list[str] = []
    on = False
    command = pymysql.connections.Connection._execute_command

    def traced(self: Any, kind: int, sql: Any) -> Any:
        if on:
            text = bytes(sql).decode() if isinstance(sql, bytes | bytearray) else str(sql)
            statements.append(text.split(None, 1)[0].upper())
        return command(self, kind, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", traced)

    def during(call: Callable[[], Any]) -> list[str]:
        nonlocal on
        statements.clear()
        on = True
        try:
            call()
        finally:
            on = False
        return list(statements)

    return during


def run(repo: SqlAgentRepository, name: str) -> None:
    repo.record_execution(
        name,
        ExecutionRecord(
            timestamp=repo.now(), task="a task", result_summary="done", success=True,
            duration_seconds=0.1, tool_calls_count=1,
        ),
    )  # fmt: skip


def test_each_call_sends_no_rollback_after_its_own_commit(
    repo: SqlAgentRepository, sent: Callable[[Callable[[], Any]], list[str]]
) -> None:
    repo.create(make_config("warm_up"))  # the pool's connection is open before counting
    assert sent(lambda: repo.get("warm_up")) == ["SELECT", "COMMIT"]
    writes = {
        "create": lambda: repo.create(make_config("lead_qualifier")),
        "update": lambda: repo.update(
            "lead_qualifier", AgentUpdate(description="Updated description")
        ),
        "run": lambda: run(repo, "lead_qualifier"),
    }
    for call, write in writes.items():
        statements = sent(write)
        assert statements[-1] == "COMMIT" and "ROLLBACK" not in statements, (call, statements)
    # A run reads nothing back: its record and its version's counters take the agent's id and
    # version from the row its counters' UPDATE locked.
    assert sent(lambda: run(repo, "lead_qualifier")) == [
        "UPDATE", "INSERT", "INSERT", "DELETE", "COMMIT"
    ]  # fmt: skip
    # A snapshot read ends with its ROLLBACK, and the pool sends no second one.
    searched = sent(lambda: repo.search(SearchQuery(query="lead")))
    assert searched.count("ROLLBACK") + searched.count("COMMIT") == 1


def test_a_connection_the_host_used_is_rolled_back_before_the_store_reads_on_it(
    repo: SqlAgentRepository, sent: Callable[[Callable[[], Any]], list[str]]
) -> None:
    repo.create(make_config("lead_qualifier"))

    def host_reads() -> None:
        with repo.engine.connect() as connection:  # a raw DBAPI cursor: SQLAlchemy sees nothing
            cursor = connection.connection.cursor()
            cursor.execute("SELECT COUNT(*) FROM agents")
            cursor.fetchall()
            cursor.close()

    assert sent(host_reads)[-1] == "ROLLBACK"  # the transaction it left open ends
    # The same pooled connection sets a snapshot's isolation next (error 1568 if still open).
    assert [a.name for a in repo.search(SearchQuery(query="lead"))] == ["lead_qualifier"]
    assert repo.search_page(SearchQuery(query="qualif", limit=1)).total == 1
