"""A search's filters: the query's shape and values (``_bound``) and their SQL (``_condition``).

A search's statement depends on its *shape* (``_Shape``: which filters are set and how many
values each has), never on the values: ``_bound`` turns a ``SearchQuery`` into its shape and the
values of its parameters, ``_condition`` turns a shape into the SQL that binds parameters of the
same names. The parameters' types are one instance each (``_TEXT``, ``_INTEGER``): SQLAlchemy
adapts a type to a dialect once per instance, and ``kept_statements`` names them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from sqlalchemy import (
    Integer,
    String,
    and_,
    bindparam,
    column,
    exists,
    false,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.sql.elements import ColumnElement

from ..errors import InvalidInputError
from ..models import MAX_TAGS, SEARCH_TAGS_RULE, SearchQuery
from ..schema import agent_tags, agents
from ..sqlexec import Cursor
from ..tool_masks import masks_containing
from .search_text import _text_values
from .strategy import EngineStrategy, TextIndex

#: Tags of a search tested one ``EXISTS`` each; the rest by one count (``_has_tags``).
TAGS_EXISTS: Final = 4
#: The parameters' types, one instance each: SQLAlchemy adapts a type to a dialect once per
#: instance (``TypeEngine.dialect_impl``), so a new shape's parameters reuse what the last made.
_TEXT: Final = String()
_INTEGER: Final = Integer()


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a search's statement depends on, its values aside: which filters are set and how
    many values each has. ``_bound`` makes it with the values, named as ``_condition`` binds
    them: ``mask_<i>``, ``tag_<i>``, ``word_<i>``, ``id_<i>``, ``logged_<i>``."""

    stratum: bool = False
    masks: int = 0
    tags: int = 0
    created_after: bool = False
    created_before: bool = False
    min_executions: bool = False
    #: Words every row is tested for (``LIKE``).
    words: int = 0
    #: With an engine's text index, a selective probe: how many id parameters it gives (None:
    #: no id list; one JSON array where the index takes them so, ``TextIndex.ids_as_json``),
    #: and the words the agents changed since the index took them in are tested for.
    ids: int | None = None
    logged: int = 0
    #: Instead of an id list, the index's whole match of the words (``TextIndex.matches``).
    matched: bool = False


#: How a search's text is served: its engine's text probe first (``TextIndex.probe``), every
#: word tested by ``LIKE``, or the index's whole match (``TextIndex.matches``, for a count).
TextBy = Literal["probe", "like", "match"]


def _bound(
    cursor: Cursor, query: SearchQuery, engine: EngineStrategy, *, text_by: TextBy = "probe"
) -> tuple[_Shape, dict[str, Any]]:
    """``query``'s shape and the values of its parameters: the one place a query's filters
    become values (``_condition`` makes the SQL of the same names). The text is served as
    ``text_by`` says; the engine's text probe runs on ``cursor``."""
    values: dict[str, Any] = {}
    if query.stratum is not None:
        values["stratum"] = query.stratum
    masks = masks_containing(query.tools) if query.tools else []
    tags = list(dict.fromkeys(query.tags or ()))  # as validated: also a query that was not
    if len(tags) > MAX_TAGS:
        raise InvalidInputError("search query", [("tags", SEARCH_TAGS_RULE)])
    values |= _numbered("mask", masks) | _numbered("tag", tags)
    for bound in ("created_after", "created_before", "min_executions"):
        if (value := getattr(query, bound)) is not None:
            values[bound] = value
    index = engine.text_index if text_by != "like" else None
    words, ids, logged, matched = _text_values(cursor, query.query, index, text_by == "match")
    values |= _numbered("word", words) | _numbered("logged", logged)
    if matched is not None:
        values["matched"] = matched
    id_parameters: int | None = None  # no id list
    if ids is not None and index is not None:
        if index.ids_as_json:
            values["ids"] = json.dumps(ids)
            id_parameters = min(len(ids), 1)
        else:  # padded to a power of two with its last id: the same answer, fewer shapes
            ids = ids + ids[-1:] * ((1 << (len(ids) - 1).bit_length()) - len(ids))
            values |= _numbered("id", ids)
            id_parameters = len(ids)
    shape = _Shape(
        stratum=query.stratum is not None,
        masks=len(masks),
        tags=len(tags),
        created_after=query.created_after is not None,
        created_before=query.created_before is not None,
        min_executions=query.min_executions is not None,
        words=len(words),
        ids=id_parameters,
        logged=len(logged),
        matched=matched is not None,
    )
    return shape, values


