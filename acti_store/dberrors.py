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


def driver_error(exc: BaseException) -> BaseException:
    """The exception behind ``exc`` (SQLAlchemy wraps the driver's; our fast path does not)."""
    return exc.orig if isinstance(exc, sa_exc.StatementError) and exc.orig is not None else exc


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
    return getattr(orig, "sqlstate", None) == _READ_ONLY_SQLSTATE


def is_retryable(exc: BaseException) -> bool:
    """A lock timeout (SQLite), serialization failure or deadlock (PostgreSQL)."""
    orig = driver_error(exc)
    return getattr(orig, "sqlstate", None) in _RETRYABLE_SQLSTATES or is_sqlite_busy(orig)


def _is_unique_violation(orig: BaseException) -> bool:
    return (
        getattr(orig, "sqlstate", None) == _UNIQUE_SQLSTATE
        or _sqlite_code(orig) in _SQLITE_UNIQUE_CODES
    )


def translated(exc: BaseException, dbapi: Any, name: str | None = None) -> BaseException | None:
    """The library's exception for a driver error (raw or wrapped by SQLAlchemy), else None.

    ``dbapi`` is the driver module of the engine (``dialect.loaded_dbapi``); ``name`` is the agent
    a write creates, which a duplicate key means already exists.
    """
    if not isinstance(exc, sa_exc.DBAPIError | dbapi.Error):
        return None
    orig = driver_error(exc)
    if isinstance(orig, dbapi.IntegrityError):
        if name is not None and _is_unique_violation(orig):
            return AgentExistsError(name)
        return AgentStoreError(f"the store refused the write: {orig}")
    if is_read_only(orig):
        return ReadOnlyStoreError(f"{READ_ONLY_HINT} ({orig})")
    if isinstance(orig, dbapi.DataError | dbapi.ProgrammingError):
        return AgentStoreError(f"the store rejected the statement: {orig}")
    return StoreUnavailableError(f"the store is unavailable: {orig}")


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


def unreachable(exc: BaseException) -> AgentStoreError:
    """The error for a store that cannot be opened at all: the first line of what failed."""
    lines = str(driver_error(exc)).strip().splitlines()
    first = lines[0] if lines else ""
    if is_read_only(exc):
        return ReadOnlyStoreError(f"cannot open the store: {first}: {READ_ONLY_HINT}")
    return StoreUnavailableError(f"cannot open the store: {first}")
