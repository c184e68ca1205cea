"""Tenants: one store, many customers, each seeing and touching only its own rows.

Every table that holds a tenant's data (``TENANT_TABLES``) has a ``tenant`` column. A store is
opened for one tenant (``open_repository(url, tenant="acme")``; none given: ``DEFAULT_TENANT``,
where every store made before tenants keeps its agents). The one rule that keeps tenants apart
lives here, in ``scoped``: each statement the repository runs is rewritten, once, when it is
compiled (``sqlexec.Prepared``), so that every SELECT, UPDATE and DELETE on a tenant table
(each table of a multi-table one) compares that table's ``tenant`` with the parameter
``tenant``, every INSERT into one writes it, and a ``text()`` that names one binds it (else it
is refused); the cursor (``sqlexec.Cursor``) then binds its store's tenant to that parameter.
No statement of the repository spells the tenant itself, and none can forget it. The rewrite
uses SQLAlchemy's public constructs (``replacement_traverse``, ``where``, ``Join``); the two
facts it reads from SQLAlchemy's private state are read in one place, and a test compares them
with the public API's answer (``final_froms``, ``written_keys``).

PostgreSQL enforces the same in the database: row-level security on every tenant table, keyed on
the session setting ``acti.tenant`` (``TENANT_SETTING``), which the engine sets for each of its
store's connections (``EngineStrategy.tenant_sql``: ``engines.postgresql.statements``); a
connection without it sees no row and can write none (migration ``0009_tenants``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final, TypeVar

from sqlalchemy import String, Table, and_, bindparam, select
from sqlalchemy.sql import ClauseElement, visitors
from sqlalchemy.sql.expression import (
    Alias,
    BindParameter,
    ColumnElement,
    Delete,
    FromClause,
    Insert,
    Join,
    ReturnsRows,
    Select,
    TableClause,
    TextClause,
    Update,
    UpdateBase,
)

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


def _is_tenant_table(from_: FromClause) -> bool:
    """Whether ``from_`` is a tenant table, or an alias of one."""
    table = from_.element if isinstance(from_, Alias) else from_
    return isinstance(table, Table) and table.name in TENANT_TABLES


def _tenant_froms(from_: FromClause) -> Iterator[FromClause]:
    """The tenant tables (or their aliases) a FROM element reads whose condition belongs in the
    WHERE clause: an outer join's optional side has it in its ON clause (``_scope_join``); a
    subquery's tables are its own SELECT's (``scoped`` rewrites it too)."""
    if isinstance(from_, Join):
        yield from _tenant_froms(from_.left)
        if not from_.isouter:
            yield from _tenant_froms(from_.right)
    elif _is_tenant_table(from_):
        yield from_


def _conditions(froms: Iterable[FromClause]) -> list[ColumnElement[bool]]:
    """``<table>.tenant = :tenant`` for each tenant table of ``froms`` (``_tenant_froms``)."""
    return [from_.c[TENANT] == tenant_param() for top in froms for from_ in _tenant_froms(top)]


# -- the one reading of SQLAlchemy's internals ----------------------------------------------------
# SQLAlchemy's public API builds every condition below (``where``, ``join``) and rebuilds the
# statement around them (``replacement_traverse``); two facts it keeps only in private state are
# read here, and only read: ``tests/test_tenant_statements.py`` compares each with what the public
# API says (``get_final_froms``, the compiled INSERT's columns) for every statement of the package,
# and fails when a release of SQLAlchemy changes either under them.


def final_froms(select: Select[Any]) -> list[FromClause]:
    """What ``select.get_final_froms()`` returns, without the string compilation of the whole
    statement that method makes first (a compiler the Core select's state never reads): that
    compilation, once per SELECT and subquery, was most of a search shape's first use (16 of
    25 ms per shape, ``benchmarks.cold_search``)."""
    state = select._compile_state_factory(select, None)  # type: ignore[arg-type]
    froms: list[FromClause] = state._get_display_froms()
    return froms


def written_keys(statement: Insert) -> set[str] | None:
    """The columns an INSERT's own values write (None: it gives none, a plain INSERT whose
    columns ``inserted_columns`` names; for INSERT ... FROM SELECT, its column list)."""
    if statement.select is not None:
        given: list[Any] = list(statement._select_names or ())
    else:
        given = [
            *(statement._values or {}),
            *(key for row in statement._multi_values for key in row[0]),
        ]
    return {getattr(key, "key", key) for key in given} or None


# -- the rewrite -----------------------------------------------------------------------------------


def _scope_select(select: Select[Any]) -> Select[Any]:
    criteria = _conditions(final_froms(select))
    return select.where(*criteria) if criteria else select


def _scope_join(join: Join) -> Join:
    """An outer join: its optional side's tenant condition joins its ON clause (in the WHERE
    clause it would drop the rows the join keeps without a match)."""
    if not join.isouter or join.onclause is None:
        return join
    optional = _conditions([join.right])
    if not optional:
        return join
    onclause = and_(join.onclause, *optional)
    return Join(join.left, join.right, onclause, isouter=True, full=join.full)


def _scope_dml(statement: Update | Delete) -> Update | Delete:
    """Every table an UPDATE or DELETE touches or reads: its target, and each table its WHERE
    clause names (``UPDATE ... FROM``, ``DELETE ... USING``, MySQL's multi-table forms)."""
    froms: list[FromClause] = [statement.table]
    if (where := statement.whereclause) is not None:
        froms += [f for f in final_froms(select().where(where)) if f is not statement.table]
    criteria = _conditions(froms)
    return statement.where(*criteria) if criteria else statement


def _check_insert(statement: Insert) -> Insert:
    table = statement.table
    if not isinstance(table, Table) or table.name not in TENANT_TABLES:
        return statement
    keys = written_keys(statement)
    if statement.select is not None and TENANT not in (keys or ()):
        raise RuntimeError(f"INSERT INTO {table.name} ... SELECT must write its {TENANT}")
    if keys is not None and TENANT not in keys:
        raise RuntimeError(f"INSERT INTO {table.name} VALUES ... must write its {TENANT}")
    return statement


def _scope(element: Any) -> Any:
    """``element`` (its parts already scoped) confined to the tenant, by its kind."""
    if isinstance(element, Select):
        return _scope_select(element)
    if isinstance(element, Join):
        return _scope_join(element)
    if isinstance(element, Update | Delete):
        return _scope_dml(element)
    if isinstance(element, Insert):
        return _check_insert(element)
    if isinstance(element, TextClause):
        _check_text(element)
    return element


#: A quoted string of SQL text (what ``_check_text`` reads past: ``'agents'`` names no
#: table), and a word (a quoted identifier's too).
_QUOTED: Final = re.compile(r"'(?:[^']|'')*'")
_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
#: A bound parameter of ``text()``: ``:name`` (not PostgreSQL's ``::type`` cast).
_BOUND: Final = re.compile(r"(?<![:\w]):(\w+)")


def _check_text(statement: TextClause) -> None:
    """A ``text()`` that names a tenant table (outside its quoted strings) binds ``:tenant``:
    ``scoped`` cannot add the condition to SQL it does not build, so it refuses one without."""
    sql = _QUOTED.sub("''", statement.text)
    named = TENANT_TABLES.intersection(word.lower() for word in _WORD.findall(sql))
    if named and TENANT not in _BOUND.findall(sql):
        raise RuntimeError(f"text() on {', '.join(sorted(named))} must bind :{TENANT}")


class _Scoper:
    """``scoped``'s replacement function: each statement and FROM element of the tree is
    copied once, inner ones first (a copy of its own with its parts replaced, then ``_scope``),
    and every place that holds it gets that one copy: a CTE, alias or subquery named in several
    places stays one object, as the columns that refer to it expect."""

    __slots__ = ("_active", "_done", "_entering")

    def __init__(self) -> None:
        self._done: dict[int, Any] = {}
        self._active: set[int] = set()
        self._entering: int | None = None

    def __call__(self, element: Any, **kw: Any) -> Any:
        key = id(element)
        if key in self._done:
            return self._done[key]
        if key == self._entering:  # the root of its own copy, below: copied as it is
            self._entering = None
            return None
        if not isinstance(element, _REWRITTEN) or isinstance(element, TableClause):
            return None
        if key in self._active:  # reached again from inside itself (a recursive CTE)
            raise RuntimeError("a statement that contains itself: tenancy.scoped cannot scope it")
        self._active.add(key)
        self._entering = key
        whole: Any = element  # copied whole: every kind of statement and FROM element
        copy = visitors.replacement_traverse(whole, {}, self)
        self._active.discard(key)
        done = self._done[key] = _scope(copy)
        return done


#: What ``_Scoper`` copies: statements, and the FROM elements columns refer to.
_REWRITTEN: Final = (ReturnsRows, UpdateBase, TextClause)


def scoped(statement: E) -> E:
    """``statement`` confined to one tenant: each SELECT (subqueries and CTEs included), UPDATE
    and DELETE on a tenant table also compares the table's ``tenant`` with the parameter
    ``tenant`` (every table of a multi-table UPDATE or DELETE; an outer join's optional side in
    its ON clause). An INSERT into a tenant table gets it from ``inserted_columns``; one that
    gives its own values or a SELECT must write it, and a ``text()`` that names a tenant table
    must bind it (checked here: ``RuntimeError`` on a statement that does not). Built with
    SQLAlchemy's public constructs: ``replacement_traverse`` copies the statement, ``where`` and
    ``Join`` make each condition."""
    found = _Scoper()(statement)
    return statement if found is None else found


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