def _numbered(prefix: str, values: Sequence[Any]) -> dict[str, Any]:
    return {f"{prefix}_{i}": value for i, value in enumerate(values)}


def _condition(
    shape: _Shape,
    filtered: Callable[[ColumnElement[Any]], ColumnElement[Any]],
    index: TextIndex | None,
    matched: ColumnElement[bool] | None = None,
) -> ColumnElement[bool]:
    """Every filter of ``shape`` combined with AND, each value a parameter named as ``_bound``
    names it: the one place the filters become SQL. ``filtered`` says how a filter reads its
    column; ``index``: the text index whose probe gave ``shape.ids``; ``matched``, for
    ``shape.matched``: whether the agent is one of the index's whole match (a column of the
    candidates it is counted among, ``_counted_among``)."""
    conditions: list[ColumnElement[bool]] = []
    if shape.stratum:
        conditions.append(filtered(agents.c.stratum) == bindparam("stratum", type_=_TEXT))
    if shape.masks:
        masks = [bindparam(f"mask_{i}", type_=_INTEGER) for i in range(shape.masks)]
        conditions.append(filtered(agents.c.tools_mask).in_(masks))
    conditions.extend(_has_tags(shape.tags))
    created, runs = filtered(agents.c.created_at), filtered(agents.c.execution_count)
    if shape.created_after:
        conditions.append(created >= bindparam("created_after", type_=agents.c.created_at.type))
    if shape.created_before:
        conditions.append(created <= bindparam("created_before", type_=agents.c.created_at.type))
    if shape.min_executions:
        conditions.append(runs >= bindparam("min_executions", type_=agents.c.execution_count.type))
    if (shape.ids is not None or shape.matched) and index is not None:
        held: ColumnElement[bool] = false()
        if matched is not None:
            held = matched
        elif shape.ids:
            held = _listed(shape.ids, index)
        if index.changed_ids is not None:
            logged = and_(agents.c.id.in_(index.changed_ids), *_contain("logged", shape.logged))
            held = or_(held, logged) if shape.ids or shape.matched else logged
        conditions.append(held)
    conditions.extend(_contain("word", shape.words))
    return and_(True, *conditions)


def _listed(count: int, index: TextIndex) -> ColumnElement[bool]:
    """The agent is one of the probe's ids: ``id_<i>`` each, or the JSON array ``ids`` (one
    statement whatever their number: compiling one with a thousand parameters takes longer
    than the search)."""
    if index.ids_as_json:
        listed = select(column("value", _INTEGER)).select_from(
            func.json_each(bindparam("ids", type_=_TEXT))
        )
        return agents.c.id.in_(listed)
    return agents.c.id.in_([bindparam(f"id_{i}", type_=_INTEGER) for i in range(count)])


def _has_tags(count: int) -> list[ColumnElement[bool]]:
    """The agent has every tag ``tag_<i>`` (distinct): the first ``TAGS_EXISTS`` one ``EXISTS``
    each, the rest together by one count of the agent's tags among them.

    An ``EXISTS`` per tag lets the planner start from a rare tag's index, but PostgreSQL plans
    each as a join it may reorder: its planning time grows steeply with their number (8 tags:
    80 ms, 10: 130 ms, 40: 1 s, 160: 14 s on a store of 5 agents). The count is one condition
    whatever the number of tags, tested on the rows the ``EXISTS`` let through (at most
    ``MAX_TAGS`` - ``TAGS_EXISTS`` index reads each). A search asks for at most ``MAX_TAGS``.
    """
    of_agent = agent_tags.c.agent_id == agents.c.id
    tags = [bindparam(f"tag_{i}", type_=_TEXT) for i in range(count)]
    conditions: list[ColumnElement[bool]] = [
        exists().where(of_agent, agent_tags.c.tag == tag) for tag in tags[:TAGS_EXISTS]
    ]
    if rest := tags[TAGS_EXISTS:]:
        found = select(func.count()).where(of_agent, agent_tags.c.tag.in_(rest))
        conditions.append(found.scalar_subquery() == literal_column(str(len(rest)), _INTEGER))
    return conditions


def _contain(prefix: str, count: int) -> list[ColumnElement[bool]]:
    """Per pattern ``<prefix>_<i>``: the agent's name or description contains it, in lower
    case (the pattern is lower case)."""
    contained = []
    for i in range(count):
        pattern = bindparam(f"{prefix}_{i}", type_=_TEXT)
        contained.append(
            or_(
                func.lower(agents.c.name).like(pattern, escape="\\"),
                func.lower(agents.c.description).like(pattern, escape="\\"),
            )
        )
    return contained
