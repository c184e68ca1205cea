"""The store's schema revision: brought to Alembic head (or to a target), checked, and moved out
of ``alembic_version`` for a store an earlier acti_store made.

Every function takes an engine or connection made by ``acti_store.engine.make_engine``: its
PostgreSQL schema (``store_schema``) is the search path of every connection, so the version table
and every object the migrations create are there; it is created, under the migration lock, by
the first migration that needs it.
"""

from __future__ import annotations

import time
from typing import Final

from alembic import command
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, column, func, select, text
from sqlalchemy import table as sa_table
from sqlalchemy.exc import DBAPIError

from .column_types import MYSQL_DIALECTS
from .dberrors import is_concurrent_ddl, is_missing_table, unreachable
from .engine import (
    LEGACY_VERSION_TABLE,
    MIGRATION_PROGRESS_TABLE,
    VERSION_TABLE,
    alembic_config,
    migrated,
    migrating,
    store_location,
    store_schema,
)
from .errors import InvalidInputError, SchemaVersionError, StoreUnavailableError, StoreUrlError
from .migrations.names import ORM_TABLES, is_acti_store_table
from .migrations.progress import MARKER as _MARKER
from .migrations.progress import end_migration
from .schema_head import MigrationProgress
from .schema_head import has_progress_table as _has_progress_table
from .schema_head import progress as _progress

#: Key of the PostgreSQL advisory lock held while migrating, so concurrent openers queue.
_PG_MIGRATION_LOCK: Final = 0x61637469
#: The name of MariaDB's named lock held while migrating (``GET_LOCK``): one per database.
_MYSQL_LOCK_NAME: Final = "CONCAT('acti_store_migration.', DATABASE())"
#: How long a MariaDB migration waits for another's lock (seconds, about 34 years): ``GET_LOCK``
#: has no "forever" there (a negative timeout answers NULL at once, without taking the lock).
_MYSQL_LOCK_WAIT: Final = 2**30
#: How many times the store's revision is read when a version table vanished meanwhile.
_VERSION_READS: Final = 3
#: The pause (seconds, times the attempt) before reading past another's DDL (``_current_state``).
_VERSION_READ_PAUSE: Final = 0.05
#: MariaDB's progress table (``MIGRATION_PROGRESS_TABLE``): InnoDB, so that deleting its row
#: commits with the migration's last revision stamp.
_PROGRESS_DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS {MIGRATION_PROGRESS_TABLE} (started_at DATETIME(6) NOT NULL, "
    "from_revision VARCHAR(255) NOT NULL, to_revision VARCHAR(255) NOT NULL) ENGINE=InnoDB"
)


def upgrade_schema(engine: Engine, target: str = "head") -> tuple[set[str], set[str]]:
    """Bring the schema to Alembic head (or to revision ``target``, up or down), on a connection
    we hand to Alembic; return the revisions before and after.

    Refuses (``SchemaVersionError``) a database stamped with a revision this code does not know:
    it was written by a newer acti_store. A store whose revision an earlier acti_store kept in
    ``alembic_version`` has it moved to ``VERSION_TABLE`` first, in the same transaction.
    Concurrent callers queue on a lock and all succeed.
    """
    cfg = alembic_config()
    script = ScriptDirectory.from_config(cfg)
    heads = set(script.get_heads())
    current, legacy, progress = _current_state(engine, script)
    refuse_unknown_revisions(current, script)
    if target == "head" and current == heads and not legacy and progress is None:
        return current, current
    if target != "head":
        _known_target(script, target)  # refused before the migration marks its start
    with engine.execution_options(acti_write=True).connect() as conn, migrating(conn):
        with conn.begin():
            before = begin_migration(conn, script, target)
            cfg.attributes["connection"] = conn
            if target == "head" or not _is_ancestor(script, target, before):
                command.upgrade(cfg, target)
            else:
                command.downgrade(cfg, target)
            after = _heads_in(conn, VERSION_TABLE)
            end_migration(conn)
        release_migration_lock(conn)
        migrated(conn)
    return before, after


