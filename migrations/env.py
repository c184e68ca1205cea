"""Alembic environment of acti_store.

Runs on a connection handed over by ``open_repository`` (``config.attributes["connection"]``,
the cookbook's "Sharing a Connection"), else on an engine built from ``sqlalchemy.url`` set by the
caller, ``ACTI_STORE_URL``, or the default SQLite store. Batch mode is on for SQLite. The revision
lives in ``acti_store_alembic_version`` (``VERSION_TABLE``), never in ``alembic_version``, which an
application's own Alembic may use in the same database; a store whose revision an earlier
acti_store kept there has it moved first, under the migration lock, in the migration's transaction.
Loads logging sections only when the ini has them (a minimal ini has none).

Note for future revisions: a batch rebuild of ``agents`` on SQLite drops the table, and with
foreign keys on that would cascade into ``executions``; rebuild child tables first or avoid it.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from acti_store.engine import (
    VERSION_TABLE,
    adopt_legacy_version,
    make_engine,
    migration_lock,
    resolve_url,
)
from acti_store.schema import Base

config = context.config
if (
    config.config_file_name is not None
    and config.attributes.get("connection") is None
    and config.file_config.has_section("formatters")
):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata

#: Search-index objects created by raw SQL, not ORM metadata, so ``alembic check`` must not
#: report them: revision 0003's FTS5 table and its shadow tables (SQLite) and pg_trgm indexes
#: (PostgreSQL), and revision 0004's ``agents_fts_log`` (SQLite), matched by the "agents_fts"
#: prefix.
SEARCH_INDEX_OBJECTS = ("agents_fts", "ix_agents_trgm_")


def include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    return not (reflected and name is not None and name.startswith(SEARCH_INDEX_OBJECTS))


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        include_object=include_object,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    url = config.get_main_option("sqlalchemy.url") or resolve_url().render_as_string(False)
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    given = config.attributes.get("connection")
    if isinstance(given, Connection):
        _run(given)
        return
    # An engine handed over (pytest-alembic does so), else our own from the URL.
    engine = (
        given
        if isinstance(given, Engine)
        else make_engine(config.get_main_option("sqlalchemy.url") or None)
    )
    try:
        with engine.execution_options(acti_write=True).connect() as conn, conn.begin():
            migration_lock(conn)
            adopt_legacy_version(conn, ScriptDirectory.from_config(config))
            _run(conn)
    finally:
        if engine is not given:
            engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
