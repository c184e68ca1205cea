"""The doctor's PostgreSQL checks: a transaction pooler in front of the server, the role's
row-level security, ``pg_trgm``, and each read replica with its lag.

A pooler in transaction mode hands each transaction of a client connection to whichever server
session is free: one client connection is seen with several backend pids, or two open client
connections with the same one (``pooler``). Without a pooler (or with one in session mode) a
client connection keeps one backend for its life.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Final

from sqlalchemy import Connection, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.pool import NullPool

from ...dberrors import unreachable
from ...doctor.findings import EngineChecks, Finding, Target, error, ok, warning
from ...engine import make_engine, resolve_url, store_location
from ...errors import AgentStoreError

#: How long the pooler probe waits for a client connection's statement that a pooler may hold
#: back until a server session is free (seconds).
PROBE_WAIT: Final = 2.0
#: How many statements one probe connection sends in autocommit, looking for a new backend.
PROBE_ROUNDS: Final = 4
#: A replica whose last replayed transaction is older than this (seconds) while it has WAL
#: left to replay is a warning: the store's reads would go to the primary meanwhile.
REPLICA_LAG_MAX: Final = 1.0
#: How to open a store behind a transaction pooler, every way in.
POOLER_OPTION: Final = (
    "open the store with --pooler transaction (ACTI_STORE_POOLER=transaction, "
    'open_repository(url, pooler="transaction"))'
)


def _version(conn: Connection) -> str:
    return str(conn.execute(text("SHOW server_version")).scalar_one())


def pooler(target: Target) -> list[Finding]:
    """Whether a pooler in transaction mode is in front of the server, against the store's
    configured pooler mode (``Target.pooled``)."""
    seen = _pooled_backends(target)
    configured = target.pooled
    if seen is None:
        if configured:
            return [
                ok(
                    "pooler",
                    "configured for a transaction pooler; none detected (each client "
                    "connection kept one server session)",
                    "nothing to do: the setting also works on a direct connection",
                )
            ]
        return [ok("pooler", "none detected: each client connection kept one server session")]
    found = f"a pooler in transaction mode is in front of the server ({seen})"
    if configured:
        return [ok("pooler", f"{found}, and the store is configured for it")]
    return [
        error(
            "pooler",
            f"{found}, and the store is not configured for it: tenants' settings and prepared "
            "statements would leak between clients",
            POOLER_OPTION,
        )
    ]


def _pooled_backends(target: Target) -> str | None:
    """What shows a pooler in transaction mode, or None when each client connection kept its
    own server session: one client connection in autocommit a few times, then two, each
    holding a transaction while the other asks for a session, in turn."""
    clients: list[_Client] = []

    def second() -> int:  # connected while the first holds its session: a pooler may wait
        clients.append(_Client(target))
        return clients[-1].pid()

    try:
        clients.append(_Client(target))
        first = clients[0]
        for _ in range(PROBE_ROUNDS):
            first.pid()
        found = _while_held(first, second)
        if found is None and not first.closed and len(clients) == 2:
            found = _while_held(clients[1], first.pid)
        if found is not None:
            return found
        for client in clients:
            if len(client.seen) > 1:
                return f"one client connection was served by backends {_pids(client.seen)}"
        return None
    finally:
        for client in clients:
            client.close()


def _while_held(holder: _Client, ask: Callable[[], int]) -> str | None:
    """Another client connection asks for a server session (``ask``) while ``holder`` keeps its
    own in a transaction; then ``holder`` commits. A pooler in transaction mode gives the other
    a free session, or (a pool of one) the holder's once it commits; a pooler in session mode
    with no free session waits for the holder to disconnect (``holder`` is closed then)."""
    with holder.held() as held:
        asked = _in_background(ask)
        answer = _within(asked, PROBE_WAIT)
    if answer is None:
        answer = _within(asked, PROBE_WAIT)
    if answer is None:
        holder.close()
        return None
    if answer == held:
        return f"two open client connections were served by backend {held}"
    return None


def _in_background(ask: Callable[[], int]) -> Future[int]:
    """``ask``'s answer, asked in a daemon thread: one a pooler holds back never keeps the
    process from ending."""
    future: Future[int] = Future()

    def run() -> None:
        try:
            future.set_result(ask())
        except BaseException as exc:  # handed to whoever waits for the answer
            future.set_exception(exc)

    threading.Thread(target=run, name="acti-store-doctor-probe", daemon=True).start()
    return future


def _within(future: Future[int], seconds: float) -> int | None:
    try:
        return future.result(timeout=seconds)
    except FutureTimeout:
        return None


def _pids(pids: set[int]) -> str:
    return " and ".join(str(pid) for pid in sorted(pids))


class _Client:
    """One client connection of the probe (psycopg's own, in autocommit, preparing nothing):
    the backend pids it was served by."""

    def __init__(self, target: Target) -> None:
        self._record = target.engine.raw_connection()
        self._conn: Any = self._record.driver_connection
        assert self._conn is not None, "a connection just made has its driver's"
        self._conn.autocommit = True
        self._conn.prepare_threshold = None  # a pooler may not keep a prepared statement
        self.seen: set[int] = set()

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def pid(self) -> int:
        """The backend serving this statement."""
        pid = int(self._conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        self.seen.add(pid)
        return pid

    def held(self) -> _Held:
        return _Held(self)

    def transaction(self) -> Any:
        return self._conn.transaction()

    @property
    def closed(self) -> bool:
        return bool(self._conn.closed)

    def close(self) -> None:
        if not self.closed:
            self._record.invalidate()  # never back to a pool: the probe's connections end


class _Held:
    """A transaction of ``client`` held open: entered, the pid of its backend."""

    def __init__(self, client: _Client) -> None:
        self._client = client
        self._transaction = client.transaction()

    def __enter__(self) -> int:
        self._transaction.__enter__()
        return self._client.pid()

    def __exit__(self, *exc: Any) -> None:
        self._transaction.__exit__(*exc)


def row_security(target: Target) -> list[Finding]:
    """A superuser or a role with ``BYPASSRLS`` skips row-level security: the store's own
    statements still keep tenants apart, the database no longer does."""
    with target.engine.connect() as conn:
        role, superuser, bypass = conn.execute(
            text(
                "SELECT rolname, rolsuper, rolbypassrls FROM pg_catalog.pg_roles "
                "WHERE rolname = current_user"
            )
        ).one()
    if not (superuser or bypass):
        return [ok("row-level security", f"applies to the role {role}")]
    what = "a superuser" if superuser else "a role with BYPASSRLS"
    return [
        warning(
            "row-level security",
            f"the role {role} is {what}: row-level security does not apply to it, so the "
            "database no longer keeps tenants apart (the store's statements still do)",
            "connect the application as an ordinary role (NOSUPERUSER NOBYPASSRLS), as "
            "docs/tenants.md shows",
        )
    ]


def trigram(target: Target) -> list[Finding]:
    """``pg_trgm``: the substring search's indexes (revision 0003) need it; without it a search
    by text scans every agent."""
    with target.engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT n.nspname, e.extversion FROM pg_catalog.pg_extension e "
                "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace "
                "WHERE e.extname = 'pg_trgm'"
            )
        ).first()
    if found is not None:
        return [ok("pg_trgm", f"version {found[1]}, in schema {found[0]}")]
    schema = target.schema or "public"
    return [
        error(
            "pg_trgm",
            "the extension is not installed: a search by text scans every agent",
            f"as a superuser, before the store's first migration: CREATE EXTENSION pg_trgm "
            f"SCHEMA {schema} (docs/tenants.md)",
        )
    ]


def replicas(target: Target) -> list[Finding]:
    """Each read replica: reachable, a standby of the store's server, and how far behind."""
    return [_replica(target, url) for url in target.replicas]


def _replica(target: Target, given: str) -> Finding:
    check = "replica"
    try:
        url = resolve_url(given)
    except AgentStoreError as exc:
        return error(check, str(exc), "give --replica a PostgreSQL URL")
    where = store_location(url)
    if url.get_backend_name() != "postgresql":
        return error(check, f"{where} is not a PostgreSQL URL", "give --replica a standby's URL")
    try:
        replica = make_engine(url, read_only=True, poolclass=NullPool)
    except AgentStoreError as exc:
        return error(check, f"{where}: {exc}", "give --replica a standby's URL")
    try:
        with replica.connect() as conn:
            state = conn.execute(
                text(
                    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, "
                    "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
                )
            ).one()
            system = _system(conn)
        standby, replayed, age = bool(state[0]), state[1], state[2]
    except (sa_exc.SQLAlchemyError, OSError) as exc:
        return error(
            check,
            f"{where}: {unreachable(exc)}",
            "start the replica, or correct its URL; reads go to the primary meanwhile",
        )
    finally:
        replica.dispose()
    if not standby:
        return error(
            check,
            f"{where} is not a standby (pg_is_in_recovery() is false): a write there would not "
            "reach the store",
            "give --replica (ACTI_STORE_REPLICA_URLS) the URL of a streaming standby of the "
            "store's server",
        )
    with target.engine.connect() as conn:
        position = conn.execute(
            text(
                "SELECT pg_current_wal_lsn()::text, "
                "pg_wal_lsn_diff(pg_current_wal_lsn(), CAST(:replayed AS pg_lsn))::bigint"
            ),
            {"replayed": replayed},
        ).one()
        own = _system(conn)
    primary, behind = str(position[0]), int(position[1])
    if system is not None and own is not None and system != own:
        return error(
            check,
            f"{where} is a standby of another server (system {system}, the store's is {own})",
            "give --replica a standby of the store's server",
        )
    lag = f"{max(behind, 0)} bytes behind {primary}" + (
        "" if age is None else f", last transaction replayed {age:.1f} s ago"
    )
    if behind > 0 and (age is None or age > REPLICA_LAG_MAX):
        return warning(
            check,
            f"{where} is a standby, {lag}: reads go to the primary until it catches up",
            "check the replica's replication (pg_stat_replication on the primary)",
        )
    return ok(check, f"{where} is a standby, {lag}")


def _system(conn: Connection) -> int | None:
    """The server's database system identifier (a standby shares its primary's), or None when
    the role may not read it."""
    try:
        with conn.begin_nested():
            value: int = conn.execute(
                text("SELECT system_identifier FROM pg_catalog.pg_control_system()")
            ).scalar_one()
    except sa_exc.DBAPIError:
        return None
    return int(value)


CHECKS: Final = EngineChecks(
    label="PostgreSQL",
    version=_version,
    checks=(
        ("pooler", pooler),
        ("row-level security", row_security),
        ("pg_trgm", trigram),
        ("replica", replicas),
    ),
)
