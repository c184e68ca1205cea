"""``SqlAgentRepository``: the repository on SQLAlchemy, assembled from its roles.

Each role holds what its code is about, with its statements: ``roles.agents`` (``statements``),
``roles.runs`` (``recording``), ``roles.versions`` (``version_statements``), ``roles.search``
(``search``, ``paging``) and ``roles.interchange`` (``paging``, ``bulk``). They share one
``core.StoreCore`` (the engine, its strategy, the clock, the mirror and the one way to read and
write); this class puts them together as the port (``port.RepositoryPort``) with its async API
(``interface.AgentRepository``). What differs between engines is in ``engines``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial, update_wrapper
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine

from ..engine import (
    LISTEN_OPTION,
    LOCK_TIMEOUT_DEFAULT,
    is_pooled,
    make_async_engine,
    store_schema,
)
from ..engine_registry import engine_for
from ..tenancy import DEFAULT_TENANT, check_tenant, resolve_create_tenant
from .arguments import retention, store_options
from .asynchronous import Dispatch, GreenletDispatch, StoreThreads
from .core import DIRECT, MAX_REPLICA_LAG, Role, StoreCore, Waits
from .interface import AgentRepository, Clock, Mirror
from .logins import bind_login, login_bindings, unbind_login
from .port import RepositoryPort
from .roles.agents import Agents
from .roles.changes import Changes
from .roles.interchange import Interchange
from .roles.labels import Labels
from .roles.runs import Runs
from .roles.search import Search
from .roles.versions import Versions
from .tenant_admin import (
    create_tenant,
    delete_tenant,
    resolve_mode,
    set_tenant,
    set_tenant_mode,
    tenant_limits,
    tenant_mode,
    tenant_rows,
)
from .tenants import register_tenant, tenant_counts

P = ParamSpec("P")
R = TypeVar("R", bound=Role)
T = TypeVar("T")


def _by(role: str, method: Callable[Concatenate[R, P], T]) -> Callable[Concatenate[Any, P], T]:
    """The repository's method that is ``method`` of its role ``role`` (an attribute)."""

    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return method(getattr(self, role), *args, **kwargs)

    update_wrapper(call, method)
    name = method.__name__
    call.__qualname__ = f"SqlAgentRepository.{name}"
    # The port's word on what it does and raises, unless the role says more.
    call.__doc__ = method.__doc__ or getattr(RepositoryPort, name).__doc__
    return call


