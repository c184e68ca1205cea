"""PostgreSQL (``postgresql+psycopg://``): the connection policy of a store's sessions.

Every session runs ``session_sql`` first (the lock timeout, read-only transactions, the store's
schema as the search path); a pooled connection is pinged only when it may have died while idle
(``checkout``).
"""

from __future__ import annotations

import importlib.util
import re
import select
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, Engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL
from sqlalchemy.pool import ConnectionPoolEntry

from ...engine import (
    LISTEN_OPTION,
    POOLER_OPTION,
    SCHEMA_OPTION,
    SessionPolicy,
    create_store_engine,
    resolve_schema,
    wait_ms,
)
from ...engine_registry import engine_for
from ...tenancy import TENANT_SETTING

#: A pooled PostgreSQL connection idle for longer than this (seconds) is pinged, one round trip,
#: before it is used again; one used more recently is checked without a round trip
#: (``_postgresql_checkout``).
POSTGRES_PING_IDLE: Final = 30.0


def make(policy: SessionPolicy, kwargs: dict[str, Any]) -> Engine:
    """The engine of the store's server: each session set up by ``session_sql`` (its schema as
    the search path) or, behind a pooler in transaction mode, each transaction by ``begin``
    with ``TransactionSettings`` and no server-side prepared statement; a pooled connection
    pinged only when it may have died while idle (``checkout``)."""
    url, own_schema, kwargs = policy.url, policy.schema, dict(kwargs)
    if policy.pooled:  # no statement kept by the server: each transaction may find another session
        own_schema = own_schema or resolve_schema(options_schema(url), url)
        kwargs["connect_args"] = {**kwargs.get("connect_args", {}), "prepare_threshold": None}
    session = session_sql(policy.lock_timeout, read_only=policy.read_only, schema=own_schema)
    if not policy.is_async and importlib.util.find_spec("greenlet") is not None:
        # The async API's module, imported here at startup rather than on the event loop by its
        # first call (an import there stalls the loop); without greenlet it cannot be imported.
        import sqlalchemy.ext.asyncio  # noqa: F401

    def postgresql_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        connect(dbapi_connection, session)

    if policy.is_async:  # what create_async_engine does: its sync engine, on the async driver's
        driver = engine_for(url.get_backend_name()).async_driver
        url = url.set(drivername=f"{url.get_backend_name()}+{driver}")
        kwargs["_is_async"] = True
    engine = create_store_engine(url, kwargs)
    # The async API's engine too: its coroutines cost the server what the sync calls cost.
    if not kwargs.get("pool_pre_ping"):
        event.listen(engine, "checkin", checkin)
        event.listen(engine, "checkout", lambda c, r, _: checkout(engine, c, r))
    engine.update_execution_options(**{SCHEMA_OPTION: own_schema, LISTEN_OPTION: policy.listen_url})
    if policy.pooled:
        settings = TransactionSettings(own_schema, wait_ms(policy.lock_timeout), policy.read_only)
        # SQLAlchemy's own transactions (migrations, revision checks) make them as they begin.
        event.listen(engine, "begin", lambda conn: begin(conn, settings))
        event.listen(engine, "do_connect", pooled_connect)
        if own_schema is not None:  # after the dialect's first look (current_schema(): public)
            schema = own_schema
            event.listen(engine, "connect", lambda _c, _r: default_schema(engine, schema))
        engine.update_execution_options(**{POOLER_OPTION: settings})
        return engine
    # First of the connect listeners, so the dialect reads the store's schema as the default
    # schema (``current_schema()``) when it first connects: reflection looks there.
    event.listen(engine, "connect", postgresql_connect, insert=True)
    return engine


def pooled_settings(bind: Connection | Engine) -> TransactionSettings | None:
    """The per-transaction settings of a store reached through a transaction pooler (made by
    ``make`` with ``pooled``), else None."""
    settings = bind.get_execution_options().get(POOLER_OPTION)
    return settings if isinstance(settings, TransactionSettings) else None


def store_file(url: URL) -> Path | None:
    """None: a server keeps the store."""
    return None


def migrating(conn: Connection) -> nullcontext[None]:
    """Nothing to hold around a migration (its DDL is transactional)."""
    return nullcontext()


def migrated(conn: Connection) -> None:
    """Nothing to do after a migration."""


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
