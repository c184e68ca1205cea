"""A tenant's lifecycle: registered, limited, erased (the operator's view of the repository).

A store is strict or open (``agent_store_settings``, revision 0014; ``create_tenant=`` and
``ACTI_STORE_TENANTS`` override it for one store): a strict store refuses to write for a tenant
nobody registered (``create_tenant``), an open one registers it. The rule is checked where an
agent or a checkpoint is written, in that write's transaction (``admit``), which first locks the
tenant's row of the change feed's counters (a row every write of an agent moves before its
commit anyway, which the app role may update, unlike the registry) and then counts its agents
against its limit (``max_agents``): two writers of one tenant take turns there, so together they
never pass it, and a tenant being deleted (``delete_tenant`` takes the same lock first) is
either erased after the write or refused to it. Registering a tenant or setting its limit makes
its counter row, so that the lock is there from its first write. On SQLite the write
transaction holds the store's one write lock from its start, and no row is locked.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Table, bindparam, delete, func, insert, select, update

from ..errors import InvalidInputError, TenantExistsError, TenantLimitError, TenantNotFoundError
from ..schema import Base, UtcDateTime, agents, change_counters, store_settings, tenants
from ..sqlexec import Cursor, Prepared
from ..tenancy import (
    DEFAULT_TENANT,
    TENANT_MODES,
    TENANT_TABLES,
    check_tenant,
)
from ..validation import integer
from .core import StoreCore
from .tenants import AGENT_COUNT, REGISTER
from .tenants import COUNTER_ROW as _COUNTER

#: The setting of the tenant mode in ``agent_store_settings``.
MODE_SETTING: Final = "tenants"
#: Why the default tenant is not deleted: its agents are, one by one.
DEFAULT_KEPT: Final = (
    f"the default tenant '{DEFAULT_TENANT}' is always registered and is not deleted: delete "
    "its agents one by one (acti-store delete NAME)"
)

_NAME = bindparam("name", type_=tenants.c.name.type)
_LIMIT = bindparam("max_agents", type_=tenants.c.max_agents.type)
#: The tenant's counter row (``tenancy.scoped``), locked until the write's transaction ends.
_LOCK: Final = Prepared(select(change_counters.c.last_seq).with_for_update())
#: The tenant's limit, or no row: not registered.
_ADMIT: Final = Prepared(select(tenants.c.max_agents).where(tenants.c.name == _NAME))
_ROW: Final = Prepared(select(tenants.c.name, tenants.c.max_agents).where(tenants.c.name == _NAME))
_LIMITS: Final = Prepared(select(tenants.c.name, tenants.c.max_agents))
_CREATE: Final = Prepared(
    insert(tenants).values(
        name=_NAME, created_at=bindparam("at", type_=UtcDateTime()), max_agents=_LIMIT
    )
)
_SET_LIMIT: Final = Prepared(
    update(tenants).where(tenants.c.name == _NAME).values(max_agents=_LIMIT)
)
_UNREGISTER: Final = Prepared(delete(tenants).where(tenants.c.name == _NAME))
_MODE: Final = Prepared(select(store_settings.c.value).where(store_settings.c.name == MODE_SETTING))
_SET_MODE: Final = Prepared(
    update(store_settings)
    .where(store_settings.c.name == MODE_SETTING)
    .values(value=bindparam("value", type_=store_settings.c.value.type))
)
#: The tenant tables, each table before those it refers to (its rows go first).
ERASED_TABLES: Final[tuple[Table, ...]] = tuple(
    table for table in reversed(Base.metadata.sorted_tables) if table.name in TENANT_TABLES
)
#: Per table, its rows of the transaction's tenant (``tenancy.scoped`` adds the condition).
_COUNTS: Final = {t.name: Prepared(select(func.count()).select_from(t)) for t in ERASED_TABLES}
_ERASE: Final = {t.name: Prepared(delete(t)) for t in ERASED_TABLES}
#: The agents of the transaction's tenant, by id (whose text ``erase_text`` takes out).
_IDS: Final = Prepared(select(agents.c.id))


def resolve_mode(core: StoreCore) -> None:
    """At open, for a store that writes for a tenant other than the default one and was given no
    mode (``create_tenant``, ``ACTI_STORE_TENANTS``): the store's recorded one."""
    if core.create_tenant is None and not core.read_only and core.tenant != DEFAULT_TENANT:
        core.read(lambda cursor: _registers(cursor, core))


def _registers(cursor: Cursor, core: StoreCore) -> bool:
    """Whether a write for an unregistered tenant registers it: the store's choice when it was
    opened (``create_tenant``, ``ACTI_STORE_TENANTS``), else its recorded mode."""
    if core.create_tenant is None:
        row = cursor.first(_MODE)
        core.create_tenant = TENANT_MODES[row[0]] if row is not None else True
    return core.create_tenant


def admit(cursor: Cursor, core: StoreCore, adding: int) -> int | None:
    """In a write's transaction, before it adds ``adding`` agents to the store's tenant: its
    row locked, the tenant registered (or ``TenantNotFoundError`` in a strict store), and its
    agents counted against its limit (``TenantLimitError``). The limit (None: none).

    The lock's answer is not waited for (in a pipeline it goes with the registration's read:
    one round trip), and where a write transaction excludes every other writer from its start
    (SQLite) the lock is not taken at all."""
    tenant = core.tenant
    if not core.kind.writes_one_at_a_time:
        cursor.send(_LOCK)
    row = cursor.first(_ADMIT, {"name": tenant})
    if row is None:
        if tenant != DEFAULT_TENANT:
            if not _registers(cursor, core):
                raise TenantNotFoundError(tenant, writing=True)
            cursor.execute(REGISTER, {"name": tenant, "at": core.now()})
            if core.kind.writes_one_at_a_time:  # no write moves its counter there: made now
                cursor.execute(_COUNTER)
        return None
    limit: int | None = row[0]
    if limit is not None and adding:
        within_limit(cursor, core, limit, adding)
    return limit


