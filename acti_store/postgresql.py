"""PostgreSQL (``postgresql+psycopg://``): the connection policy of a store's sessions.

Every session runs ``session_sql`` first (the lock timeout, read-only transactions, the store's
schema as the search path); a pooled connection is pinged only when it may have died while idle
(``checkout``).
"""

from __future__ import annotations

import select
import time
from typing import Any, Final

from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import ConnectionPoolEntry


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
