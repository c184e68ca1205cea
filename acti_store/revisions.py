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

from .dberrors import is_concurrent_ddl, is_missing_table, unreachable
from .engine import (
    LEGACY_VERSION_TABLE,
    MIGRATION_PROGRESS_TABLE,
    VERSION_TABLE,
    alembic_config,
    migrated,
    migrating,
    store_schema,
)
from .errors import InvalidInputError, SchemaVersionError, StoreUrlError
from .migration_policy import migration_policy
from .migrations.names import is_acti_store_table
from .migrations.progress import MARKER as _MARKER
from .migrations.progress import end_migration
from .schema_head import MigrationProgress
from .schema_head import progress as _progress

#: How many times the store's revision is read when a version table vanished meanwhile.
_VERSION_READS: Final = 3
#: The pause (seconds, times the attempt) before reading past another's DDL (``_current_state``).
_VERSION_READ_PAUSE: Final = 0.05


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
            after = heads_in(conn, VERSION_TABLE)
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
    policy = migration_policy(conn.dialect.name)
    if policy.transactional_ddl:
        return
    destination = _destination(script, target)
    if destination == before:
        return
    to = ",".join(sorted(destination)) if destination is not None else target
    policy.mark(conn, ",".join(sorted(before)), to)


def recover_interrupted_migration(conn: Connection) -> None:
    """MariaDB/MySQL, holding ``migration_lock`` (so the marker found is not a running
    migration's): finish with a migration that was interrupted (killed, or failed) part way,
    whose marker (``mark_migration``) is still there. A no-op elsewhere and without a marker.

    The store at the revision the marker was going to: the migration had ended; the marker is
    removed. Else the schema may be half-made, and MariaDB cannot undo it: a store that holds
    no row in any of acti_store's tables (the migration was creating it, or it was empty) has
    every acti_store table dropped, so the migration that follows makes the store from
    scratch; a store holding rows is refused (``SchemaVersionError``), nothing written."""
    migration_policy(conn.dialect.name).recover(conn)


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
    if not clashing or heads_in(conn, VERSION_TABLE):
        return
    if any(_known(script, rev) for rev in heads_in(conn, LEGACY_VERSION_TABLE)):
        return
    listed = ", ".join(clashing)
    policy = migration_policy(conn.dialect.name)
    raise StoreUrlError(
        f"{policy.place(conn)} already holds tables of acti_store's names that are not "
        f"acti_store's: {listed} (no acti_store revision is recorded in {VERSION_TABLE}). They "
        f"belong to another application, and nothing was changed. {policy.own_place_hint}"
    )


def _relation_names(conn: Connection) -> set[str]:
    """The names of the tables and views where the migrations would create acti_store's: the
    SQLite file, or PostgreSQL's current schema (the store's; none when it does not exist)."""
    return migration_policy(conn.dialect.name).relation_names(conn)


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
    """Queue behind any other migration of this database, until ``conn``'s transaction ends
    (``release_migration_lock`` then releases what outlives it): the engine's lock
    (``MigrationPolicy.lock``: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory lock,
    MariaDB's named lock)."""
    migration_policy(conn.dialect.name).lock(conn)


def release_migration_lock(conn: Connection) -> None:
    """After the migration's transaction: what the engine's lock took beyond it, released
    (MariaDB: its progress table and its named lock; nothing elsewhere)."""
    migration_policy(conn.dialect.name).unlock(conn)


def adopt_legacy_version(conn: Connection, script: ScriptDirectory) -> set[str]:
    """Move our revision from ``alembic_version`` (where acti_store kept it before) to
    ``VERSION_TABLE``, in ``conn``'s transaction (hold ``migration_lock``); return the revisions
    in ``VERSION_TABLE`` afterwards.

    Only revisions of our own scripts move, and only when ``VERSION_TABLE`` holds none: an
    application's own revision stays in ``alembic_version``. The old table is dropped when our
    row was all it held.
    """
    current = heads_in(conn, VERSION_TABLE)
    if current:
        return current
    ours = [rev for rev in heads_in(conn, LEGACY_VERSION_TABLE) if _known(script, rev)]
    if not ours:
        return current
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    for revision in ours:
        context.stamp(script, revision)
    table = sa_table(LEGACY_VERSION_TABLE, column("version_num"))
    conn.execute(table.delete().where(table.c.version_num.in_(ours)))
    if conn.execute(select(func.count()).select_from(table)).scalar_one() == 0:
        conn.execute(text(f"DROP TABLE {LEGACY_VERSION_TABLE}"))
    return heads_in(conn, VERSION_TABLE)


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
                current = heads_in(conn, VERSION_TABLE)
                if current:
                    return current, False, progress
                legacy = {r for r in heads_in(conn, LEGACY_VERSION_TABLE) if _known(script, r)}
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


def heads_in(conn: Connection, version_table: str) -> set[str]:
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