def begin_migration(
    conn: Connection, script: ScriptDirectory, target: str | None = None
) -> set[str]:
    """Everything before Alembic runs, in ``conn``'s transaction: ``migration_lock``,
    ``recover_interrupted_migration`` (MariaDB), ``refuse_foreign_tables``, the store's schema
    created if it is missing, ``adopt_legacy_version``, a store at an unknown revision refused,
    and (MariaDB, when ``target`` is where revisions will take the store) ``mark_migration``;
    return the store's revisions. ``upgrade_schema`` and ``alembic upgrade``
    (``migrations/env.py``) both do this; both run ``end_migration`` after Alembic, in the
    transaction, then ``release_migration_lock`` and ``migrated`` after the commit."""
    conn.info.pop(_MARKER, None)  # a pooled connection's, from a migration that failed
    migration_lock(conn)
    recover_interrupted_migration(conn)
    refuse_foreign_tables(conn, script)
    create_store_schema(conn)
    before = adopt_legacy_version(conn, script)
    refuse_unknown_revisions(before, script)
    if target is not None:
        mark_migration(conn, script, before, target)
    return before


def mark_migration(
    conn: Connection, script: ScriptDirectory, before: set[str], target: str
) -> None:
    """MariaDB/MySQL: record (``MIGRATION_PROGRESS_TABLE``) that a migration from ``before`` to
    ``target`` is under way, committed before any DDL of it runs; a no-op elsewhere, and when
    the store is at ``target`` already.

    That engine's DDL commits as it goes and cannot be undone: a migration killed (or failed)
    part way leaves a half-made schema, and this row, for ``recover_interrupted_migration``.
    ``end_migration`` deletes the row in the migration's last transaction."""
    if conn.dialect.name not in MYSQL_DIALECTS:
        return
    destination = _destination(script, target)
    if destination == before:
        return
    to = ",".join(sorted(destination)) if destination is not None else target
    conn.execute(text(_PROGRESS_DDL))
    conn.execute(text(f"DELETE FROM {MIGRATION_PROGRESS_TABLE}"))
    conn.execute(
        text(
            f"INSERT INTO {MIGRATION_PROGRESS_TABLE} (started_at, from_revision, to_revision) "
            "VALUES (UTC_TIMESTAMP(6), :before, :to)"
        ),
        {"before": ",".join(sorted(before)), "to": to},
    )
    # Committed now, on the server: the first DDL would commit it anyway (DDL commits as it goes
    # there), but a revision may begin with DML. The migration carries on in the transaction
    # the server begins next, which ``conn``'s transaction commits or rolls back as before.
    conn.exec_driver_sql("COMMIT")
    conn.info[_MARKER] = "running"


def recover_interrupted_migration(conn: Connection) -> None:
    """MariaDB/MySQL, holding ``migration_lock`` (so the marker found is not a running
    migration's): finish with a migration that was interrupted (killed, or failed) part way,
    whose marker (``mark_migration``) is still there. A no-op elsewhere and without a marker.

    The store at the revision the marker was going to: the migration had ended; the marker is
    removed. Else the schema may be half-made, and MariaDB cannot undo it: a store that holds
    no row in any of acti_store's tables (the migration was creating it, or it was empty) has
    every acti_store table dropped, so the migration that follows makes the store from
    scratch; a store holding rows is refused (``SchemaVersionError``), nothing written."""
    if conn.dialect.name not in MYSQL_DIALECTS:
        return
    progress = _progress(conn)
    if progress is not None and _heads_in(conn, VERSION_TABLE) != set(
        filter(None, progress.to_revision.split(","))
    ):
        tables = sorted(
            name
            for name in _relation_names(conn)
            if is_acti_store_table(name) and name != MIGRATION_PROGRESS_TABLE
        )
        holding = [name for name in tables if name in ORM_TABLES and _has_rows(conn, name)]
        if holding:
            raise SchemaVersionError(
                f"{progress.describe()} was interrupted part way (killed, or it failed); "
                "MariaDB cannot undo schema changes, so the store's schema is half-made, and "
                f"it holds data (in {', '.join(holding)}). Nothing was changed. Restore the "
                "database from its backup, then run acti-store migrate"
            )
        if tables:
            conn.execute(text("SET SESSION foreign_key_checks = 0"))
            try:
                conn.execute(text(f"DROP TABLE IF EXISTS {', '.join(tables)}"))
            finally:
                conn.execute(text("SET SESSION foreign_key_checks = 1"))
    if progress is not None or _has_progress_table(conn):
        conn.execute(text(f"DROP TABLE IF EXISTS {MIGRATION_PROGRESS_TABLE}"))


