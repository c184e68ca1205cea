"""A search's order: the agents of a shape in the order of its sort, and the page after a key.

Every sort has an index, and the plan wanted walks it, tests each row and stops at the limit;
each filter is read as the engine reads it while it walks (``EngineStrategy.filter_column``).
The page that follows another starts after its last row's sort key: a range on that index
(keyset pagination: ``_after``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement

from ..schema import agents
from .search_filters import _TEXT, _condition, _Shape
from .statements import AGENT_COLUMNS
from .strategy import EngineStrategy

#: Each sort but the name's: its column, which orders descending, ties broken by name ascending.
_SORT_COLUMNS: Final[Mapping[str, ColumnElement[Any]]] = {
    "created_at": agents.c.created_at,
    "updated_at": agents.c.updated_at,
    "execution_count": agents.c.execution_count,
}


def _ordered(shape: _Shape, sort_by: str, engine: EngineStrategy) -> Select[Any]:
    """The agents of ``shape``'s filters, in the order of ``sort_by`` (no limit yet), each
    filter read as the engine reads it while it walks the sort's index.

    When other filters narrow a selective probe's ids (fewer than the probe's cap), the ids
    drive the search instead: the sort's columns are read as the filters are, so the engine
    looks those agents up and sorts the ones that pass, rather than walking its index past every
    agent the filters refuse. The ids alone are dense enough in the sort's order that the walk
    stops soon."""
    condition = _condition(shape, engine.filter_column, engine.text_index)
    read = engine.filter_column if shape.ids and _narrowed(shape) else _as_is
    name = read(agents.c.name).asc()
    if sort_by == "name":
        return select(*AGENT_COLUMNS).where(condition).order_by(name)
    return (
        select(*AGENT_COLUMNS).where(condition).order_by(read(_SORT_COLUMNS[sort_by]).desc(), name)
    )


def _as_is(col: ColumnElement[Any]) -> ColumnElement[Any]:
    return col


def _narrowed(shape: _Shape) -> bool:
    """Whether ``shape`` has a filter besides its text."""
    return bool(
        shape.stratum
        or shape.masks
        or shape.tags
        or shape.created_after
        or shape.created_before
        or shape.min_executions
    )


def _after(sort_by: str) -> ColumnElement[bool]:
    """The rows that come after the sort key ``after_value``, ``after_name`` in the order of
    ``sort_by`` (keyset pagination).

    ``value <= v AND (value < v OR name > n)`` rather than just the OR: the first term is a
    range on the sort's index, which both planners use.
    """
    name = bindparam("after_name", type_=_TEXT)
    if sort_by == "name":
        return agents.c.name > name
    col = _SORT_COLUMNS[sort_by]
    value = bindparam("after_value", type_=col.type)
    return and_(col <= value, or_(col < value, agents.c.name > name))
