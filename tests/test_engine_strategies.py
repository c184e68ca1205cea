"""Each engine's bulk loading, derived from the statements as its own dialect compiles them
(issue 26 §5): a statement that stops matching would fall back to row by row without a word,
so these check the derivation itself, with no database."""

from __future__ import annotations

from sqlalchemy.dialects import postgresql, sqlite

from acti_store.repository.engines import strategy_for
from acti_store.repository.engines.postgresql import copy_sql
from acti_store.repository.engines.sqlite import rows_sql
from acti_store.repository.statements import INSERT_AGENT, INSERT_EXECUTION, INSERT_TAG

SQLITE = sqlite.pysqlite.dialect()
POSTGRESQL = postgresql.psycopg.dialect()


def test_sqlite_inserts_many_rows_as_one_statement() -> None:
    compiled = INSERT_AGENT.compiled(SQLITE)
    many = rows_sql(compiled, 3)
    assert many is not None
    assert many.count("VALUES") == 1 and many.count("), (") == 2
    assert "RETURNING" in many  # the ids come back in the same statement
    assert rows_sql(INSERT_TAG.compiled(SQLITE), 2) is not None


def test_sqlite_makes_no_multi_row_sql_of_another_paramstyle() -> None:
    assert rows_sql(INSERT_AGENT.compiled(POSTGRESQL), 3) is None


def test_postgresql_loads_rows_by_copy() -> None:
    for prepared, table in ((INSERT_EXECUTION, "executions"), (INSERT_TAG, "agent_tags")):
        copy = copy_sql(prepared.compiled(POSTGRESQL))
        assert copy is not None and copy.startswith(f"COPY {table} (")
        assert copy.endswith(") FROM STDIN")


def test_postgresql_copies_no_statement_of_another_paramstyle() -> None:
    assert copy_sql(INSERT_EXECUTION.compiled(SQLITE)) is None


def test_each_engine_gives_its_cursor_its_own_bulk_loading() -> None:
    """SQLite: multi-row VALUES, no COPY; PostgreSQL: COPY (its INSERT ... RETURNING of many
    rows goes in one pipeline instead: ``Cursor.insert_rows``)."""

    class Connection:
        driver_connection = object()

    lite = strategy_for("sqlite").cursor(object(), SQLITE, Connection())
    assert lite.rows_sql is rows_sql and lite.load is None and lite.driver is None
    pg = strategy_for("postgresql").cursor(object(), POSTGRESQL, Connection())
    assert pg.rows_sql is None and pg.load is not None
    assert pg.driver is Connection.driver_connection
