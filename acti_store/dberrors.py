"""Driver errors, translated into the library's exception tree (``acti_store.errors``) here only.

Every driver says what went wrong with a code, not only a message (SQLite's result code,
PostgreSQL's SQLSTATE, MariaDB's error number): what each code means is its engine's
(``engines/<engine>/errors.py``: ``ErrorCodes``), found by the package of the error's class
(``engine_registry.engine_of_error``). Nothing here knows the repository, so both it and the
engines can use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Protocol, cast

from sqlalchemy import exc as sa_exc

from .engine_registry import engine_of_error
from .errors import AgentExistsError, AgentStoreError, ReadOnlyStoreError, StoreUnavailableError

#: What to do about a store this process cannot write.
READ_ONLY_HINT: Final = (
    "the store (its file or its folder) cannot be written by this process: to read it, open "
    "it with read_only=True (acti-store list, show, search, history, export: --read-only)"
)
#: A store opened without migrating (``open_repository(url, migrate=False)``) before its schema
#: was made: what every engine says to every call that reads or writes it.
TABLES_MISSING: Final = "the store's tables are missing (run `acti-store migrate`)"


class ErrorCodes(Protocol):
    """What an engine's ``errors`` module gives (``ERRORS``): what one of its driver's errors
    (``orig``, the driver's own exception) means."""

    def read_only(self, orig: BaseException) -> bool:
        """A write the database refused because it, or the transaction, is read-only."""

    def lock_wait(self, orig: BaseException) -> bool:
        """A lock another writer held did not come free in time."""

    def retryable(self, orig: BaseException) -> bool:
        """A lock wait, serialization failure or deadlock: the write may be tried again."""

    def missing_table(self, orig: BaseException) -> bool:
        """A statement named a table the database does not have."""

    def concurrent_ddl(self, orig: BaseException) -> bool:
        """A look at a table met another session's DDL changing it."""

    def lasting(self, orig: BaseException) -> str | None:
        """What is wrong, in words, for a problem trying again will not remove; else None."""

    def transient(self, orig: BaseException) -> bool | None:
        """Whether trying again can help; None when the error carries no code to tell by."""

    def unique_violation(self, orig: BaseException) -> bool:
        """A duplicate key."""

    def setup_hint(self, orig: BaseException) -> str | None:
        """What to change in the store's options, for an error a wrong one causes; else None."""


def _codes(orig: BaseException) -> ErrorCodes | None:
    """The codes of the engine whose driver raised ``orig``, else None (not a driver's error)."""
    entry = engine_of_error(orig)
    return None if entry is None else cast(ErrorCodes, entry.part("errors").ERRORS)


def driver_error(exc: BaseException) -> BaseException:
    """The exception behind ``exc`` (SQLAlchemy wraps the driver's; our fast path does not)."""
    return exc.orig if isinstance(exc, sa_exc.StatementError) and exc.orig is not None else exc


def is_read_only(exc: BaseException) -> bool:
    """The database refused a write because it is read-only (SQLite) or the transaction is."""
    orig = driver_error(exc)
    return (codes := _codes(orig)) is not None and codes.read_only(orig)


def is_lock_wait(exc: BaseException) -> bool:
    """A lock another writer held did not come free in time (SQLite busy, PostgreSQL 55P03)."""
    orig = driver_error(exc)
    return (codes := _codes(orig)) is not None and codes.lock_wait(orig)


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
    return (codes := _codes(orig)) is not None and codes.retryable(orig)


def is_missing_table(exc: BaseException) -> bool:
    """A statement named a table the database does not have: the store was never migrated (or
    a version table vanished while it was read)."""
    orig = driver_error(exc)
    return (codes := _codes(orig)) is not None and codes.missing_table(orig)


def is_concurrent_ddl(exc: BaseException) -> bool:
    """MariaDB/MySQL: a look at a table met another session's DDL changing it (a version table
    being dropped as another opener moves our revision out of it); reading again gets past it."""
    orig = driver_error(exc)
    return (codes := _codes(orig)) is not None and codes.concurrent_ddl(orig)


def _lasting_problem(exc: BaseException) -> str | None:
    """What is wrong, for a driver error whose cause retrying will not remove; else None."""
    orig = driver_error(exc)
    codes = _codes(orig)
    if codes is None:
        return None
    return TABLES_MISSING if codes.missing_table(orig) else codes.lasting(orig)


def _setup_hint(orig: BaseException) -> str | None:
    codes = _codes(orig)
    return None if codes is None else codes.setup_hint(orig)


def is_transient(exc: BaseException) -> bool:
    """Whether trying again can help: a lock, a lost connection, a conflict, a restart."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    orig = driver_error(exc)
    codes = _codes(orig)
    if codes is not None and (transient := codes.transient(orig)) is not None:
        return transient
    # A driver gives no code when the connection failed or broke before the server answered
    # (psycopg: no SQLSTATE): a DB-API OperationalError then.
    return any(cls.__name__ == "OperationalError" for cls in type(orig).__mro__)


def unavailable(exc: BaseException, prefix: str | None = None) -> StoreUnavailableError:
    """The error for a driver error that is not about the request: transient or lasting, and
    when it lasts, what is wrong in words (a ``ReadOnlyStoreError`` saying what to do when the
    store cannot be written). ``prefix`` opens the message."""
    lines = str(driver_error(exc)).strip().splitlines()
    detail = lines[0] if lines else type(driver_error(exc)).__name__
    if (hint := _setup_hint(driver_error(exc))) is not None:
        opening = f"{prefix}: " if prefix else ""
        return StoreUnavailableError(f"{opening}{hint}: {detail}", transient=False)
    problem = _lasting_problem(exc)
    if problem is not None:
        opening = f"{prefix}: {problem}" if prefix else problem
        if is_read_only(exc):
            return ReadOnlyStoreError(f"{opening}: {detail}; {READ_ONLY_HINT}")
        return StoreUnavailableError(f"{opening}: {detail}", transient=False)
    opening = prefix or "the store is unavailable"
    return StoreUnavailableError(f"{opening}: {detail}", transient=is_transient(exc))


def _is_unique_violation(orig: BaseException) -> bool:
    return (codes := _codes(orig)) is not None and codes.unique_violation(orig)


def translated(exc: BaseException, dbapi: Any, name: str | None = None) -> BaseException | None:
    """The library's exception for a driver error (raw or wrapped by SQLAlchemy), else None.

    ``dbapi`` is the driver module of the engine (``dialect.loaded_dbapi``); ``name`` is the agent
    a write creates, which a duplicate key means already exists.
    """
    if not isinstance(exc, sa_exc.DBAPIError | dbapi.Error):
        return None
    orig = driver_error(exc)
    if _lasting_problem(orig) is not None or _setup_hint(orig) is not None:  # no permission
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
