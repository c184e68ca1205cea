"""The engine of a store: its URL, the SQLite connection policy, and the schema at Alembic head.

Nothing here knows the JSON interchange or the mirror: ``acti_store.bootstrap`` wires those.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, column, create_engine, event, func, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy import table as sa_table
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from .dberrors import is_sqlite_busy, unreachable
from .errors import (
    InvalidInputError,
    MissingDriverError,
    SchemaVersionError,
    StoreUnavailableError,
    StoreUrlError,
)

ENV_URL: Final = "ACTI_STORE_URL"
DEFAULT_URL: Final = "sqlite:///outputs/acti_store.db"
#: How long one call of the store may wait, in all, for a lock another writer holds (seconds):
#: ``open_repository(lock_timeout=...)``. Every wait for a lock (SQLite's busy timeout,
#: PostgreSQL's ``lock_timeout``) and every retry of the write count against this one deadline.
LOCK_TIMEOUT_DEFAULT: Final = 30.0
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
#: The table where acti_store records its Alembic revision (Alembic's ``version_table``): not
#: ``alembic_version``, which an application's own Alembic uses in the same database.
VERSION_TABLE: Final = "acti_store_alembic_version"
#: Where acti_store kept its revision before; moved to ``VERSION_TABLE`` on the first write open.
LEGACY_VERSION_TABLE: Final = "alembic_version"
#: Key of the PostgreSQL advisory lock held while migrating, so concurrent openers queue.
_PG_MIGRATION_LOCK: Final = 0x61637469
#: The drivers acti_store runs on, by database (the driver part of ``dialect+driver://``).
SUPPORTED_DRIVERS: Final = {"sqlite": "pysqlite", "postgresql": "psycopg"}
#: What to install for a driver that is missing.
DRIVER_EXTRAS: Final = {"psycopg": 'pip install "acti-store[postgres]"'}
SUPPORTED_URLS: Final = (
    "Use sqlite:///relative/path.db, sqlite:////absolute/path.db, or "
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE (PostgreSQL needs "
    'pip install "acti-store[postgres]")'
)


def resolve_url(url: str | URL | None = None) -> URL:
    """The URL argument, else ``ACTI_STORE_URL``, else the default SQLite file.

    Raises ``StoreUrlError`` for text that is not a database URL, or names a database or driver
    acti_store does not run on; the message lists the supported forms.
    """
    given = url or os.environ.get(ENV_URL) or DEFAULT_URL
    try:
        resolved = make_url(given)
        backend, driver = resolved.get_backend_name(), resolved.get_driver_name()
    except sa_exc.ArgumentError:  # not a URL, or a database SQLAlchemy has no dialect for
        raise StoreUrlError(
            f"{_shown_url(given)} is not a database URL acti_store can use. {SUPPORTED_URLS}"
        ) from None
    if backend not in SUPPORTED_DRIVERS:
        raise StoreUrlError(f"acti_store does not support {backend} databases. {SUPPORTED_URLS}")
    if driver != SUPPORTED_DRIVERS[backend]:
        raise StoreUrlError(
            f"acti_store does not support the {driver} driver for {backend}: use "
            f"{backend}+{SUPPORTED_DRIVERS[backend]}://. {SUPPORTED_URLS}"
        )
    return resolved


def _shown_url(given: str | URL) -> str:
    """The URL a user gave, quoted in an error only when it cannot hold a password."""
    text = given.render_as_string(hide_password=True) if isinstance(given, URL) else str(given)
    if "@" in text or "password" in text.lower():
        return "the store URL (not shown: it may hold a password)"
    return f"the store URL {text[:200]!r}"


def migrations_dir() -> Path:
    """The Alembic scripts: shipped in the wheel, or the checkout's top-level ``migrations/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise SchemaVersionError(f"Alembic migrations not found next to {here}")


