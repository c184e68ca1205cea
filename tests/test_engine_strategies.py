"""Each engine's bulk loading, derived by SQLAlchemy from the statements themselves (issue 26
§5): a statement that stopped qualifying would fall back to row by row without a word, so these
check the derivation itself, with no database, for every paramstyle."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from acti_store.engines.postgresql.statements import copy_sql
from acti_store.repository.statements import INSERT_AGENT, INSERT_EXECUTION, INSERT_TAG
from acti_store.repository.strategy import strategy_for
from acti_store.repository.version_statements import SNAPSHOT_ROW
from acti_store.sqlexec import Cursor

SQLITE = sqlite.pysqlite.dialect()
POSTGRESQL = postgresql.psycopg.dialect()
#: The same statements on a driver of another paramstyle (named, like psycopg's ``%(name)s``).
SQLITE_NAMED = sqlite.pysqlite.dialect(paramstyle="named")


@pytest.mark.parametrize("dialect", [SQLITE, SQLITE_NAMED, POSTGRESQL], ids=lambda d: d.paramstyle)
def test_an_insert_of_many_rows_is_one_statement_on_every_paramstyle(dialect: object) -> None:
    many = INSERT_AGENT.many(dialect, 3)  # type: ignore[arg-type]
    assert many is not None
    assert many.sql.count("VALUES") == 1 and many.sql.count("), (") == 2
    assert "RETURNING" in many.sql  # the ids come back in the same statement
    assert INSERT_TAG.many(dialect, 2) is not None  # type: ignore[arg-type]


def test_a_statement_that_is_not_a_plain_insert_is_never_made_many_rows_or_copied() -> None:
    """An INSERT ... SELECT (a snapshot of the agent's row) keeps its own statement."""
    assert SNAPSHOT_ROW.many(SQLITE, 2) is None
    assert copy_sql(SNAPSHOT_ROW.compiled(POSTGRESQL)) is None


def test_many_rows_go_in_with_each_rows_values_on_a_real_sqlite() -> None:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE agent_tags (agent_id INTEGER, tag TEXT, tenant TEXT)")
    cursor = Cursor(connection.cursor(), SQLITE, many_rows=True)
    cursor.tenant = "acme"
    cursor.executemany(INSERT_TAG, [{"agent_id": 1, "tag": t} for t in ("a", "b", "c")])
    rows = [{"agent_id": 2, "tag": t} for t in ("x", "y")]
    assert INSERT_TAG.many(SQLITE, 2) is not None
    cursor.insert_rows(INSERT_TAG, rows)
    stored = connection.execute("SELECT agent_id, tag, tenant FROM agent_tags ORDER BY rowid")
    assert stored.fetchall() == [
        (1, "a", "acme"),
        (1, "b", "acme"),
        (1, "c", "acme"),
        (2, "x", "acme"),
        (2, "y", "acme"),
    ]


def test_postgresql_loads_rows_by_copy() -> None:
    for prepared, table in ((INSERT_EXECUTION, "executions"), (INSERT_TAG, "agent_tags")):
        copy = copy_sql(prepared.compiled(POSTGRESQL))
        assert copy is not None and copy.startswith(f"COPY {table} (")
        assert copy.endswith(") FROM STDIN")


def test_each_engine_gives_its_cursor_its_own_bulk_loading() -> None:
    """SQLite: multi-row VALUES, no COPY; PostgreSQL: COPY, and an INSERT ... RETURNING of many
    rows in one batch (psycopg's ``executemany(returning=True)``: ``Cursor.insert_rows``)."""

    class Connection:
        driver_connection = object()

        def __init__(self) -> None:
            self.info: dict[str, object] = {}  # a pooled connection's (PostgreSQL: may COPY?)

    kept = Connection()  # SQLite's kept connection is the driver's own: its search's walk
    lite = strategy_for("sqlite").cursor(object(), SQLITE, kept)  # sets a progress handler on it
    assert lite.many_rows and not lite.returning_batches and lite.load is None
    assert lite.driver is kept
    pg = strategy_for("postgresql").cursor(object(), POSTGRESQL, Connection())
    assert not pg.many_rows and pg.returning_batches and pg.load is not None
    assert pg.driver is Connection.driver_connection