def _has_rows(conn: Connection, table: str) -> bool:
    return conn.execute(text(f"SELECT 1 FROM {table} LIMIT 1")).first() is not None


def _destination(script: ScriptDirectory, target: str) -> set[str] | None:
    """The revisions a migration to ``target`` (``head``, a revision, ``base``, several joined
    by commas) ends at; None for a target named relative to the store's (``+1``, ``-1``)."""
    ends: set[str] = set()
    for one in target.split(","):
        try:
            number = script.as_revision_number(one)
            numbers = () if number is None else (number,) if isinstance(number, str) else number
            revisions = [script.get_revision(n) for n in numbers]
        except Exception:
            return None
        ends.update(r.revision for r in revisions if r is not None)
    return ends


def refuse_foreign_tables(conn: Connection, script: ScriptDirectory) -> None:
    """Refuse (``StoreUrlError``), before any DDL, a SQLite file or PostgreSQL schema where
    tables (or views) of acti_store's names are not acti_store's: another application's own
    ``agents``, say. They are acti_store's when its revision is recorded (``VERSION_TABLE``, or
    ``alembic_version`` as earlier versions kept it): a store at head or part way up."""
    found = _relation_names(conn)
    clashing = sorted(
        n
        for n in found
        if is_acti_store_table(n) and n not in (VERSION_TABLE, MIGRATION_PROGRESS_TABLE)
    )
    if not clashing or _heads_in(conn, VERSION_TABLE):
        return
    if any(_known(script, rev) for rev in _heads_in(conn, LEGACY_VERSION_TABLE)):
        return
    listed = ", ".join(clashing)
    if conn.dialect.name == "sqlite":
        opening = f"the database file {store_location(conn.engine.url)}"
    elif conn.dialect.name in MYSQL_DIALECTS:
        opening = f"the database {conn.engine.url.database}"
    else:
        opening = f"the schema {_current_schema(conn)} of the PostgreSQL database"
    what = (
        f"{opening} already holds tables of acti_store's names that are not acti_store's: "
        f"{listed} (no acti_store revision is recorded in {VERSION_TABLE}). They belong to "
        "another application, and nothing was changed. "
    )
    if conn.dialect.name == "sqlite":
        raise StoreUrlError(
            what + "Give acti_store a database file of its own (e.g. sqlite:///acti_store.db)"
        )
    raise StoreUrlError(
        what + 'Give acti_store a schema of its own, e.g. open_repository(url, schema="acti"), '
        "acti-store --schema acti ..., alembic -x schema=acti or ACTI_STORE_SCHEMA=acti"
    )


def _relation_names(conn: Connection) -> set[str]:
    """The names of the tables and views where the migrations would create acti_store's: the
    SQLite file, or PostgreSQL's current schema (the store's; none when it does not exist)."""
    if conn.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
    elif conn.dialect.name in MYSQL_DIALECTS:
        query = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
    else:
        query = (
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        )
    names: list[str] = list(conn.execute(text(query)).scalars())
    return set(names)


def _current_schema(conn: Connection) -> str:
    return str(conn.execute(text("SELECT current_schema()")).scalar_one())