def alembic_config(url: URL | None = None) -> Config:
    """An Alembic config for our migrations (no alembic.ini needed); the public form is
    ``acti_store.migrations.alembic_config``."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.set_main_option(
            "sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%")
        )
    return cfg


def lock_wait_sql(sqlite: bool, seconds: float) -> str:
    """The statement after which a lock wait gives up after ``seconds`` (at least 1 ms: 0 means
    "never wait" to SQLite, "wait forever" to PostgreSQL). SQLite: the connection's busy timeout.
    PostgreSQL: ``SET LOCAL``, this transaction only (run it first in the transaction)."""
    ms = max(1, round(seconds * 1000))
    return f"PRAGMA busy_timeout = {ms}" if sqlite else f"SET LOCAL lock_timeout = {ms}"


def _sqlite_connect(dbapi_connection: Any, lock_timeout: float) -> None:
    # We issue BEGIN ourselves (see _sqlite_begin): the driver must not.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(lock_wait_sql(True, lock_timeout))
    _enable_wal(cursor, lock_timeout)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute(f"PRAGMA journal_size_limit = {SQLITE_WAL_SIZE_LIMIT}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _postgresql_connect(dbapi_connection: Any, lock_timeout: float, *, read_only: bool) -> None:
    # A write waiting for a row lock gives up after lock_timeout (PostgreSQL waits forever by
    # default): the repository then retries within the same deadline, or reports the lock.
    ms = max(1, round(lock_timeout * 1000))
    with dbapi_connection.cursor() as cursor:
        cursor.execute(f"SET lock_timeout = {ms}")
        if read_only:  # every transaction of the session is read-only: the server refuses writes
            cursor.execute("SET SESSION default_transaction_read_only = on")
    dbapi_connection.commit()


def _enable_wal(cursor: Any, lock_timeout: float) -> None:
    """Switch to WAL (kept in the file once set). Switching needs the database to itself and does
    not wait on the busy timeout: two processes opening a new store at once retry here."""
    deadline = time.monotonic() + lock_timeout
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


def make_engine(
    url: str | URL | None = None,
    *,
    read_only: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    **kwargs: Any,
) -> Engine:
    """An engine with acti_store's connection policy (SQLite: WAL, FKs, busy timeout; both: lock
    waits end after ``lock_timeout`` seconds).

    ``read_only`` opens for reading only (``read_only_url``; no WAL switch, no folder created;
    PostgreSQL sessions default to read-only transactions). Raises ``StoreUrlError`` for a URL
    acti_store cannot use, ``MissingDriverError`` (saying what to install) when its driver is
    missing, and ``StoreUnavailableError`` when the SQLite file's folder cannot be created.
    """
    resolved = resolve_url(url)

    def connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        if resolved.get_backend_name() == "sqlite":
            policy = _sqlite_reader if read_only else _sqlite_connect
            policy(dbapi_connection, lock_timeout)
        elif resolved.get_backend_name() == "postgresql":
            _postgresql_connect(dbapi_connection, lock_timeout, read_only=read_only)

    if resolved.get_backend_name() == "sqlite":
        if read_only:
            resolved = read_only_url(resolved)
        else:
            _make_folder(resolved.database)
        # Every use of a connection ends in an explicit COMMIT or ROLLBACK (the repository's fast
        # path, SQLAlchemy's own connections), so the pool need not roll back again on check-in.
        kwargs.setdefault("pool_reset_on_return", None)
        engine = _create_engine(resolved, kwargs)
        event.listen(engine, "connect", connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    engine = _create_engine(resolved, kwargs)
    event.listen(engine, "connect", connect)
    return engine


def _create_engine(url: URL, kwargs: dict[str, Any]) -> Engine:
    try:
        return create_engine(url, **kwargs)
    except ImportError as exc:  # the dialect imports its driver here
        driver = url.get_driver_name()
        install = DRIVER_EXTRAS.get(driver, f"install the {driver} package")
        raise MissingDriverError(
            f"the {url.get_backend_name()} driver {driver!r} is not installed ({exc}). "
            f"Install it with: {install}"
        ) from None


def _make_folder(database: str | None) -> None:
    if database and database != ":memory:" and not database.startswith("file:"):
        folder = Path(database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailableError(
                f"cannot open the store: cannot create its folder {folder}: {exc.strerror or exc}",
                transient=False,
            ) from None


def read_only_url(url: URL) -> URL:
    """The SQLite URL that opens ``url``'s file for reading only (``mode=ro``).

    When the file's folder is not writable either, SQLite could not create the side files WAL
    reads need, so the file is opened ``immutable=1``: SQLite then takes no locks and assumes
    nobody changes the file while it is open. Not when a write-ahead log is there (a writer was
    killed before merging it), which immutable reads would not see: it is read through its
    ``-shm`` index with ``mode=ro``, and without that index the store is refused.
    """
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        raise StoreUrlError(
            "read-only needs a SQLite file given by its path (sqlite:///path/to/store.db)"
        )
    path = Path(database).expanduser().resolve()
    if not path.is_file():
        raise StoreUnavailableError(
            f"cannot open the store read-only: {path} is not a file", transient=False
        )
    query = "mode=ro"
    if not os.access(path.parent, os.W_OK):
        wal = path.with_name(path.name + "-wal")
        if not wal.is_file() or wal.stat().st_size == 0:
            query += "&immutable=1"
        elif not path.with_name(path.name + "-shm").is_file():
            raise StoreUnavailableError(
                f"cannot open the store read-only: its folder {path.parent} is read-only and "
                f"holds an unmerged write-ahead log ({wal.name}) without its index file "
                f"({path.name}-shm): open the store once with write access to merge the log",
                transient=False,
            )
    return url.set(database=f"file:{quote(str(path))}?{query}").update_query_dict({"uri": "true"})


def sqlite_path(database: str) -> Path:
    """The file a SQLite URL's database names: a path, or a ``file:`` URI (``read_only_url``)."""
    if database.startswith("file:"):
        return Path(unquote(database.removeprefix("file:").partition("?")[0]))
    return Path(database).expanduser()


