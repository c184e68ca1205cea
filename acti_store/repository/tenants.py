"""The tenants of a store: each registered when a store is first opened for it to write, and
listed with its agent count (``acti-store tenants``)."""

from __future__ import annotations

from contextlib import suppress
from typing import Any, Final

from sqlalchemy import bindparam, exists, func, insert, literal, select

from ..errors import AgentExistsError
from ..schema import UtcDateTime, agents, change_counters, tenants
from ..sqlexec import Cursor, Prepared
from ..tenancy import DEFAULT_TENANT, TENANT, tenant_param
from .core import StoreCore

_NAME = bindparam("name", type_=tenants.c.name.type)
#: The tenant ``name``, registered unless it is already.
REGISTER: Final = Prepared(
    insert(tenants).from_select(
        ["name", "created_at"],
        select(_NAME, bindparam("at", type_=UtcDateTime())).where(
            ~exists(select(tenants.c.name).where(tenants.c.name == _NAME))
        ),
    )
)
#: The tenant's counter row at 0 changes, unless it has one (``tenant_admin``).
COUNTER_ROW: Final = Prepared(
    insert(change_counters).from_select(
        ["last_seq", "pruned_through", TENANT],
        select(literal(0), literal(0), tenant_param()).where(
            ~exists(select(change_counters.c.tenant))
        ),
    )
)
_NAMES: Final = Prepared(select(tenants.c.name))
_REGISTERED: Final = Prepared(select(tenants.c.name).where(tenants.c.name == _NAME))
#: The agents of the store's tenant (``tenancy.scoped`` adds the condition).
AGENT_COUNT: Final = Prepared(select(func.count()).select_from(agents))


def register_tenant(core: StoreCore) -> None:
    """Register the store's tenant (the default tenant is always listed: not registered), unless
    the store was opened strict (``create_tenant=False``, ``ACTI_STORE_TENANTS=strict``); a store
    opened without either follows the store's recorded mode (``tenant_admin.resolve_mode``)."""
    if core.tenant == DEFAULT_TENANT or core.read_only:
        return
    if core.read(lambda cursor: cursor.first(_REGISTERED, {"name": core.tenant})) is not None:
        return  # every open after the first: a read, no write transaction
    if core.create_tenant is False:  # a strict store: its writes refuse the tenant (tenant_admin)
        return
    values = {"name": core.tenant, "at": core.now()}
    with suppress(AgentExistsError):  # registered meanwhile by another process: as wanted
        core.write(lambda cursor: _register(cursor, core, values), name=core.tenant)


def _register(cursor: Cursor, core: StoreCore, values: dict[str, Any]) -> None:
    """The store's tenant registered, with its counter row where no write moves the counter
    (SQLite: ``engines.sqlite``), so that the tenant holds the rows it held before."""
    cursor.execute(REGISTER, values)
    if core.kind.writes_one_at_a_time:
        cursor.execute(COUNTER_ROW)


def tenant_counts(core: StoreCore) -> dict[str, int]:
    """Each tenant of the store, by name, with its number of agents. Each count is read as that
    tenant (PostgreSQL's row-level security shows a session one tenant's rows at a time)."""
    names = core.read(lambda cursor: [row[0] for row in cursor.all(_NAMES)])
    counts: dict[str, int] = {}
    for tenant in sorted({DEFAULT_TENANT, *names}):
        row = core.read(lambda cursor: cursor.first(AGENT_COUNT), tenant=tenant)
        counts[tenant] = int(row[0]) if row is not None else 0
    return counts
