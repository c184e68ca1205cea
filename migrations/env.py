"""Alembic environment of acti_store.

Runs on a connection handed over by ``open_repository`` (``config.attributes["connection"]``,
the cookbook's "Sharing a Connection"), else on an engine built from ``sqlalchemy.url`` set by the
caller, ``ACTI_STORE_URL``, or the default SQLite store. Batch mode is on for SQLite. The revision
lives in ``acti_store_alembic_version`` (``VERSION_TABLE``), never in ``alembic_version``, which an
application's own Alembic may use in the same database; a store whose revision an earlier
acti_store kept there has it moved first, under the migration lock, in the migration's transaction.
Before anything is written, a SQLite file or PostgreSQL schema holding another application's tables
of acti_store's names is refused (``acti_store.revisions.refuse_foreign_tables``); a SQLite file is
switched to WAL once the migration has committed (``acti_store.engine.migrated``).
On MariaDB, whose DDL commits as it goes, a marker says a migration is under way from before its
first DDL until its last commit, and a migration finding one left behind by an interrupted one
finishes it or refuses (``acti_store.revisions.mark_migration``, ``recover_interrupted_migration``).
Loads logging sections only when the ini has them (a minimal ini has none).

PostgreSQL schema of the store (``open_repository(schema=...)``): the one the handed connection or
engine carries, else ``alembic -x schema=NAME``, else the ini's ``acti_store_schema`` option (set
by ``acti_store.migrations.alembic_config(url, schema)``), else ``ACTI_STORE_SCHEMA``; ``""`` is the
default schema. It is the search path of the migration's connection, so every object and the
version table go there; it is created if missing. ``alembic check`` and autogenerate look only at
acti_store's own tables (``acti_store.migrations.names.owned_name``): an application's tables in
the same database or schema are not drift, nor are the ORM's indexes a revision replaced on SQLite
(``owned_object``).

Note for future revisions: a batch rebuild of ``agents`` on SQLite drops the table, and with
foreign keys on that would cascade into ``executions``; rebuild child tables first or avoid it.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

from acti_store.engine import (
    SCHEMA_INI_OPTION,
    VERSION_TABLE,
    make_engine,
    migrated,
    migrating,
    resolve_schema,
    resolve_url,
)
from acti_store.migrations.names import owned_name, owned_object
from acti_store.revisions import begin_migration, end_migration, release_migration_lock
from acti_store.schema import Base

config = context.config
if (
    config.config_file_name is not None
    and config.attributes.get("connection") is None
    and config.file_config.has_section("formatters")
):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _schema_given() -> str | None:
    """The schema named by ``-x schema=NAME``, else by the ini; None: ``ACTI_STORE_SCHEMA``."""
    given = context.get_x_argument(as_dictionary=True).get("schema")
    return given if given is not None else config.get_main_option(SCHEMA_INI_OPTION)


def _destination() -> str | None:
    """Where ``alembic upgrade``/``downgrade``/``stamp`` takes the store (revisions joined by
    commas, ``base``); None for a command that runs no revision (``check``, ``current``)."""
    try:
        number = context.get_revision_argument()
    except KeyError:
        return None
    if number is None:
        return "base"
    return number if isinstance(number, str) else ",".join(number)


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        include_name=owned_name,
        include_object=owned_object,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    url = resolve_url(config.get_main_option("sqlalchemy.url") or None)
    schema = resolve_schema(_schema_given(), url)
    context.configure(
        url=url.render_as_string(hide_password=False),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        version_table=VERSION_TABLE,
    )
    with context.begin_transaction():
        if schema is not None:  # what make_engine's sessions do, for the DBA's session
            context.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            context.execute(f'SET search_path TO "{schema}"')
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
        else make_engine(config.get_main_option("sqlalchemy.url") or None, schema=_schema_given())
    )
    try:
        with engine.execution_options(acti_write=True).connect() as conn, migrating(conn):
            with conn.begin():
                begin_migration(conn, ScriptDirectory.from_config(config), _destination())
                _run(conn)
                end_migration(conn)
            release_migration_lock(conn)
            migrated(conn)
    finally:
        if engine is not given:
            engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
