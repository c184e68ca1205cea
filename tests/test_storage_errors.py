"""Driver errors become the library's exceptions by their code (SQLite's extended result code,
PostgreSQL's SQLSTATE), not by their message: a duplicate name is ``AgentExistsError``, a lock
conflict is a ``StoreUnavailableError`` that writes retry, other refusals say what was refused."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import exc as sa_exc

from acti_store import AgentExistsError, AgentStoreError, StoreUnavailableError
from acti_store.dberrors import is_retryable, translated


@pytest.fixture
def database(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "store.db", isolation_level=None, timeout=0)
    connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)")
    connection.execute("INSERT INTO t VALUES (1, 'taken')")
    with closing(connection):
        yield connection


def failure(connection: sqlite3.Connection, sql: str) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as raised:
        connection.execute(sql)
    return raised.value


@pytest.mark.parametrize(
    "sql",
    ["INSERT INTO t VALUES (2, 'taken')", "INSERT INTO t VALUES (1, 'free')"],
    ids=["unique", "primary-key"],
)
def test_a_duplicate_key_means_the_agent_exists(database: sqlite3.Connection, sql: str) -> None:
    error = failure(database, sql)
    wrapped = sa_exc.IntegrityError(sql, None, error)  # as SQLAlchemy's connections raise it

    for raised in (error, wrapped):
        found = translated(raised, sqlite3, "lead_qualifier")
        assert isinstance(found, AgentExistsError)
        assert str(found) == "Agent 'lead_qualifier' already exists"
    # Without the name of an agent being created, it is the store refusing a write.
    refused = translated(error, sqlite3)
    assert type(refused) is AgentStoreError
    assert str(refused) == f"the store refused the write: {error}"


def test_another_constraint_is_a_refused_write_even_when_creating(
    database: sqlite3.Connection,
) -> None:
    error = failure(database, "INSERT INTO t VALUES (2, NULL)")

    found = translated(error, sqlite3, "lead_qualifier")

    assert type(found) is AgentStoreError
    assert str(found) == "the store refused the write: NOT NULL constraint failed: t.name"


def test_a_lock_held_by_another_connection_is_retryable(
    database: sqlite3.Connection, tmp_path: Path
) -> None:
    with closing(sqlite3.connect(tmp_path / "store.db", isolation_level=None)) as writer:
        writer.execute("BEGIN IMMEDIATE")
        error = failure(database, "BEGIN IMMEDIATE")
        writer.execute("ROLLBACK")

    found = translated(error, sqlite3)

    assert isinstance(found, StoreUnavailableError)
    assert str(found) == "the store is unavailable: database is locked"
    assert is_retryable(error) and is_retryable(sa_exc.OperationalError("BEGIN", None, error))


def test_other_failures_are_not_retried(database: sqlite3.Connection) -> None:
    missing = failure(database, "SELECT * FROM no_such_table")  # an OperationalError too

    assert isinstance(translated(missing, sqlite3), StoreUnavailableError)
    assert not is_retryable(missing)
    assert translated(ValueError("not a driver error"), sqlite3) is None