def _sqlite_reader(dbapi_connection: Any, lock_timeout: float) -> None:
    """The connection policy of a read-only store: no WAL switch, and no writes at all."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(lock_wait_sql(True, lock_timeout))
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()


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
    current, legacy = _current_heads(engine, script)
    _refuse_unknown(script, current)
    if target == "head" and current == heads and not legacy:
        return current, current
    with engine.execution_options(acti_write=True).begin() as conn:
        migration_lock(conn)
        before = adopt_legacy_version(conn, script)
        _refuse_unknown(script, before)
        if target == "head" or not _is_ancestor(script, target, before):
            if target != "head":
                _known_target(script, target)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, target)
        else:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, target)
        after = _heads_in(conn, VERSION_TABLE)
    return before, after


def migration_lock(conn: Connection) -> None:
    """Queue behind any other migration of this database, until ``conn``'s transaction ends.

    PostgreSQL: an advisory lock. SQLite: the transaction began with ``BEGIN IMMEDIATE`` (a
    connection with the execution option ``acti_write``), which is the lock."""
    if conn.dialect.name == "postgresql":
        # Openers queue behind a migration however long it takes (a table rewrite may take
        # longer than lock_timeout): it is not a write waiting on another writer.
        conn.execute(text("SET LOCAL lock_timeout = 0"))
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})


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
    current, legacy = _current_heads(engine, script)
    _refuse_unknown(script, current)
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
    current, legacy = _current_heads(engine, script)
    return current, set(script.get_heads()), legacy


def _current_heads(engine: Engine, script: ScriptDirectory) -> tuple[set[str], bool]:
    """The store's revisions, and whether they are still in ``alembic_version`` (not moved)."""
    try:
        with engine.connect() as conn:
            current = _heads_in(conn, VERSION_TABLE)
            if current:
                return current, False
            legacy = {r for r in _heads_in(conn, LEGACY_VERSION_TABLE) if _known(script, r)}
            return legacy, bool(legacy)
    except Exception as exc:  # the database cannot be reached at all
        raise unreachable(exc) from exc


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


def _refuse_unknown(script: ScriptDirectory, current: set[str]) -> None:
    for revision in current:
        if not _known(script, revision):
            raise SchemaVersionError(
                f"the database is at schema revision {revision!r}, which this version of "
                "acti_store does not know (it was written by a newer version). Upgrade "
                "acti_store; nothing was written."
            )
