"""The engine of a store: its URL, the SQLite connection policy, and the schema at Alembic head.

Nothing here knows the JSON interchange or the mirror: ``acti_store.bootstrap`` wires those.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from .dberrors import is_sqlite_busy, unreachable
from .errors import SchemaVersionError

ENV_URL: Final = "ACTI_STORE_URL"
DEFAULT_URL: Final = "sqlite:///outputs/acti_store.db"
#: How long a SQLite writer waits for the lock before giving up (milliseconds).
SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
#: Page cache per SQLite connection, in KiB (SQLite's default is 2,000). Filled only as pages
#: are read: the full-text index makes a store of 10,000 agents about 20 MB, and reads that miss
#: a 2 MB cache go to the operating system for every page.
SQLITE_CACHE_KIB: Final = 16_000
#: Size the WAL file is cut back to when SQLite starts it over after a checkpoint. A long reader
#: (an export holds one snapshot from its first page to its last) stops checkpoints from resetting
#: the WAL past its snapshot, so the WAL grows with every write made meanwhile; without a limit
#: the file would keep that size on disk for good.
SQLITE_WAL_SIZE_LIMIT: Final = 64 * 2**20
#: How SQLite begins a transaction that reads (one snapshot) and one that writes: a writer takes
#: the write lock up front, so concurrent writers queue on the busy timeout instead of failing
#: with "database is locked" when a read lock would have to be upgraded. Both routes that begin
#: a transaction use these: SQLAlchemy connections (``_sqlite_begin``) and the repository's fast
#: path on DBAPI connections.
SQLITE_BEGIN_READ: Final = "BEGIN"
SQLITE_BEGIN_WRITE: Final = "BEGIN IMMEDIATE"
#: The first statement of a PostgreSQL transaction that reads with several statements and must
#: see one snapshot (an export, a history with its totals): READ COMMITTED, the default, gives
#: each statement its own. A read-only REPEATABLE READ transaction never blocks writers and never
#: fails on their account. Single-statement reads do without it (one round trip fewer).
POSTGRES_BEGIN_SNAPSHOT: Final = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
#: Key of the PostgreSQL advisory lock held while migrating, so concurrent openers queue.
_PG_MIGRATION_LOCK: Final = 0x61637469


def resolve_url(url: str | URL | None = None) -> URL:
    """The URL argument, else ``ACTI_STORE_URL``, else the default SQLite file."""
    return make_url(url or os.environ.get(ENV_URL) or DEFAULT_URL)


def migrations_dir() -> Path:
    """The Alembic scripts: shipped in the wheel, or the checkout's top-level ``migrations/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise SchemaVersionError(f"Alembic migrations not found next to {here}")


def alembic_config(url: URL | None = None) -> Config:
    """An Alembic config for our migrations (no alembic.ini needed)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.set_main_option(
            "sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%")
        )
    return cfg


def _sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
    # We issue BEGIN ourselves (see _sqlite_begin): the driver must not.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    _enable_wal(cursor)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute(f"PRAGMA journal_size_limit = {SQLITE_WAL_SIZE_LIMIT}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _enable_wal(cursor: Any) -> None:
    """Switch to WAL (kept in the file once set). Switching needs the database to itself and does
    not wait on the busy timeout: two processes opening a new store at once retry here."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_sqlite_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def _sqlite_begin(conn: Connection) -> None:
    # A connection with the execution option ``acti_write`` writes (the migrations do).
    writes = conn.get_execution_options().get("acti_write", False)
    conn.exec_driver_sql(SQLITE_BEGIN_WRITE if writes else SQLITE_BEGIN_READ)


def make_engine(url: str | URL | None = None, **kwargs: Any) -> Engine:
    """An engine with acti_store's connection policy (SQLite: WAL, FKs, busy timeout)."""
    resolved = resolve_url(url)
    if resolved.get_backend_name() == "sqlite":
        database = resolved.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # Every use of a connection ends in an explicit COMMIT or ROLLBACK (the repository's fast
        # path, SQLAlchemy's own connections), so the pool need not roll back again on check-in.
        kwargs.setdefault("pool_reset_on_return", None)
        engine = create_engine(resolved, **kwargs)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(resolved, **kwargs)


def upgrade_schema(engine: Engine) -> None:
    """Bring the schema to Alembic head, on a connection we hand to Alembic.

    Refuses (``SchemaVersionError``) a database stamped with a revision this code does not know:
    it was written by a newer acti_store. Concurrent callers queue on a lock and all succeed.
    """
    cfg = alembic_config()
    script = ScriptDirectory.from_config(cfg)
    heads = set(script.get_heads())
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
    except Exception as exc:  # the database cannot be reached at all
        raise unreachable(exc) from exc
    _refuse_unknown(script, current)
    if current == heads:
        return
    with engine.execution_options(acti_write=True).begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        _refuse_unknown(script, set(MigrationContext.configure(conn).get_current_heads()))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def _refuse_unknown(script: ScriptDirectory, current: set[str]) -> None:
    for revision in current:
        try:
            known = script.get_revision(revision) is not None
        except Exception:
            known = False
        if not known:
            raise SchemaVersionError(
                f"the database is at schema revision {revision!r}, which this version of "
                "acti_store does not know (it was written by a newer version). Upgrade "
                "acti_store; nothing was written."
            )
