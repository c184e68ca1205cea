"""PostgreSQL's errors, told apart by their SQLSTATE (psycopg's ``sqlstate``): what
``acti_store.dberrors`` asks of them (``dberrors.ErrorCodes``), and the symptoms of a pooler in
transaction mode met by a store not opened for one (``setup_hint``)."""

from __future__ import annotations

from typing import Final

#: Serialization failure, deadlock, lock not available. Trying again can succeed.
_RETRYABLE: Final = frozenset({"40001", "40P01", "55P03"})
_LOCK_NOT_AVAILABLE: Final = "55P03"
_UNIQUE: Final = "23505"
#: A write in a read-only transaction.
_READ_ONLY: Final = "25006"
_UNDEFINED_TABLE: Final = "42P01"
#: SQLSTATEs of a passing condition: serialization failure, deadlock, lock not available, query
#: canceled (a timeout), the server shutting down or starting, too many connections. Class 08
#: (connection exceptions) too; a connection that failed or was lost before the server could
#: answer has no SQLSTATE (``dberrors`` then looks at the error's class).
_TRANSIENT: Final = frozenset(
    {"40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "53300"}
)
_TRANSIENT_CLASSES: Final = frozenset({"08"})
#: SQLSTATEs (or classes) of a lasting problem, and what it means for the store.
_LASTING: Final = {
    "53100": "the database server's disk is full",
    "42501": "permission to the store was denied",
    _READ_ONLY: "the store is read-only",
    "3D000": "the database does not exist",
    "3F000": "the store's schema does not exist",
    "XX001": "the database reports corrupt data",
    "XX002": "the database reports a corrupt index",
    "58030": "the database server failed to read or write its files",
}
_LASTING_CLASSES: Final = {"28": "the database refused the credentials"}
#: What a store that keeps its settings in the session meets behind a pooler in transaction
#: mode, which hands each transaction to any server session: psycopg's prepared statements
#: (``_pg3_...``) missing or already there (SQLSTATE 26000, 42P05, 08P01's "bind message"),
#: the URL's server options refused, and another session's tenant (row-level security).
_POOLER_STATEMENT: Final = 'prepared statement "_pg3_'
_POOLER_STARTUP: Final = "unsupported startup parameter"
_POOLER_SYMPTOM_SQLSTATES: Final = frozenset({"26000", "42P05", "08P01", "42501"})
#: Said of a pooler's symptom (``setup_hint``).
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


def _sqlstate(orig: BaseException) -> str | None:
    sqlstate = getattr(orig, "sqlstate", None)
    return sqlstate if isinstance(sqlstate, str) else None


class PostgresqlErrors:
    def read_only(self, orig: BaseException) -> bool:
        return _sqlstate(orig) == _READ_ONLY

    def lock_wait(self, orig: BaseException) -> bool:
        return _sqlstate(orig) == _LOCK_NOT_AVAILABLE

    def retryable(self, orig: BaseException) -> bool:
        return _sqlstate(orig) in _RETRYABLE

    def missing_table(self, orig: BaseException) -> bool:
        return _sqlstate(orig) == _UNDEFINED_TABLE

    def concurrent_ddl(self, orig: BaseException) -> bool:
        return False

    def lasting(self, orig: BaseException) -> str | None:
        sqlstate = _sqlstate(orig)
        if sqlstate is None:
            return None
        return _LASTING.get(sqlstate) or _LASTING_CLASSES.get(sqlstate[:2])

    def transient(self, orig: BaseException) -> bool | None:
        sqlstate = _sqlstate(orig)
        if sqlstate is None:
            return None
        return sqlstate in _TRANSIENT or sqlstate[:2] in _TRANSIENT_CLASSES

    def unique_violation(self, orig: BaseException) -> bool:
        return _sqlstate(orig) == _UNIQUE

    def setup_hint(self, orig: BaseException) -> str | None:
        """The pooler's hint for an error a pooler in transaction mode causes (asked only of a
        store not opened for one: one that is makes none of them), else None."""
        message = str(orig)
        symptom = _POOLER_STARTUP in message or (  # at connect: psycopg gives no SQLSTATE
            _sqlstate(orig) in _POOLER_SYMPTOM_SQLSTATES
            and (_POOLER_STATEMENT in message or _RLS_VIOLATION in message)
        )
        if not symptom:
            return None
        lines = message.strip().splitlines()
        bound = lines and _RLS_VIOLATION in lines[0]
        return POOLER_HINT + (BOUND_LOGIN_HINT if bound else "")


ERRORS: Final = PostgresqlErrors()