def create_store_schema(conn: Connection) -> None:
    """Create the store's PostgreSQL schema (``store_schema``) if it does not exist yet.

    Looked up first: ``CREATE SCHEMA IF NOT EXISTS`` needs the right to create schemas in the
    database even when the schema is there, and a role given only its own schema lacks it."""
    schema = store_schema(conn)
    if schema is None:
        return
    found = conn.execute(
        text("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = :schema"), {"schema": schema}
    ).first()
    if found is None:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))


def migration_lock(conn: Connection) -> None:
    """Queue behind any other migration of this database, until ``conn``'s transaction ends.

    PostgreSQL: an advisory lock. SQLite: the transaction began with ``BEGIN IMMEDIATE`` (a
    connection with the execution option ``acti_write``), which is the lock."""
    if conn.dialect.name == "postgresql":
        # Openers queue behind a migration however long it takes (a table rewrite may take
        # longer than lock_timeout): it is not a write waiting on another writer.
        conn.execute(text("SET LOCAL lock_timeout = 0"))
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
    elif conn.dialect.name in MYSQL_DIALECTS:
        # A named lock is the session's, not the transaction's (and MariaDB's DDL commits as
        # it goes): released after the migration (``release_migration_lock``).
        taken = conn.execute(
            text(f"SELECT GET_LOCK({_MYSQL_LOCK_NAME}, {_MYSQL_LOCK_WAIT})")
        ).scalar()
        if taken != 1:
            raise StoreUnavailableError(
                "cannot open the store: the server did not give its migration lock "
                f"(GET_LOCK answered {taken})",
                transient=False,
            )


def release_migration_lock(conn: Connection) -> None:
    """After the migration's transaction: on MariaDB, drop the progress table ``end_migration``
    emptied and release the named lock (a no-op elsewhere, where the lock ended with the
    transaction)."""
    if conn.dialect.name in MYSQL_DIALECTS:
        if conn.info.pop(_MARKER, None) == "ended":
            conn.execute(text(f"DROP TABLE IF EXISTS {MIGRATION_PROGRESS_TABLE}"))
        conn.execute(text(f"SELECT RELEASE_LOCK({_MYSQL_LOCK_NAME})"))
        conn.commit()


def adopt_legacy_version(conn: Connection, script: ScriptDirectory) -> set[str]:
    """Move our revision from ``alembic_version`` (where acti_store kept it before) to
    ``VERSION_TABLE``, in ``conn``'s transaction (hold ``migration_lock``); return the revisions
    in ``VERSION_TABLE`` afterwards.

    Only revisions of our own scripts move, and only when ``VERSION_TABLE`` holds none: an
    application's own revision stays in ``alembic_version``. The old table is dropped when our
    row was all it held.
    """
    current = _heads_in(conn, VERSION_TABLE)
    if current:
        return current
    ours = [rev for rev in _heads_in(conn, LEGACY_VERSION_TABLE) if _known(script, rev)]
    if not ours:
        return current
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    for revision in ours:
        context.stamp(script, revision)
    table = sa_table(LEGACY_VERSION_TABLE, column("version_num"))
    conn.execute(table.delete().where(table.c.version_num.in_(ours)))
    if conn.execute(select(func.count()).select_from(table)).scalar_one() == 0:
        conn.execute(text(f"DROP TABLE {LEGACY_VERSION_TABLE}"))
    return _heads_in(conn, VERSION_TABLE)


