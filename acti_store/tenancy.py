"""Tenants: one store, many customers, each seeing and touching only its own rows.

Every table that holds a tenant's data (``TENANT_TABLES``) has a ``tenant`` column. A store is
opened for one tenant (``open_repository(url, tenant="acme")``; none given: ``DEFAULT_TENANT``,
where every store made before tenants keeps its agents). The one rule that keeps tenants apart
lives here, in ``scoped``: each statement the repository runs is rewritten, once, when it is
compiled (``sqlexec.Prepared``), so that every SELECT, UPDATE and DELETE on a tenant table
compares that table's ``tenant`` with the parameter ``tenant`` and every INSERT into one writes
it; the cursor (``sqlexec.Cursor``) then binds its store's tenant to that parameter. No
statement of the repository spells the tenant itself, and none can forget it.

PostgreSQL enforces the same in the database: row-level security on every tenant table, keyed on
the session setting ``acti.tenant`` (``TENANT_SETTING``), which the engine sets for each of its
store's connections (``postgresql.tenant_sql``); a connection without it sees no row and can
write none (migration ``0009_tenants``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Final, TypeVar

from sqlalchemy import String, Table, and_, bindparam
from sqlalchemy.sql import ClauseElement, visitors
from sqlalchemy.sql.dml import Delete, Insert, Update
from sqlalchemy.sql.elements import BindParameter
from sqlalchemy.sql.selectable import Alias, FromClause, Join, Select

from .errors import InvalidInputError
from .models import NAME_MAX_LENGTH, NAME_RULE, is_valid_name

E = TypeVar("E", bound=ClauseElement)

#: The tenant of a store opened without one: every store made before tenants holds its agents.
DEFAULT_TENANT: Final = "default"
#: The environment variable naming the tenant of ``open_repository`` and the CLI.
ENV_TENANT: Final = "ACTI_STORE_TENANT"
#: The environment variable choosing whether a store may register a tenant by writing for it
#: (``open_repository(create_tenant=...)``): ``strict`` (no: ``tenants create`` registers it) or
#: ``open`` (yes, as before strict tenants).
ENV_TENANTS: Final = "ACTI_STORE_TENANTS"
#: The tenant modes, and whether each lets a write register its tenant (``create_tenant``).
TENANT_MODES: Final = {"strict": False, "open": True}
#: The name of the column, and of the parameter ``scoped`` statements bind it to.
TENANT: Final = "tenant"
#: PostgreSQL's session setting that row-level security compares with each row's tenant.
TENANT_SETTING: Final = "acti.tenant"
#: The tables that hold a tenant's data, each with a ``tenant`` column.
TENANT_TABLES: Final = frozenset(
    {
        "agents",
        "agent_tags",
        "executions",
        "agent_versions",
        "agent_versions_archive",
        "agent_labels",
        "agent_label_moves",
        "agent_label_shares",
        "agent_label_gates",
        "agent_version_stats",
        "agent_changes",
        "agent_change_counters",
        "agent_change_checkpoints",
    }
)


def check_tenant(tenant: object, field: str = "tenant") -> str:
    """``tenant`` if it is a tenant name (the agent-name rule: ``acme``, ``globex_eu``), else
    ``InvalidInputError``."""
    if not is_valid_name(tenant):
        shown = repr(tenant)[:60]
        raise InvalidInputError(field, [(field, f"{shown}: {NAME_RULE}")])
    assert isinstance(tenant, str)
    return tenant


def resolve_tenant(tenant: str | None) -> str:
    """The tenant given, else ``ACTI_STORE_TENANT``, else ``DEFAULT_TENANT``; checked."""
    if tenant is None:
        tenant = os.environ.get(ENV_TENANT) or DEFAULT_TENANT
        return check_tenant(tenant, ENV_TENANT)
    return check_tenant(tenant)


def resolve_create_tenant(create_tenant: bool | None) -> bool | None:
    """Whether writing for an unregistered tenant registers it: ``create_tenant`` if given,
    else ``ACTI_STORE_TENANTS`` (``strict``: no, ``open``: yes), else None (the store's own
    mode, recorded by revision 0014 and ``set_tenant_mode``)."""
    if create_tenant is not None:
        if not isinstance(create_tenant, bool):
            raise InvalidInputError("create_tenant", [("create_tenant", "must be True or False")])
        return create_tenant
    mode = os.environ.get(ENV_TENANTS) or None
    if mode is None:
        return None
    if mode not in TENANT_MODES:
        raise InvalidInputError(ENV_TENANTS, [(ENV_TENANTS, f"{mode!r}: one of strict, open")])
    return TENANT_MODES[mode]


def tenant_param() -> BindParameter[str]:
    """The ``tenant`` parameter (also for the few statements that write it from a SELECT)."""
    return bindparam(TENANT, type_=String(NAME_MAX_LENGTH))


def _tenant_froms(from_: FromClause) -> Iterator[FromClause]:
    """The tenant tables (or their aliases) a FROM element reads whose condition belongs in the
    WHERE clause: an outer join's optional side has it in its ON clause (``_scope_join``); a
    subquery's tables are its own SELECT's (``scoped`` visits it too)."""
    if isinstance(from_, Join):
        yield from _tenant_froms(from_.left)
        if not from_.isouter:
            yield from _tenant_froms(from_.right)
    elif (isinstance(from_, Table) and from_.name in TENANT_TABLES) or (
        isinstance(from_, Alias)
        and isinstance(from_.element, Table)
        and from_.element.name in TENANT_TABLES
    ):
        yield from_


def _final_froms(select: Select[Any]) -> list[FromClause]:
    """What ``select.get_final_froms()`` returns, without the string compilation of the whole
    statement that method makes first (a compiler the Core select's state never reads): that
    compilation, once per SELECT and subquery, was most of a search shape's first use (16 of
    25 ms per shape, ``benchmarks.cold_search``)."""
    state = select._compile_state_factory(select, None)  # type: ignore[arg-type]
    froms: list[FromClause] = state._get_display_froms()
    return froms


def _scope_select(select: Select[Any]) -> None:
    criteria = tuple(
        from_.c[TENANT] == tenant_param()
        for top in _final_froms(select)
        for from_ in _tenant_froms(top)
    )
    select._where_criteria += criteria


def _scope_join(join: Join) -> None:
    """An outer join: its optional side's tenant condition joins its ON clause (in the WHERE
    clause it would drop the rows the join keeps without a match)."""
    if join.isouter:
        optional = tuple(from_.c[TENANT] == tenant_param() for from_ in _tenant_froms(join.right))
        if optional and join.onclause is not None:
            join.onclause = and_(join.onclause, *optional)


def _scope_dml(statement: Update | Delete) -> None:
    table = statement.table
    if isinstance(table, Table) and table.name in TENANT_TABLES:
        statement._where_criteria += (table.c[TENANT] == tenant_param(),)


def _check_insert(statement: Insert) -> None:
    table = statement.table
    if not isinstance(table, Table) or table.name not in TENANT_TABLES:
        return
    if statement.select is not None:
        names = [getattr(name, "key", name) for name in statement._select_names or ()]
        if TENANT not in names:
            raise RuntimeError(f"INSERT INTO {table.name} ... SELECT must write its {TENANT}")
    else:
        given = [
            *(statement._values or {}),
            *(k for row in statement._multi_values for k in row[0]),
        ]
        keys = {getattr(key, "key", key) for key in given}
        if keys and TENANT not in keys:
            raise RuntimeError(f"INSERT INTO {table.name} VALUES ... must write its {TENANT}")


def scoped(statement: E) -> E:
    """``statement`` confined to one tenant: each SELECT (subqueries and CTEs included), UPDATE
    and DELETE on a tenant table also compares the table's ``tenant`` with the parameter
    ``tenant``. An INSERT into a tenant table gets it from ``inserted_columns``; one from a
    SELECT must name it (checked here: ``RuntimeError`` on a statement that does not)."""
    return visitors.cloned_traverse(
        statement,
        {},
        {
            "select": _scope_select,
            "join": _scope_join,
            "update": _scope_dml,
            "delete": _scope_dml,
            "insert": _check_insert,
        },
    )


def inserted_columns(statement: ClauseElement, columns: tuple[str, ...]) -> tuple[str, ...]:
    """The parameter columns of ``statement`` (``sqlexec.Prepared``'s ``columns``), with
    ``tenant`` added when it is a plain INSERT into a tenant table."""
    if (
        isinstance(statement, Insert)
        and statement.select is None
        and isinstance(statement.table, Table)
        and statement.table.name in TENANT_TABLES
        and TENANT not in columns
    ):
        return (*columns, TENANT)
    return columns
