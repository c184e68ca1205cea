"""SQLite's errors, told apart by their (extended) result code on ``sqlite3.Error``'s
``sqlite_errorcode``: what ``acti_store.dberrors`` asks of them (``dberrors.ErrorCodes``)."""

from __future__ import annotations

import sqlite3
from typing import Final

#: Extended result codes of a duplicate key ("UNIQUE constraint failed: ...").
_UNIQUE_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_CONSTRAINT_UNIQUE,
        sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY,
        sqlite3.SQLITE_CONSTRAINT_ROWID,
    }
)
#: The primary result code is the low byte of an extended one (SQLITE_BUSY_SNAPSHOT is a BUSY).
_PRIMARY_CODE_MASK: Final = 0xFF
#: Primary result codes of a passing condition: another connection holds a lock.
_TRANSIENT: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_PROTOCOL})
#: Primary result codes of a lasting problem, and what it means for the store.
_LASTING: Final = {
    sqlite3.SQLITE_CORRUPT: "the store file is corrupt",
    sqlite3.SQLITE_NOTADB: "the store file is not a database (damaged or not a SQLite file)",
    sqlite3.SQLITE_READONLY: "the store is read-only",
    sqlite3.SQLITE_FULL: "the disk holding the store is full",
    sqlite3.SQLITE_PERM: "permission to the store file was denied",
    sqlite3.SQLITE_AUTH: "permission to the store was denied",
    sqlite3.SQLITE_CANTOPEN: "the store file cannot be opened (missing folder or no permission)",
    sqlite3.SQLITE_IOERR: "the disk failed to read or write the store file",
}
#: How SQLite begins the message of a table that does not exist (a plain SQLITE_ERROR).
_NO_TABLE: Final = "no such table:"


def _code(orig: BaseException) -> int | None:
    return getattr(orig, "sqlite_errorcode", None) if isinstance(orig, sqlite3.Error) else None


def _primary(orig: BaseException) -> int | None:
    code = _code(orig)
    return None if code is None else code & _PRIMARY_CODE_MASK


def is_busy(orig: BaseException) -> bool:
    """SQLite could not get a lock another connection holds ("database is locked")."""
    return _primary(orig) == sqlite3.SQLITE_BUSY


class SqliteErrors:
    def read_only(self, orig: BaseException) -> bool:
        return _primary(orig) == sqlite3.SQLITE_READONLY

    def lock_wait(self, orig: BaseException) -> bool:
        return is_busy(orig)

    def retryable(self, orig: BaseException) -> bool:
        return is_busy(orig)

    def missing_table(self, orig: BaseException) -> bool:
        return _code(orig) == sqlite3.SQLITE_ERROR and str(orig).startswith(_NO_TABLE)

    def concurrent_ddl(self, orig: BaseException) -> bool:
        return False

    def lasting(self, orig: BaseException) -> str | None:
        primary = _primary(orig)
        return None if primary is None else _LASTING.get(primary)

    def transient(self, orig: BaseException) -> bool | None:
        primary = _primary(orig)
        return None if primary is None else primary in _TRANSIENT

    def unique_violation(self, orig: BaseException) -> bool:
        return _code(orig) in _UNIQUE_CODES

    def setup_hint(self, orig: BaseException) -> str | None:
        return None


ERRORS: Final = SqliteErrors()
