"""The engine of a store: its URL and PostgreSQL schema, and each engine's connection policy.

Nothing here knows the JSON interchange or the mirror: ``acti_store.bootstrap`` wires those.
Bringing the schema to Alembic head is ``acti_store.revisions``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote

from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry

from . import mariadb, postgresql
from .column_types import MYSQL_DIALECTS
from .dberrors import is_sqlite_busy
from .errors import (
    MissingDriverError,
    SchemaVersionError,
    StoreUnavailableError,
    StoreUrlError,
)
from .models import INTEGER_MAX
from .postgresql import wait_ms as wait_ms  # also SQLite's busy timeout

if TYPE_CHECKING:  # imported when first made: it needs greenlet, which only [postgres] installs
    from sqlalchemy.ext.asyncio import AsyncEngine

ENV_URL: Final = "ACTI_STORE_URL"
#: The PostgreSQL schema of acti_store's objects when ``open_repository(schema=...)`` is not given.
ENV_SCHEMA: Final = "ACTI_STORE_SCHEMA"
DEFAULT_URL: Final = "sqlite:///outputs/acti_store.db"
#: How long one call of the store may wait, in all, for a lock another writer holds (seconds):
#: ``open_repository(lock_timeout=...)``. Every wait for a lock (SQLite's busy timeout,
#: PostgreSQL's ``lock_timeout``) and every retry of the write count against this one deadline.
LOCK_TIMEOUT_DEFAULT: Final = 30.0
#: The longest ``lock_timeout`` (seconds), about 24.8 days: both engines take a lock wait in
#: milliseconds as a 32-bit integer (PostgreSQL's ``lock_timeout``, SQLite's busy timeout).
LOCK_TIMEOUT_MAX: Final = INTEGER_MAX / 1000
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
#: The table where acti_store records its Alembic revision (Alembic's ``version_table``): not
#: ``alembic_version``, which an application's own Alembic uses in the same database.
VERSION_TABLE: Final = "acti_store_alembic_version"
#: Where acti_store kept its revision before; moved to ``VERSION_TABLE`` on the first write open.
LEGACY_VERSION_TABLE: Final = "alembic_version"
#: MariaDB/MySQL: the table whose row says a migration is under way (``acti_store.revisions``):
#: written before the first DDL and deleted when the migration commits, as that engine's DDL
#: commits as it goes and cannot be rolled back. A row left behind is an interrupted migration.
MIGRATION_PROGRESS_TABLE: Final = "acti_store_migration_progress"
#: The drivers acti_store runs on, by database (the driver part of ``dialect+driver://``); the
#: first is the one a refused driver's message names.
SUPPORTED_DRIVERS: Final = {
    "sqlite": ("pysqlite",),
    "postgresql": ("psycopg",),
    "mysql": ("pymysql", "mysqldb"),
    "mariadb": ("pymysql", "mysqldb"),
}
#: What to install for a driver that is missing.
DRIVER_EXTRAS: Final = {
    "psycopg": 'pip install "acti-store[postgres]"',
    "pymysql": 'pip install "acti-store[mysql]"',
    "mysqldb": "pip install mysqlclient (it builds against MariaDB's client library: "
    "e.g. apt install libmariadb-dev pkg-config)",
}
#: A schema name acti_store takes: an identifier PostgreSQL keeps as written without quotes.
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: The rule ``_SCHEMA_NAME`` (and the names PostgreSQL reserves) in words.
SCHEMA_NAME_RULE: Final = (
    "lower-case letters, digits and underscores, starting with a letter or an underscore, at "
    "most 63 characters, not starting with pg_ (PostgreSQL's own), e.g. acti"
)
#: The execution option that carries a store's schema (None: the connection's default schema)
#: on its engine and every connection of it, so the migrations know where they run.
SCHEMA_OPTION: Final = "acti_schema"
SUPPORTED_URLS: Final = (
    "Use sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE (PostgreSQL needs "
    'pip install "acti-store[postgres]") or mariadb+pymysql://USER:PASSWORD@HOST:PORT/DATABASE '
    '(also mysql+pymysql://; MariaDB needs pip install "acti-store[mysql]")'
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
    if driver not in SUPPORTED_DRIVERS[backend]:
        raise StoreUrlError(
            f"acti_store does not support the {driver} driver for {backend}: use "
            f"{backend}+{SUPPORTED_DRIVERS[backend][0]}://. {SUPPORTED_URLS}"
        )
    return resolved


def resolve_schema(schema: str | None, url: URL) -> str | None:
    """The PostgreSQL schema that holds the store: ``schema``, else ``ACTI_STORE_SCHEMA``; None
    (also for ``""``) is the connection's default schema, where stores have always been.

    Raises ``StoreUrlError`` for a name that breaks ``SCHEMA_NAME_RULE``, and for any schema on
    SQLite, which has none: a store there shares nothing when it has a database file of its own.
    """
    given = os.environ.get(ENV_SCHEMA, "") if schema is None else schema
    if not given:
        return None
    named = f"schema {given[:100]!r}" if schema is not None else f"{ENV_SCHEMA}={given[:100]!r}"
    if url.get_backend_name() == "sqlite":
        raise StoreUrlError(
            f"{named}: a schema of its own is for PostgreSQL. On SQLite, give acti_store a "
            "database file of its own (e.g. sqlite:///acti_store.db) instead of the "
            "application's" + ("" if schema is not None else f", and unset {ENV_SCHEMA}")
        )
    if (
        not _SCHEMA_NAME.fullmatch(given)
        or given.startswith("pg_")
        or given == "information_schema"
    ):
        raise StoreUrlError(f"{named} is not a schema name acti_store can use: {SCHEMA_NAME_RULE}")
    return given


def store_schema(bind: Connection | Engine) -> str | None:
    """The schema of the store ``bind`` (made by ``make_engine``) works on; None: the default."""
    schema = bind.get_execution_options().get(SCHEMA_OPTION)
    return str(schema) if schema else None


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


#: The ini option (``[alembic]`` section) naming the schema of the store Alembic migrates; what
#: ``alembic -x schema=NAME`` gives on the command line. Read by ``migrations/env.py``.
SCHEMA_INI_OPTION: Final = "acti_store_schema"


def alembic_config(url: URL | None = None, schema: str | None = None) -> Config:
    """An Alembic config for our migrations (no alembic.ini needed); the public form is
    ``acti_store.migrations.alembic_config``. ``schema`` (PostgreSQL) as ``make_engine`` takes
    it: None leaves it to ``ACTI_STORE_SCHEMA``, ``""`` is the default schema."""
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.set_main_option(
            "sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%")
        )
    if schema is not None:
        if url is not None:
            resolve_schema(schema, url)  # refused now rather than when Alembic runs
        cfg.set_main_option(SCHEMA_INI_OPTION, schema)
    return cfg


def _sqlite_connect(dbapi_connection: Any, lock_timeout: float) -> None:
    # We issue BEGIN ourselves (see _sqlite_begin): the driver must not.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {wait_ms(lock_timeout)}")
    if _empty_or_a_store(cursor):
        _enable_wal(cursor, lock_timeout)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute(f"PRAGMA journal_size_limit = {SQLITE_WAL_SIZE_LIMIT}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _empty_or_a_store(cursor: Any) -> bool:
    """Whether the file is new or empty, or holds acti_store's version table: a file that is
    acti_store's to switch to WAL. Another application's file is switched only once a migration
    has made the store in it (``switch_to_wal``), after checking that none of its tables bears
    a name of acti_store's (``acti_store.revisions``): a refused file is left as it was."""
    rows = cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return not rows or any(name == VERSION_TABLE for (name,) in rows)


