"""PostgreSQL (``postgresql+psycopg://``): the connection policy of a store's sessions.

Every session runs ``session_sql`` first (the lock timeout, read-only transactions, the store's
schema as the search path); a pooled connection is pinged only when it may have died while idle
(``checkout``).
"""

from __future__ import annotations

import re
import select
import time
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL
from sqlalchemy.pool import ConnectionPoolEntry

from .tenancy import TENANT_SETTING

#: The logins bound to one tenant each, which row-level security holds to it (revision 0015;
#: ``repository.engines.postgresql_logins``).
TENANT_LOGINS_TABLE: Final = "agent_tenant_logins"


def wait_ms(seconds: float) -> int:
    """A lock wait in whole milliseconds (PostgreSQL's and SQLite's), at least 1: 0 means
    "never wait" to SQLite's busy timeout and "wait forever" to PostgreSQL's ``lock_timeout``."""
    return max(1, round(seconds * 1000))


#: A pooled PostgreSQL connection idle for longer than this (seconds) is pinged, one round trip,
#: before it is used again; one used more recently is checked without a round trip
#: (``_postgresql_checkout``).
POSTGRES_PING_IDLE: Final = 30.0


def session_sql(
    lock_timeout: float, *, read_only: bool = False, schema: str | None = None
) -> list[str]:
    """What every PostgreSQL session of a store runs first (any engine or pool of the store).

    A write waiting for a row lock gives up after ``lock_timeout`` (PostgreSQL waits forever by
    default): the repository then retries within the same deadline, or reports the lock.
    ``read_only``: every transaction of the session is read-only, so the server refuses writes.
    ``schema`` (checked by ``resolve_schema``) is the whole search path: every name acti_store
    uses, in its precompiled statements too, resolves there and only there (and in pg_catalog,
    which PostgreSQL always searches first); a table of the application's in another schema is
    out of reach, even when the store's schema is empty or missing.
    """
    statements = [f"SET lock_timeout = {wait_ms(lock_timeout)}"]
    if read_only:
        statements.append("SET SESSION default_transaction_read_only = on")
    if schema is not None:
        statements.append(f'SET search_path TO "{schema}"')
    return statements


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    """What a store reached through a transaction pooler makes anew in each transaction, where
    the session's (``session_sql``) would be left on a server connection the pooler then hands
    to any client: the schema as the search path, the lock timeout (milliseconds), read-only
    transactions; the tenant of row-level security is the repository's (``statement``)."""

    schema: str | None
    lock_timeout_ms: int
    read_only: bool

    def statement(
        self, tenant: str | None = None, lock_timeout_ms: int | None = None
    ) -> tuple[str, tuple[str, ...]]:
        """One ``SELECT`` of ``set_config(..., true)`` calls (each undone when the transaction
        ends) and its parameters: sent after the transaction's first statements, in its first
        round trip. ``lock_timeout_ms``: this transaction's own lock wait, else the store's."""
        wait = self.lock_timeout_ms if lock_timeout_ms is None else lock_timeout_ms
        calls, values = ["set_config('lock_timeout', %s, true)"], [str(wait)]
        if self.schema is not None:
            calls.append("set_config('search_path', %s, true)")
            values.append(f'"{self.schema}"')
        if tenant is not None:
            calls.append(f"set_config('{TENANT_SETTING}', %s, true)")
            values.append(tenant)
        if self.read_only:
            calls.append("set_config('transaction_read_only', 'on', true)")
        return f"SELECT {', '.join(calls)}", tuple(values)


#: A search path given as a server option of a PostgreSQL URL (``?options=-csearch_path=acti``).
_SEARCH_PATH_OPTION: Final = re.compile(r"(?:^|\s)-c\s*search_path=([a-z_][a-z0-9_]*)(?=\s|$)")


def options_schema(url: URL) -> str | None:
    """The schema a URL's server options name as the search path (``options=-csearch_path=
    acti``), if any: what a pooled store makes per transaction (``pooled_connect`` takes the
    option out of what is sent: the pooler would refuse it, or drop it)."""
    found = _SEARCH_PATH_OPTION.search(_options(url.query.get("options")))
    return None if found is None else found.group(1)


def pooled_connect(
    _dialect: Any, _record: ConnectionPoolEntry, _args: list[Any], params: dict[str, Any]
) -> None:
    """A pooled store's connection as it is made: the search path out of its server options
    (PgBouncer refuses a client's ``options``, or ignores them); other options go as given."""
    options = _options(params.get("options"))
    rest = _SEARCH_PATH_OPTION.sub(" ", options).strip()
    if rest:
        params["options"] = rest
    else:
        params.pop("options", None)


def _options(given: Any) -> str:
    if isinstance(given, (list, tuple)):
        return " ".join(map(str, given))
    return str(given or "")


def begin(conn: Connection, settings: TransactionSettings) -> None:
    """A pooled store's SQLAlchemy transaction (a migration, a revision check) as it begins:
    its settings, for no tenant (those transactions read and write no tenant's rows)."""
    sql, values = settings.statement()
    conn.exec_driver_sql(sql, values)


def default_schema(engine: Engine, schema: str) -> None:
    """A pooled store's schema as the dialect's default (its first look read ``public``, the
    session's), where reflection (``alembic check``) looks for the store's tables."""
    engine.dialect.default_schema_name = schema


def connect(dbapi_connection: Any, statements: list[str]) -> None:
    with dbapi_connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    dbapi_connection.commit()


_RETURNED: Final = "acti_returned_at"


def checkin(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    record.info[_RETURNED] = time.monotonic()


def checkout(engine: Engine, dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    """SQLAlchemy's pessimistic disconnect check (``pool_pre_ping``) without its round trip on
    every use: a connection is pinged only when it was idle for ``POSTGRES_PING_IDLE`` seconds,
    or when the server sent something while it was idle (a terminated backend, a server shutting
    down: the socket is readable then). A dead one is replaced by a new connection."""
    now = time.monotonic()
    idle = now - record.info.get(_RETURNED, now)  # a connection just made is not pinged
    # The driver's own connection: psycopg's, also under the async API's adapter.
    driver = record.driver_connection
    if not dbapi_connection.closed and idle < POSTGRES_PING_IDLE and driver is not None:
        try:
            readable, _, _ = select.select([driver.fileno()], [], [], 0)
        except (OSError, ValueError):
            readable = [True]
        if not readable:
            return
    try:
        engine.dialect.do_ping(dbapi_connection)
    except Exception as exc:
        raise sa_exc.DisconnectionError(str(exc)) from exc
