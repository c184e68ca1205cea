"""MariaDB's and MySQL's errors, told apart by their error number (``args[0]`` of a PyMySQL or
mysqlclient error; the client's own are the 2xxx ones): what ``acti_store.dberrors`` asks of
them (``dberrors.ErrorCodes``)."""

from __future__ import annotations

from typing import Final

#: Lock wait timeout and deadlock, which trying again can get past.
_RETRYABLE: Final = frozenset({1205, 1213})
#: A lock wait that ran out (``innodb_lock_wait_timeout``).
_LOCK_WAIT: Final = 1205
_DUPLICATE: Final = frozenset({1062, 1586})
_NO_TABLE: Final = 1146
#: A table skipped by a read of ``information_schema`` (SQLAlchemy's ``has_table``) because
#: another session's DDL is changing (or dropping) it right then.
_CONCURRENT_DDL: Final = 1684
#: A write the server refused as read-only: a read-only transaction, a server started
#: ``--read-only`` (1290: "running with the --read-only option"), read-only mode.
_READ_ONLY: Final = frozenset({1792, 1290, 1836})
#: Passing conditions: locks, the server gone or going away, a lost or refused connection, too
#: many connections, a statement interrupted (a killed query, ``max_statement_time``).
_TRANSIENT: Final = frozenset(
    {1205, 1213, 1040, 1053, 1077, 1079, 1080, 1152, 1158, 1159, 1160, 1161, 1317, 1927, 1969}
    | {_CONCURRENT_DDL}
    | {2002, 2003, 2005, 2006, 2011, 2013, 2026, 2055}
)
#: Lasting problems, and what they mean for the store.
_LASTING: Final = {
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


def _number(orig: BaseException) -> int | None:
    code = orig.args[0] if orig.args else None
    return code if isinstance(code, int) else None


class MariadbErrors:
    def read_only(self, orig: BaseException) -> bool:
        return _number(orig) in _READ_ONLY

    def lock_wait(self, orig: BaseException) -> bool:
        return _number(orig) == _LOCK_WAIT

    def retryable(self, orig: BaseException) -> bool:
        return _number(orig) in _RETRYABLE

    def missing_table(self, orig: BaseException) -> bool:
        return _number(orig) == _NO_TABLE

    def concurrent_ddl(self, orig: BaseException) -> bool:
        return _number(orig) == _CONCURRENT_DDL

    def lasting(self, orig: BaseException) -> str | None:
        number = _number(orig)
        return None if number is None else _LASTING.get(number)

    def transient(self, orig: BaseException) -> bool | None:
        number = _number(orig)
        return None if number is None else number in _TRANSIENT

    def unique_violation(self, orig: BaseException) -> bool:
        return _number(orig) in _DUPLICATE

    def setup_hint(self, orig: BaseException) -> str | None:
        return None


ERRORS: Final = MariadbErrors()