class SqlAgentRepository(AgentRepository):
    """``AgentRepository`` on SQLAlchemy: SQLite (default), PostgreSQL or MariaDB/MySQL.

    Every write is one transaction, retried when the engine reports a lock or serialization
    conflict, all within ``lock_timeout`` seconds (``deadline``); nothing is written by an
    operation that fails. Frequent operations run prepared statements on a DBAPI connection
    (``sqlexec``: kept and reused for a SQLite file, from the pool otherwise); search and the rare
    paths use SQLAlchemy Core connections from the engine's pool. The coroutines (``aget``, ...)
    run on an engine of this URL on its async driver where the engine has one (its registry
    entry's ``async_driver``: PostgreSQL's psycopg), else on the store's threads; ``waits``: how
    pauses and mirror writes wait (``core.Waits``).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        mirror: Mirror | None = None,
        read_only: bool = False,
        lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
        keep_versions: int | None = None,
        waits: Waits = DIRECT,
        tenant: str = DEFAULT_TENANT,
        keep_changes: timedelta | None = None,
        replicas: Sequence[Engine] = (),
        max_replica_lag: float = MAX_REPLICA_LAG,
        create_tenant: bool | None = None,
    ) -> None:
        read_only, lock_timeout, keep_versions = store_options(
            read_only, lock_timeout, keep_versions
        )
        tenant = check_tenant(tenant)
        create_tenant = resolve_create_tenant(create_tenant)
        keep_changes = retention(keep_changes)
        core = StoreCore(
            engine,
            clock=clock,
            mirror=mirror,
            read_only=read_only,
            lock_timeout=lock_timeout,
            keep_versions=keep_versions,
            waits=waits,
            tenant=tenant,
            keep_changes=keep_changes,
            replicas=replicas,
            max_replica_lag=max_replica_lag,
            create_tenant=create_tenant,
        )
        core.store = self
        self._core = core
        self._agents = Agents(core)
        self._runs = Runs(core)
        self._versions = Versions(core)
        self._labels = Labels(core)
        self._search = Search(core)
        self._interchange = Interchange(core)
        self._changes = Changes(core)

    # -- the store ---------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        return self._core.engine

    @property
    def location(self) -> str:
        return self._core.location

    def tenants(self) -> dict[str, int]:
        """Every tenant of the store (whatever this store's own), by name, with its number of
        agents: an operator's view (``acti-store tenants``). The default tenant is always
        listed; another once a store was opened for it to write."""
        return tenant_counts(self._core)

    def create_tenant(self, name: str, *, max_agents: int | None = None) -> None:
        """Register tenant ``name`` (an operator's call, whatever this store's own tenant),
        optionally with a limit on its agents; ``TenantExistsError`` if it is registered."""
        create_tenant(self._core, name, max_agents)

    def set_tenant(self, name: str, *, max_agents: int | None) -> None:
        """Set the most agents tenant ``name`` may hold (None: no limit): a create, clone or
        import that would pass it is refused (``TenantLimitError``); ``TenantNotFoundError``
        for an unregistered tenant."""
        set_tenant(self._core, name, max_agents=max_agents)

    def tenant_limits(self) -> dict[str, int | None]:
        """Each registered tenant, by name, with its limit on agents (None: none)."""
        return tenant_limits(self._core)

    def tenant_rows(self, name: str) -> dict[str, int]:
        """The rows tenant ``name`` holds, per table: what ``delete_tenant`` would erase."""
        return tenant_rows(self._core, name)

    def delete_tenant(self, name: str) -> dict[str, int]:
        """Erase tenant ``name``: every row of it in every table (agents, histories, versions,
        labels, the change feed and its checkpoints) and its registration, in one transaction;
        the rows erased, per table. The default tenant is refused (``InvalidInputError``); a
        name neither registered nor holding rows raises ``TenantNotFoundError``."""
        return delete_tenant(self._core, name)

    def tenant_mode(self) -> str:
        """The store's recorded tenant mode: ``strict`` (a write for an unregistered tenant is
        refused) or ``open`` (it registers the tenant)."""
        return tenant_mode(self._core)

    def set_tenant_mode(self, mode: str) -> None:
        """Record the store's tenant mode, ``strict`` or ``open``, for the stores opened later
        without ``create_tenant=`` or ``ACTI_STORE_TENANTS``."""
        set_tenant_mode(self._core, mode)

    def register_tenant(self) -> None:
        """List this store's tenant among the store's tenants (``tenants``); ``open_repository``
        does it for a store it opens to write, unless the store is strict."""
        resolve_mode(self._core)
        register_tenant(self._core)

    def bind_login(self, role: str, tenant: str) -> None:
        """Bind the database login ``role`` to ``tenant``: row-level security then holds its
        sessions to that tenant's rows whatever they set (an operator's call, run as the
        store's owner; PostgreSQL only: ``LoginBindingError`` elsewhere, or for a login that
        row-level security does not hold). ``repository.logins``."""
        bind_login(self._core, role, tenant)

    def unbind_login(self, role: str) -> str:
        """Take the login ``role``'s binding away; the tenant it was bound to
        (``LoginNotBoundError`` if none). Run as the store's owner."""
        return unbind_login(self._core, role)

    def login_bindings(self) -> dict[str, str]:
        """The tenant-bound logins, login -> tenant (the owner reads all of them, another role
        its own only)."""
        return login_bindings(self._core)

    @property
    def tenant(self) -> str:
        """The tenant whose agents this store sees and touches (``tenancy``)."""
        return self._core.tenant

    @property
    def keep_changes(self) -> timedelta | None:
        """How long the change feed keeps a change (None: for good)."""
        return self._core.keep_changes

    @property
    def keep_versions(self) -> int | None:
        """Snapshots each agent keeps besides its current and labelled ones (None: all)."""
        return self._core.keep_versions

    @property  # the port's attribute, kept in the core
    def read_only(self) -> bool:
        return self._core.read_only

    @read_only.setter
    def read_only(self, read_only: bool) -> None:
        self._core.read_only = read_only

    @property  # the port's attribute, kept in the core
    def mirror(self) -> Mirror | None:
        return self._core.mirror

    @mirror.setter
    def mirror(self, mirror: Mirror | None) -> None:
        self._core.mirror = mirror

    def now(self) -> datetime:
        return self._core.now()

    def close(self) -> None:
        """Release connections: the store's, and those of its coroutines' async engines (a run
        started from sync code records on the runs' loop)."""
        self._core.close()
        if self._dispatch is not None:
            self._dispatch.close()

    def _make_dispatch(self) -> Dispatch:
        """The coroutines run on an ``AsyncEngine`` per loop where the engine has an async
        driver (PostgreSQL), else on the store's threads (SQLite, MariaDB): one way each."""
        core = self._core
        if engine_for(core.engine.dialect.name).async_driver is None:
            return super()._make_dispatch()
        options: dict[str, Any] = {"read_only": self.read_only, "lock_timeout": core.lock_timeout}
        # The store's schema, or "" for the default one (not ACTI_STORE_SCHEMA read again);
        # the same pooler and listening URL (not ACTI_STORE_POOLER read again either).
        schema = store_schema(core.engine) or ""
        engine = partial(
            make_async_engine,
            core.engine.url,
            schema=schema,
            pooler="transaction" if is_pooled(core.engine) else "none",
            listen_url=core.engine.get_execution_options().get(LISTEN_OPTION),
            **options,
        )
        options |= {
            "clock": core.clock,
            "mirror": core.mirror,
            "keep_versions": self.keep_versions,
            "tenant": self.tenant,
            "create_tenant": core.create_tenant,
            "keep_changes": core.keep_changes,
        }
        return GreenletDispatch(engine, partial(type(self), **options), self, StoreThreads())

    # -- the roles' methods ------------------------------------------------------------------------

    create = _by("_agents", Agents.create)
    get = _by("_agents", Agents.get)
    exists = _by("_agents", Agents.exists)
    list_agents = _by("_agents", Agents.list_agents)
    iter_agents = _by("_agents", Agents.iter_agents)
    list_names = _by("_agents", Agents.list_names)
    update_returning_previous = _by("_agents", Agents.update_returning_previous)
    delete = _by("_agents", Agents.delete)
    clone = _by("_agents", Agents.clone)

    search = _by("_search", Search.search)
    count = _by("_search", Search.count)
    search_page = _by("_search", Search.search_page)
    count_by_stratum = _by("_search", Search.count_by_stratum)
    first_by_stratum = _by("_search", Search.first_by_stratum)

    record_execution = _by("_runs", Runs.record_execution)
    get_history = _by("_runs", Runs.get_history)
    get_with_history = _by("_runs", Runs.get_with_history)
    execution_stats = _by("_runs", Runs.execution_stats)
    archived_history = _by("_runs", Runs.archived_history)

    versions = _by("_versions", Versions.versions)
    get_version = _by("_versions", Versions.get_version)
    diff = _by("_versions", Versions.diff)
    labels = _by("_versions", Versions.labels)
    label_history = _by("_versions", Versions.label_history)
    version_stats = _by("_versions", Versions.version_stats)
    version_log = _by("_versions", Versions.version_log)
    rollback = _by("_versions", Versions.rollback)
    set_label = _by("_labels", Labels.set_label)
    remove_label = _by("_labels", Labels.remove_label)
    rollback_label = _by("_labels", Labels.rollback_label)
    label_weights = _by("_labels", Labels.label_weights)
    resolve = _by("_labels", Labels.resolve)
    compare_versions = _by("_labels", Labels.compare_versions)
    protect_label = _by("_labels", Labels.protect_label)
    unprotect_label = _by("_labels", Labels.unprotect_label)
    label_gates = _by("_labels", Labels.label_gates)
    prune_versions = _by("_versions", Versions.prune_versions)
    changes = _by("_changes", Changes.changes)
    last_change = _by("_changes", Changes.last_change)
    prune_changes = _by("_changes", Changes.prune_changes)
    checkpoint = _by("_changes", Changes.checkpoint)
    save_checkpoint = _by("_changes", Changes.save_checkpoint)
    watch = _by("_changes", Changes.watch)
    awatch = _by("_changes", Changes.awatch)

    iter_export = _by("_interchange", Interchange.iter_export)
    iter_export_versions = _by("_interchange", Interchange.iter_export_versions)
    bulk_put = _by("_interchange", Interchange.bulk_put)
    bulk_put_stream = _by("_interchange", Interchange.bulk_put_stream)
