"""One transaction of the repository's fast path on a DBAPI connection (``sqlexec``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from typing import Any, TypeVar

from sqlalchemy.engine import Dialect

from ..connections import Connections, roll_back
from ..sqlexec import Answer, Cursor, Prepared
from ..tenancy import TENANT_SETTING
from .feed import append_changes
from .strategy import Begin, EngineStrategy

T = TypeVar("T")


@contextmanager
def _pipeline(driver: Any) -> Iterator[Any]:
    """psycopg's pipeline mode on ``driver``. A failure inside it (a statement's error comes
    back while later ones are sent, a connection lost) is raised as it is, once: psycopg's exit
    is left only after it was caught here, the aborted pipeline synced first. Left the failure,
    psycopg's exit would log its own error as a warning ("error ignored terminating
    <psycopg.Pipeline [BAD]>: the connection is lost", or "pipeline aborted"), which a host
    without logging set up prints on stderr; told none, it raises that error, dropped here."""
    failure: BaseException | None = None
    try:
        with driver.pipeline() as pipeline:
            try:
                yield pipeline
            except BaseException as exc:
                failure = exc
                with suppress(Exception):
                    pipeline.sync()
    except Exception:
        if failure is None:
            raise
    if failure is not None:
        raise failure


def use_tenant(engine: EngineStrategy, connection: Any, cursor: Cursor, tenant: str) -> bool:
    """Give ``cursor`` the store's ``tenant`` (``tenancy``); on an engine that keeps it in the
    session too (``EngineStrategy.tenant_sql``: PostgreSQL's row-level security), set it there
    once per connection and tenant. True when a statement was sent: where the driver opened a
    transaction for it, the caller commits it."""
    cursor.tenant = tenant
    statement = engine.tenant_sql(tenant)
    if statement is None or connection.info.get(TENANT_SETTING) == tenant:
        return False
    connection.info[TENANT_SETTING] = tenant
    cursor.raw(*statement)
    return True


def begin_transaction(
    engine: EngineStrategy,
    cursor: Cursor,
    begin: Begin,
    *,
    tenant: str,
    lock_wait: float | None = None,
) -> None:
    """The first statements of a transaction on ``cursor``: ``begin``, a lock wait of
    ``lock_wait`` seconds where given, and the engine's settings for the transaction
    (``EngineStrategy.transaction_sql``: a store behind a transaction pooler), all sent without
    waiting where the cursor is in a pipeline. A lock wait of the connection's own (SQLite's
    busy timeout) is set before its BEGIN; a transaction's own (``SET LOCAL``) after it."""
    settings = engine.transaction_sql(tenant, lock_wait)
    if lock_wait is not None and settings is None:
        cursor.raw(engine.lock_wait_sql(lock_wait))
    for statement in begin:
        cursor.raw(statement)
    if settings is not None:
        cursor.raw(*settings)


def forget_tenant(connection: Any) -> None:
    """After a failure: the session's tenant is set again on the connection's next use."""
    info = getattr(connection, "info", None)
    if info is not None:
        info.pop(TENANT_SETTING, None)


def run_transaction(
    connections: Connections,
    dialect: Dialect,
    work: Callable[[Cursor], T],
    *,
    engine: EngineStrategy,
    begin: Begin,
    lock_wait: float | None,
    lock_timeout: float,
    autocommit: bool,
    pipelined: bool = True,
    tenant: str,
    after_commit: tuple[Prepared, Callable[[Answer], None]] | None = None,
) -> T:
    """Run ``work`` on a connection of ``connections``, committed if it returns, else rolled
    back; the connection is given back either way (or discarded, if it cannot be reused).

    ``engine`` says how the engine runs a transaction (``EngineStrategy``). ``begin`` is the
    first statement of the transaction: the write one for writes (SQLite: ``BEGIN IMMEDIATE``),
    the snapshot one for a read of several statements that must see one snapshot (SQLite:
    ``BEGIN``; PostgreSQL: REPEATABLE READ), None for a single-statement read (the engine's
    policy, ``acti_store.engine``) and for PostgreSQL's writes.
    ``lock_wait`` (seconds) bounds this transaction's lock waits instead of ``lock_timeout``.
    ``tenant``: the tenant its statements bind (``tenancy``); an engine that also keeps it in the
    session (PostgreSQL's row-level security, ``EngineStrategy.tenant_sql``) has it set on the
    connection first, once per connection and tenant.
    ``autocommit`` (PostgreSQL reads): the driver sends no BEGIN of its own, so a read of one
    statement is one round trip, and a snapshot's ``begin`` is one ``BEGIN ...`` statement.

    A PostgreSQL write on psycopg runs in pipeline mode unless not ``pipelined`` (a bulk
    write: ``COPY`` is not allowed in a pipeline), its BEGIN and COMMIT sent as statements:
    the transaction waits only for the answers ``work`` reads (``Cursor``), then once for the
    rest and the COMMIT; the answers of ``Cursor.later`` are read then. On psycopg's async
    driver (the async API's twin, in the greenlet bridge) the same: the engine's
    ``pipeline_connection`` says which connection, if any, runs a write in pipeline mode.
    ``after_commit``: a statement run right after the commit (in a pipeline, in the commit's
    round trip) and what to do with its answer once the transaction is over.
    """
    connection = connections.take()
    driver = engine.driver_connection(connection)
    # The connection whose pipeline mode a write runs in, if the engine's driver has one.
    piped = engine.pipeline_connection(connection) if pipelined and not autocommit else None
    pipelined = piped is not None
    own_transaction = autocommit or pipelined
    if own_transaction:
        driver.autocommit = True
    raw_cursor = piped.cursor() if piped is not None else connection.cursor()
    # A lock wait of the connection's own (SQLite's busy timeout): put back before it is reused.
    restore = lock_wait is not None and engine.lock_wait_per_connection
    cursor = engine.cursor(raw_cursor, dialect, connection)
    try:
        with _pipeline(piped) if piped is not None else nullcontext() as pipeline:
            cursor.pipeline = pipeline
            use_tenant(engine, connection, cursor, tenant)  # before BEGIN: the session's
            if pipelined:
                cursor.raw("BEGIN")
            begin_transaction(engine, cursor, begin, tenant=tenant, lock_wait=lock_wait)
            result = work(cursor)
            if cursor.changes:  # last: the counter's lock is held only for the commit
                append_changes(cursor, engine.feed_statements())
            if restore:
                cursor.raw(engine.lock_wait_sql(lock_timeout))
            if pipelined:
                cursor.raw("COMMIT")  # answered with the rest when the pipeline ends
            elif begin or engine.driver_begins:  # else no transaction was open
                connection.commit()
            answer = None if after_commit is None else cursor.later(after_commit[0])
        cursor.settle()
        if answer is not None and after_commit is not None:
            after_commit[1](answer)
        if own_transaction:
            driver.autocommit = False
    except BaseException:
        forget_tenant(connection)  # the transaction that set it may have rolled it back
        cursor.settle(failed=True)
        raw_cursor.close()  # ends a half-read statement: it would hold its snapshot
        if restore:  # its busy timeout may still be the shorter one: not reused
            connections.discard(connection)
        else:
            roll_back(connections, connection, autocommit=own_transaction)
        raise
    raw_cursor.close()
    connections.give(connection)
    return result
