"""Driver errors, translated into the library's exception tree (``acti_store.errors``) here only.

Both drivers say what went wrong with a code, not only a message: SQLite's (extended) result code
on ``sqlite3.Error.sqlite_errorcode``, PostgreSQL's SQLSTATE on the psycopg error. Nothing here
knows the repository or the engine, so both can use it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from sqlalchemy import exc as sa_exc

from .errors import AgentExistsError, AgentStoreError, ReadOnlyStoreError, StoreUnavailableError

#: PostgreSQL: serialization failure, deadlock, lock not available. Trying again can succeed.
_RETRYABLE_SQLSTATES: Final = frozenset({"40001", "40P01", "55P03"})
#: PostgreSQL: unique violation.
_UNIQUE_SQLSTATE: Final = "23505"
#: SQLite extended result codes of a duplicate key ("UNIQUE constraint failed: ...").
_SQLITE_UNIQUE_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_CONSTRAINT_UNIQUE,
        sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY,
        sqlite3.SQLITE_CONSTRAINT_ROWID,
    }
)
#: The primary result code is the low byte of an extended one (SQLITE_BUSY_SNAPSHOT is a BUSY).
_SQLITE_PRIMARY_CODE_MASK: Final = 0xFF
#: PostgreSQL: a write in a read-only transaction.
_READ_ONLY_SQLSTATE: Final = "25006"
#: What to do about a store this process cannot write.
READ_ONLY_HINT: Final = (
    "the store (its file or its folder) cannot be written by this process: to read it, open "
    "it with read_only=True (acti-store list, show, search, history, export: --read-only)"
)
#: SQLite primary result codes of a passing condition: another connection holds a lock.
_SQLITE_TRANSIENT: Final = frozenset(
    {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_PROTOCOL}
)
#: SQLite primary result codes of a lasting problem, and what it means for the store.
_SQLITE_LASTING: Final = {
    sqlite3.SQLITE_CORRUPT: "the store file is corrupt",
    sqlite3.SQLITE_NOTADB: "the store file is not a database (damaged or not a SQLite file)",
    sqlite3.SQLITE_READONLY: "the store is read-only",
    sqlite3.SQLITE_FULL: "the disk holding the store is full",
    sqlite3.SQLITE_PERM: "permission to the store file was denied",
    sqlite3.SQLITE_AUTH: "permission to the store was denied",
    sqlite3.SQLITE_CANTOPEN: "the store file cannot be opened (missing folder or no permission)",
    sqlite3.SQLITE_IOERR: "the disk failed to read or write the store file",
}
#: PostgreSQL SQLSTATEs of a passing condition: serialization failure, deadlock, lock not
#: available, query canceled (a timeout), the server shutting down or starting, too many
#: connections. Class 08 (connection exceptions) too, and a connection that failed or was lost
#: before the server could answer (psycopg reports no SQLSTATE then).
_PG_TRANSIENT: Final = frozenset(
    {"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "53300"}
)
_PG_TRANSIENT_CLASSES: Final = frozenset({"08"})
#: A store opened without migrating (``open_repository(url, migrate=False)``) before its schema
#: was made: what both engines say to every call that reads or writes it.
TABLES_MISSING: Final = "the store's tables are missing (run `acti-store migrate`)"
#: PostgreSQL's SQLSTATE of a table that does not exist (SQLite has no code of its own for it).
_PG_UNDEFINED_TABLE: Final = "42P01"
#: How SQLite begins the message of a table that does not exist (a plain SQLITE_ERROR).
_SQLITE_NO_TABLE: Final = "no such table:"
#: PostgreSQL SQLSTATEs (or classes) of a lasting problem, and what it means for the store.
_PG_LASTING: Final = {
    "53100": "the database server's disk is full",
    "42501": "permission to the store was denied",
    _READ_ONLY_SQLSTATE: "the store is read-only",
    "3D000": "the database does not exist",
    "3F000": "the store's schema does not exist",
    "XX001": "the database reports corrupt data",
    "XX002": "the database reports a corrupt index",
    "58030": "the database server failed to read or write its files",
}
_PG_LASTING_CLASSES: Final = {"28": "the database refused the credentials"}
#: What a store that keeps its settings in the session meets behind a pooler in transaction
#: mode, which hands each transaction to any server session: psycopg's prepared statements
#: (``_pg3_...``) missing or already there (SQLSTATE 26000, 42P05, 08P01's "bind message"),
#: the URL's server options refused, and another session's tenant (row-level security).
_POOLER_STATEMENT: Final = 'prepared statement "_pg3_'
_POOLER_STARTUP: Final = "unsupported startup parameter"
_POOLER_SYMPTOM_SQLSTATES: Final = frozenset({"26000", "42P05", "08P01", "42501"})
#: Said of a pooler's symptom (``_pooler_symptom``).
POOLER_HINT: Final = (
    "the store seems to be reached through a connection pooler in transaction mode (PgBouncer, "
    "RDS Proxy, a pooled Supabase or Neon URL), where each transaction may find another server "
    'session: open it with pooler="transaction" (ACTI_STORE_POOLER=transaction, acti-store '
    "--pooler transaction), or use a direct URL"
)

#: PostgreSQL's word for a row its row-level security refused, and the other cause of one: the
#: database login is bound to another tenant than the store's (revision 0015).
_RLS_VIOLATION: Final = "row-level security"
BOUND_LOGIN_HINT: Final = (
    "; or the database login is bound to another tenant than the store's (acti-store tenants "
    "logins lists the bindings)"
)


def _pooler_symptom(orig: BaseException) -> bool:
    """Whether a PostgreSQL error is one a pooler in transaction mode causes (``POOLER_HINT``):
    asked only of a store not opened for one."""
    message = str(orig)
    if _POOLER_STARTUP in message:  # at connect: psycopg gives no SQLSTATE
        return True
    if getattr(orig, "sqlstate", None) not in _POOLER_SYMPTOM_SQLSTATES:
        return False
    return _POOLER_STATEMENT in message or _RLS_VIOLATION in message


#: MariaDB/MySQL error numbers (``args[0]`` of a pymysql error; also the client's 2xxx ones):
#: lock wait timeout and deadlock, which trying again can get past.
_MYSQL_RETRYABLE: Final = frozenset({1205, 1213})
#: A lock wait that ran out (``innodb_lock_wait_timeout``).
_MYSQL_LOCK_WAIT: Final = 1205
_MYSQL_DUPLICATE: Final = frozenset({1062, 1586})
_MYSQL_NO_TABLE: Final = 1146
#: A table skipped by a read of ``information_schema`` (SQLAlchemy's ``has_table``) because
#: another session's DDL is changing (or dropping) it right then.
_MYSQL_CONCURRENT_DDL: Final = 1684
#: A write the server refused as read-only: a read-only transaction, a server started
#: ``--read-only`` (1290: "running with the --read-only option"), read-only mode.
_MYSQL_READ_ONLY: Final = frozenset({1792, 1290, 1836})
#: Passing conditions: locks, the server gone or going away, a lost or refused connection, too
#: many connections, a statement interrupted (a killed query, ``max_statement_time``).
_MYSQL_TRANSIENT: Final = frozenset(
    {1205, 1213, 1040, 1053, 1077, 1079, 1080, 1152, 1158, 1159, 1160, 1161, 1317, 1927, 1969}
    | {_MYSQL_CONCURRENT_DDL}
    | {2002, 2003, 2005, 2006, 2011, 2013, 2026, 2055}
)
#: Lasting problems, and what they mean for the store.
_MYSQL_LASTING: Final = {
    1044: "permission to the store's database was denied",
    1045: "the database refused the credentials",
    1049: "the database does not exist (create it, e.g. CREATE DATABASE acti, or name another)",
    1142: "permission to the store's tables was denied",
    1227: "permission to the store was denied",
    1021: "the database server's disk is full",
    1114: "the database server's disk is full (a table is full)",
    1792: "the store is read-only",
    1290: "the store is read-only (the server runs with --read-only)",
    1836: "the store is read-only",
}


def driver_error(exc: BaseException) -> BaseException:
    """The exception behind ``exc`` (SQLAlchemy wraps the driver's; our fast path does not)."""
    return exc.orig if isinstance(exc, sa_exc.StatementError) and exc.orig is not None else exc


def _mysql_code(orig: BaseException) -> int | None:
    """The error number of a MariaDB/MySQL driver error (pymysql's ``args[0]``), else None."""
    if not type(orig).__module__.startswith(("pymysql", "MySQLdb")) or not orig.args:
        return None
    code = orig.args[0]
    return code if isinstance(code, int) else None


def _sqlite_code(orig: BaseException) -> int | None:
    return getattr(orig, "sqlite_errorcode", None) if isinstance(orig, sqlite3.Error) else None


def is_sqlite_busy(exc: BaseException) -> bool:
    """SQLite could not get a lock another connection holds ("database is locked")."""
    code = _sqlite_code(driver_error(exc))
    return code is not None and code & _SQLITE_PRIMARY_CODE_MASK == sqlite3.SQLITE_BUSY


def is_read_only(exc: BaseException) -> bool:
    """The database refused a write because it is read-only (SQLite) or the transaction is."""
    orig = driver_error(exc)
    code = _sqlite_code(orig)
    if code is not None:
        return code & _SQLITE_PRIMARY_CODE_MASK == sqlite3.SQLITE_READONLY
    if (number := _mysql_code(orig)) is not None:
        return number in _MYSQL_READ_ONLY
    return getattr(orig, "sqlstate", None) == _READ_ONLY_SQLSTATE


def is_lock_wait(exc: BaseException) -> bool:
    """A lock another writer held did not come free in time (SQLite busy, PostgreSQL 55P03)."""
    orig = driver_error(exc)
    return (
        is_sqlite_busy(orig)
        or getattr(orig, "sqlstate", None) == "55P03"
        or _mysql_code(orig) == _MYSQL_LOCK_WAIT
    )


def locked_out(waited: float) -> StoreUnavailableError:
    """The error of a write that gave up waiting for the lock, after ``waited`` seconds."""
    return StoreUnavailableError(
        f"the store was locked by another writer for {waited:.1f} s (the lock timeout); "
        "nothing was written",
        transient=True,
    )


def is_retryable(exc: BaseException) -> bool:
    """A lock timeout (SQLite), serialization failure or deadlock (PostgreSQL)."""
    orig = driver_error(exc)
    return (
        getattr(orig, "sqlstate", None) in _RETRYABLE_SQLSTATES
        or is_sqlite_busy(orig)
        or _mysql_code(orig) in _MYSQL_RETRYABLE
    )


def is_missing_table(exc: BaseException) -> bool:
    """A statement named a table the database does not have: the store was never migrated (or
    a version table vanished while it was read)."""
    orig = driver_error(exc)
    if _sqlite_code(orig) == sqlite3.SQLITE_ERROR:
        return str(orig).startswith(_SQLITE_NO_TABLE)
    if (number := _mysql_code(orig)) is not None:
        return number == _MYSQL_NO_TABLE
    return getattr(orig, "sqlstate", None) == _PG_UNDEFINED_TABLE


def is_concurrent_ddl(exc: BaseException) -> bool:
    """MariaDB/MySQL: a look at a table met another session's DDL changing it (a version table
    being dropped as another opener moves our revision out of it); reading again gets past it."""
    return _mysql_code(driver_error(exc)) == _MYSQL_CONCURRENT_DDL


def _lasting_problem(exc: BaseException) -> str | None:
    """What is wrong, for a driver error whose cause retrying will not remove; else None."""
    if is_missing_table(exc):
        return TABLES_MISSING
    orig = driver_error(exc)
    code = _sqlite_code(orig)
    if code is not None:
        return _SQLITE_LASTING.get(code & _SQLITE_PRIMARY_CODE_MASK)
    if (number := _mysql_code(orig)) is not None:
        return _MYSQL_LASTING.get(number)
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return _PG_LASTING.get(sqlstate) or _PG_LASTING_CLASSES.get(sqlstate[:2])
    return None


def is_transient(exc: BaseException) -> bool:
    """Whether trying again can help: a lock, a lost connection, a conflict, a restart."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    orig = driver_error(exc)
    code = _sqlite_code(orig)
    if code is not None:
        return code & _SQLITE_PRIMARY_CODE_MASK in _SQLITE_TRANSIENT
    if (number := _mysql_code(orig)) is not None:
        return number in _MYSQL_TRANSIENT
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate in _PG_TRANSIENT or sqlstate[:2] in _PG_TRANSIENT_CLASSES
    # psycopg gives no SQLSTATE when the connection failed or broke before the server answered:
    # a DB-API OperationalError then.
    return any(cls.__name__ == "OperationalError" for cls in type(orig).__mro__)


def unavailable(exc: BaseException, prefix: str | None = None) -> StoreUnavailableError:
    """The error for a driver error that is not about the request: transient or lasting, and
    when it lasts, what is wrong in words (a ``ReadOnlyStoreError`` saying what to do when the
    store cannot be written). ``prefix`` opens the message."""
    lines = str(driver_error(exc)).strip().splitlines()
    detail = lines[0] if lines else type(driver_error(exc)).__name__
    if _pooler_symptom(driver_error(exc)):
        opening = f"{prefix}: " if prefix else ""
        bound = BOUND_LOGIN_HINT if _RLS_VIOLATION in detail else ""
        return StoreUnavailableError(f"{opening}{POOLER_HINT}{bound}: {detail}", transient=False)
    problem = _lasting_problem(exc)
    if problem is not None:
        opening = f"{prefix}: {problem}" if prefix else problem
        if is_read_only(exc):
            return ReadOnlyStoreError(f"{opening}: {detail}; {READ_ONLY_HINT}")
        return StoreUnavailableError(f"{opening}: {detail}", transient=False)
    opening = prefix or "the store is unavailable"
    return StoreUnavailableError(f"{opening}: {detail}", transient=is_transient(exc))


def _is_unique_violation(orig: BaseException) -> bool:
    return (
        getattr(orig, "sqlstate", None) == _UNIQUE_SQLSTATE
        or _sqlite_code(orig) in _SQLITE_UNIQUE_CODES
        or _mysql_code(orig) in _MYSQL_DUPLICATE
    )


def translated(exc: BaseException, dbapi: Any, name: str | None = None) -> BaseException | None:
    """The library's exception for a driver error (raw or wrapped by SQLAlchemy), else None.

    ``dbapi`` is the driver module of the engine (``dialect.loaded_dbapi``); ``name`` is the agent
    a write creates, which a duplicate key means already exists.
    """
    if not isinstance(exc, sa_exc.DBAPIError | dbapi.Error):
        return None
    orig = driver_error(exc)
    if _lasting_problem(orig) is not None or _pooler_symptom(orig):  # e.g. no permission
        return unavailable(exc)
    if isinstance(orig, dbapi.IntegrityError):
        if name is not None and _is_unique_violation(orig):
            return AgentExistsError(name)
        return AgentStoreError(f"the store refused the write: {orig}")
    if isinstance(orig, dbapi.DataError | dbapi.ProgrammingError):
        return AgentStoreError(f"the store rejected the statement: {orig}")
    return unavailable(exc)


@contextmanager
def translate_errors(dbapi: Any, name: str | None = None) -> Iterator[None]:
    """Turn driver errors into the library's exception tree (``translated``). For the rare
    paths: the hot ones call ``translated`` in their own ``except`` (a context manager costs on
    every call)."""
    try:
        yield
    except Exception as exc:
        error = translated(exc, dbapi, name)
        if error is None:
            raise
        raise error from exc


def unreachable(exc: BaseException) -> StoreUnavailableError:
    """The error for a store that cannot be opened at all: the first line of what failed."""
    return unavailable(exc, "cannot open the store")