def within_limit(cursor: Cursor, core: StoreCore, limit: int | None, adding: int = 0) -> None:
    """``TenantLimitError`` when the store's tenant holds (with ``adding`` more) over ``limit``
    agents; in the transaction that ``admit`` locked the tenant's row in."""
    if limit is None:
        return
    count = _count(cursor, AGENT_COUNT) + adding
    if count > limit:
        raise TenantLimitError(core.tenant, limit, count)


def _checked_limit(max_agents: int | None) -> int | None:
    return None if max_agents is None else integer(max_agents, "max_agents", 0)


def create_tenant(core: StoreCore, name: str, max_agents: int | None = None) -> None:
    """Register the tenant ``name`` (with a limit on its agents); ``TenantExistsError`` if it
    is registered already (the default tenant always is)."""
    name = check_tenant(name)
    limit = _checked_limit(max_agents)

    def work(cursor: Cursor) -> None:
        if name == DEFAULT_TENANT or cursor.first(_ROW, {"name": name}) is not None:
            raise TenantExistsError(name)
        cursor.execute(_CREATE, {"name": name, "at": core.now(), "max_agents": limit})
        cursor.execute(_COUNTER)

    core.write(work, name=name, tenant=name)


def set_tenant(core: StoreCore, name: str, *, max_agents: int | None) -> None:
    """Set the most agents tenant ``name`` may hold (None: no limit). A limit below what it
    holds now is kept (its next create is refused). ``TenantNotFoundError`` if it is not
    registered."""
    name = check_tenant(name)
    limit = _checked_limit(max_agents)

    def work(cursor: Cursor) -> None:
        if name == DEFAULT_TENANT:  # always registered, listed in the table once limited
            cursor.execute(REGISTER, {"name": name, "at": core.now()})
        if not cursor.execute(_SET_LIMIT, {"name": name, "max_agents": limit}):
            raise TenantNotFoundError(name)
        cursor.execute(_COUNTER)

    core.write(work, tenant=name)


def tenant_limits(core: StoreCore) -> dict[str, int | None]:
    """Each registered tenant (the default one always) with its limit (None: none)."""
    rows = core.read(lambda cursor: cursor.all(_LIMITS))
    limits: dict[str, int | None] = {DEFAULT_TENANT: None}
    limits.update((name, limit) for name, limit in rows)
    return dict(sorted(limits.items()))


def tenant_rows(core: StoreCore, name: str) -> dict[str, int]:
    """The rows tenant ``name`` holds, per tenant table (what ``delete_tenant`` erases)."""
    name = _deletable(name)
    return core.read(lambda cursor: _counted(cursor, name), tenant=name)


def _counted(cursor: Cursor, name: str) -> dict[str, int]:
    counts = {table: _count(cursor, count) for table, count in _COUNTS.items()}
    counts[tenants.name] = int(cursor.first(_ROW, {"name": name}) is not None)
    return counts


def _count(cursor: Cursor, statement: Prepared) -> int:
    row = cursor.first(statement)
    return 0 if row is None else int(row[0])


def _deletable(name: str) -> str:
    name = check_tenant(name)
    if name == DEFAULT_TENANT:
        raise InvalidInputError("tenant", [("tenant", DEFAULT_KEPT)])
    return name


def delete_tenant(core: StoreCore, name: str) -> dict[str, int]:
    """Erase tenant ``name``: every row it holds in every tenant table (agents, histories,
    versions, labels, the change feed, its counters and checkpoints), the text index's copy of
    its agents' names and descriptions, and its registration, in one transaction. The rows
    erased, per table (``agent_tenants``: 1). ``TenantNotFoundError`` if it is neither
    registered nor holds a row; ``InvalidInputError`` for the default tenant."""
    name = _deletable(name)

    erase_text = core.kind.erase_text

    def work(cursor: Cursor) -> dict[str, int]:
        cursor.first(_LOCK)  # a write of the tenant under way ends first (``admit``)
        ids = [{"agent_id": row[0]} for row in cursor.all(_IDS)] if erase_text else []
        erased = {table: cursor.execute(statement) for table, statement in _ERASE.items()}
        for statement in erase_text:
            if ids:
                cursor.executemany(statement, ids)
        erased[tenants.name] = cursor.execute(_UNREGISTER, {"name": name})
        if not any(erased.values()):
            raise TenantNotFoundError(name)
        return erased

    return core.write(work, tenant=name, pipelined=False)


def tenant_mode(core: StoreCore) -> str:
    """The store's recorded tenant mode: ``strict`` or ``open`` (``TENANT_MODES``)."""
    row = core.read(lambda cursor: cursor.first(_MODE))
    return "open" if row is None else str(row[0])


def set_tenant_mode(core: StoreCore, mode: str) -> None:
    """Record the store's tenant mode (``strict`` or ``open``): the stores opened from then on
    without ``create_tenant=`` or ``ACTI_STORE_TENANTS`` follow it."""
    if mode not in TENANT_MODES:
        raise InvalidInputError("mode", [("mode", f"{mode!r}: one of strict, open")])
    core.write(lambda cursor: cursor.execute(_SET_MODE, {"value": mode}))