@contextmanager
def foreign_keys_off(conn: Connection) -> Iterator[None]:
    """SQLite: foreign keys off on ``conn`` while it migrates (set before its transaction, as
    SQLite requires), so that a revision may rebuild a table (drop it and rename its copy)
    without its children's cascades firing; on again after. Revision 0009 checks the keys
    itself before it commits. A no-op on other engines."""
    if conn.dialect.name != "sqlite":
        yield
        return
    driver = conn.connection.dbapi_connection
    assert driver is not None
    driver.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        driver.execute("PRAGMA foreign_keys = ON")


def switch_to_wal(conn: Connection) -> None:
    """SQLite: switch the store's file to WAL, outside any transaction of ``conn`` (a no-op once
    it is, and on PostgreSQL). Run after a migration commits: the connection policy switches
    only a file that is empty or already a store (``_empty_or_a_store``)."""
    if conn.dialect.name != "sqlite":
        return
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        (busy_ms,) = cursor.execute("PRAGMA busy_timeout").fetchone()
        _enable_wal(cursor, busy_ms / 1000)
    finally:
        cursor.close()


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


def make_async_engine(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    read_only: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    **kwargs: Any,
) -> AsyncEngine:
    """``make_engine``'s PostgreSQL store on psycopg's async connections (the URL's driver
    becomes ``psycopg_async``), with the same options and connection policy: what the
    repository's coroutines run on. SQLite has no async engine here (its coroutines use threads)."""
    resolved = resolve_url(url)
    if resolved.get_backend_name() != "postgresql":
        raise StoreUrlError("an async engine is made for PostgreSQL stores only")
    sync_engine = make_engine(
        resolved,
        schema=schema,
        read_only=read_only,
        lock_timeout=lock_timeout,
        _async=True,
        **kwargs,
    )
    from sqlalchemy.ext.asyncio import AsyncEngine

    return AsyncEngine(sync_engine)


