"""SQLite (``sqlite:///path.db``): the connection policy of a store's file.

Every connection of a store that writes switches a file that is empty or already a store to WAL,
turns foreign keys on, waits for locks up to the store's lock timeout (the busy timeout) and
begins its transactions itself (``begin``); a read-only store's connections (``reader``) take
no lock they need not and write nothing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.pool import ConnectionPoolEntry

from ...dberrors import driver_error
from ...engine import VERSION_TABLE, SessionPolicy, create_store_engine, wait_ms
from ...errors import StoreUnavailableError, StoreUrlError
from .errors import is_busy

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
#: a transaction use these: SQLAlchemy connections (``begin``) and the repository's fast
#: path on DBAPI connections.
SQLITE_BEGIN_READ: Final = "BEGIN"
SQLITE_BEGIN_WRITE: Final = "BEGIN IMMEDIATE"


def make(policy: SessionPolicy, kwargs: dict[str, Any]) -> Engine:
    """The engine of the store's file: each connection set up by ``connect`` (``reader`` for
    a read-only store, which opens the file read-only and creates no folder), each transaction
    begun by ``begin``."""
    read_only, lock_timeout = policy.read_only, policy.lock_timeout

    def sqlite_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        if read_only:
            reader(dbapi_connection, lock_timeout)
        else:
            connect(dbapi_connection, lock_timeout, VERSION_TABLE)

    url = policy.url
    if read_only:
        url = read_only_url(url)
    else:
        _make_folder(url.database)
    # Every use of a connection ends in an explicit COMMIT or ROLLBACK (the repository's fast
    # path, SQLAlchemy's own connections), so the pool need not roll back again on check-in.
    kwargs.setdefault("pool_reset_on_return", None)
    engine = create_store_engine(url, kwargs)
    event.listen(engine, "connect", sqlite_connect)
    event.listen(engine, "begin", begin)
    return engine


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


def store_file(url: URL) -> Path | None:
    """The file the store at ``url`` is kept in; None for an in-memory database."""
    database = url.database or ""
    return None if database in ("", ":memory:") else sqlite_path(database)


def connect(dbapi_connection: Any, lock_timeout: float, version_table: str) -> None:
    # We issue BEGIN ourselves (see _sqlite_begin): the driver must not.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {wait_ms(lock_timeout)}")
    if _empty_or_a_store(cursor, version_table):
        _enable_wal(cursor, lock_timeout)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute(f"PRAGMA journal_size_limit = {SQLITE_WAL_SIZE_LIMIT}")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _empty_or_a_store(cursor: Any, version_table: str) -> bool:
    """Whether the file is new or empty, or holds acti_store's version table: a file that is
    acti_store's to switch to WAL. Another application's file is switched only once a migration
    has made the store in it (``switch_to_wal``), after checking that none of its tables bears
    a name of acti_store's (``acti_store.revisions``): a refused file is left as it was."""
    rows = cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return not rows or any(name == version_table for (name,) in rows)


@contextmanager
def migrating(conn: Connection) -> Iterator[None]:
    """Foreign keys off on ``conn`` while it migrates (set before its transaction, as SQLite
    requires), so that a revision may rebuild a table (drop it and rename its copy) without its
    children's cascades firing; on again after. Revision 0009 checks the keys itself before it
    commits."""
    driver = conn.connection.dbapi_connection
    assert driver is not None
    driver.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        driver.execute("PRAGMA foreign_keys = ON")


def migrated(conn: Connection) -> None:
    """Switch the store's file to WAL, outside any transaction of ``conn`` (a no-op once it
    is). Run after a migration commits: the connection policy switches only a file that is
    empty or already a store (``_empty_or_a_store``)."""
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
            if not is_busy(driver_error(exc)) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def begin(conn: Connection) -> None:
    # A connection with the execution option ``acti_write`` writes (the migrations do).
    writes = conn.get_execution_options().get("acti_write", False)
    conn.exec_driver_sql(SQLITE_BEGIN_WRITE if writes else SQLITE_BEGIN_READ)


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


def reader(dbapi_connection: Any, lock_timeout: float) -> None:
    """The connection policy of a read-only store: no WAL switch, and no writes at all."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {wait_ms(lock_timeout)}")
    cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    cursor.execute("PRAGMA query_only = ON")
    cursor.close()