def check_schema(engine: Engine) -> None:
    """Refuse (``SchemaVersionError``) a store whose schema is not at Alembic head, writing
    nothing: what a read-only open does instead of ``upgrade_schema``."""
    script = ScriptDirectory.from_config(alembic_config())
    heads = set(script.get_heads())
    current, legacy, progress = _current_state(engine, script)
    refuse_unknown_revisions(current, script)
    if progress is not None:
        raise SchemaVersionError(
            f"{progress.describe()} has not finished: it is running now, or it was interrupted "
            "part way (MariaDB cannot undo schema changes, so the schema may be half-made), and "
            "a read-only open does not finish it: run acti-store migrate (it waits for a "
            "running migration) first"
        )
    if current != heads:
        at = ", ".join(sorted(current)) or "none (no acti_store schema)"
        raise SchemaVersionError(
            f"the store's schema is at revision {at}, not {', '.join(sorted(heads))}, and a "
            "read-only open does not upgrade it: open it once with write access (acti-store "
            "migrate) first"
        )
    if legacy:
        raise SchemaVersionError(
            f"the store records its schema revision in {LEGACY_VERSION_TABLE}, as earlier "
            f"versions of acti_store did, and a read-only open does not move it to "
            f"{VERSION_TABLE}: open it once with write access (acti-store migrate) first"
        )


def current_revisions(engine: Engine) -> tuple[set[str], set[str], bool]:
    """The store's revisions, the heads of our scripts, and whether the store's revision is
    still in ``alembic_version`` (``acti-store migrate --current``)."""
    script = ScriptDirectory.from_config(alembic_config())
    current, legacy, _ = _current_state(engine, script)
    return current, set(script.get_heads()), legacy


def _current_state(
    engine: Engine, script: ScriptDirectory
) -> tuple[set[str], bool, MigrationProgress | None]:
    """The store's revisions, whether they are still in ``alembic_version`` (not moved), and
    the marker of a MariaDB migration running or interrupted (read without the lock: only to
    refuse a read-only open, or to go on to ``upgrade_schema``'s migration, which looks again
    holding the lock).

    Read without the migration lock: a version table can be dropped between Alembic's look for
    it and its read (another opener moving our revision out of ``alembic_version``). That
    opener has committed once the read fails, so the read is made again. On MariaDB the look
    itself can meet that drop under way (``is_concurrent_ddl``): read again after a pause."""
    for attempt in range(_VERSION_READS):
        try:
            with engine.connect() as conn:
                progress = _progress(conn)
                current = _heads_in(conn, VERSION_TABLE)
                if current:
                    return current, False, progress
                legacy = {r for r in _heads_in(conn, LEGACY_VERSION_TABLE) if _known(script, r)}
                return legacy, bool(legacy), progress
        except DBAPIError as exc:
            changing = is_concurrent_ddl(exc)
            if not (changing or is_missing_table(exc)) or attempt == _VERSION_READS - 1:
                raise unreachable(exc) from exc
            if changing:
                time.sleep(_VERSION_READ_PAUSE * (attempt + 1))
        except Exception as exc:  # the database cannot be reached at all
            raise unreachable(exc) from exc
    raise AssertionError("unreachable: the last attempt returns or raises")


def _heads_in(conn: Connection, version_table: str) -> set[str]:
    context = MigrationContext.configure(conn, opts={"version_table": version_table})
    return set(context.get_current_heads())


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:
        return False


def _known_target(script: ScriptDirectory, target: str) -> None:
    if target != "base" and not _known(script, target):
        known = ", ".join(r.revision for r in script.walk_revisions())
        raise InvalidInputError(
            "migration target", [("revision", f"{target!r} is not one of {known}")]
        )


def _is_ancestor(script: ScriptDirectory, target: str, current: set[str]) -> bool:
    """Whether going to ``target`` from ``current`` is a downgrade."""
    _known_target(script, target)
    if target == "base":
        return bool(current)
    below: set[str] = set()
    for head in current:
        below.update(
            r.revision for r in script.walk_revisions(base="base", head=head) if r.revision != head
        )
    return target in below


def refuse_unknown_revisions(current: set[str], script: ScriptDirectory | None = None) -> None:
    """``SchemaVersionError`` for a revision in ``current`` a newer acti_store wrote."""
    script = script or ScriptDirectory.from_config(alembic_config())
    for revision in current:
        if not _known(script, revision):
            raise SchemaVersionError(
                f"the database is at schema revision {revision!r}, which this version of "
                "acti_store does not know (it was written by a newer version). Upgrade "
                "acti_store; nothing was written."
            )