def make_engine(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    read_only: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    _async: bool = False,
    **kwargs: Any,
) -> Engine:
    """An engine with acti_store's connection policy (SQLite: WAL for a file that is empty or a
    store (``switch_to_wal`` for the rest), FKs, busy timeout; both: lock
    waits end after ``lock_timeout`` seconds; PostgreSQL: ``schema`` as the search path).

    ``schema`` (PostgreSQL; else ``ACTI_STORE_SCHEMA``, ``resolve_schema``) is carried by the
    engine and its connections (``store_schema``). ``read_only`` opens for reading only
    (``read_only_url``; no WAL switch, no folder created; PostgreSQL sessions default to
    read-only transactions). Raises ``StoreUrlError`` for a URL or schema acti_store cannot
    use, ``MissingDriverError`` (saying what to install) when its driver is missing, and
    ``StoreUnavailableError`` when the SQLite file's folder cannot be created.
    """
    resolved = resolve_url(url)
    own_schema = resolve_schema(schema, resolved)

    if resolved.get_backend_name() == "sqlite":

        def sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
            policy = _sqlite_reader if read_only else _sqlite_connect
            policy(dbapi_connection, lock_timeout)

        if read_only:
            resolved = read_only_url(resolved)
        else:
            _make_folder(resolved.database)
        # Every use of a connection ends in an explicit COMMIT or ROLLBACK (the repository's fast
        # path, SQLAlchemy's own connections), so the pool need not roll back again on check-in.
        kwargs.setdefault("pool_reset_on_return", None)
        engine = _create_engine(resolved, kwargs)
        event.listen(engine, "connect", sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine

    if resolved.get_backend_name() in MYSQL_DIALECTS:  # schema: a database of its own
        statements = mariadb.session_sql(lock_timeout, read_only=read_only)
        engine = _create_engine(mariadb.store_url(resolved, own_schema), mariadb.options(kwargs))
        event.listen(engine, "connect", lambda c, _r: mariadb.connect(c, statements), insert=True)
        event.listen(engine, "reset", mariadb.reset)
        return engine

    session = postgresql.session_sql(lock_timeout, read_only=read_only, schema=own_schema)
    if not _async and importlib.util.find_spec("greenlet") is not None:
        # The async API's module, imported here at startup rather than on the event loop by its
        # first call (an import there stalls the loop); without greenlet it cannot be imported.
        import sqlalchemy.ext.asyncio  # noqa: F401

    def postgresql_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        postgresql.connect(dbapi_connection, session)

    if _async:  # what create_async_engine does: its sync engine, on the async driver's pool
        resolved = resolved.set(drivername=f"{resolved.get_backend_name()}+psycopg_async")
        kwargs["_is_async"] = True
    engine = _create_engine(resolved, kwargs)
    # The async API's engine too: its coroutines cost the server what the sync calls cost.
    if not kwargs.get("pool_pre_ping"):
        event.listen(engine, "checkin", postgresql.checkin)
        event.listen(engine, "checkout", lambda c, r, _: postgresql.checkout(engine, c, r))
    # First of the connect listeners, so the dialect reads the store's schema as the default
    # schema (``current_schema()``) when it first connects: reflection looks there.
    event.listen(engine, "connect", postgresql_connect, insert=True)
    engine.update_execution_options(**{SCHEMA_OPTION: own_schema})
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


#: Query parameters of a database URL that hold a credential (never shown in ``store_location``).
_URL_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})


def store_location(url: URL) -> str:
    """Where the store at ``url`` is, for people: a SQLite file's absolute path, else the URL
    without its password (libpq also takes one from the query string: dropped too)."""
    if (path := store_file(url)) is not None:
        return str(path.resolve())
    secrets = [key for key in url.query if key.lower() in _URL_SECRET_PARAMETERS]
    return url.difference_update_query(secrets).render_as_string(hide_password=True)


def store_file(url: URL) -> Path | None:
    """The file the store at ``url`` is kept in (a SQLite file), else None (a server's store)."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    return sqlite_path(database)


def sqlite_path(database: str) -> Path:
    """The file a SQLite URL's database names: a path, or a ``file:`` URI (``read_only_url``)."""
    if database.startswith("file:"):
        return Path(unquote(database.removeprefix("file:").partition("?")[0]))
    return Path(database).expanduser()


def _sqlite_reader(dbapi_connection: Any, lock_timeout: float) -> None:
    """The connection policy of a read-only store: no WAL switch, and no writes at all."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {wait_ms(lock_timeout)}")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()
