"""The search query: every filter of ``SearchQuery`` in SQL, in the order of an index.

Every sort has an index, so the plan wanted is "walk the sort's index, test each row, stop at
``limit``", which stays cheap whatever a filter matches, except a text query selective enough to
hand over a short id list. PostgreSQL's planner finds that from its statistics. SQLite's, without
statistics, would rather drive from a filter's index and sort everything it matched, so there the
filter columns are read through ``+column`` (no index: documented SQLite idiom) and tags are
tested per row (``_has_tags``).

Text: every word must be a case-insensitive substring of the name or the description.
PostgreSQL: ``LIKE`` on ``lower()``, served by the pg_trgm indexes (revision 0003). SQLite: the
FTS5 trigram index ``agents_fts`` (revision 0003), fed through the log ``agents_fts_log``
(revision 0004); see ``_text_values``; a search walks first, and probes the index only when
the walk has run as long as a probe without filling its page (``search_rows``); a count takes
the index's whole match (``count_matches``). MariaDB: the trigram table ``agent_trigrams``
(revision 0008), whose candidates are tested by ``LIKE``. What differs is the engine's
(``EngineStrategy``: ``filter_column``, ``text_index``; ``engines.sqlite.statements``,
``engines.postgresql.statements``, ``engines.mariadb.statements``).

A search runs on the repository's fast path (``sqlexec``): its statement holds only parameters,
so it is built and compiled once per *shape* (the sort, which filters are set and how many
values each has: ``_Shape``) and then only its values change. PostgreSQL runs it unprepared
(``Cursor.all(prepare=False)``): a prepared statement soon runs a generic plan, one made without
its values, and a substring's pattern is what decides a search's plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
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
    union_all,
)
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import SelectBase

from ..errors import InvalidInputError
from ..kept_statements import KeptStatement, TypeNames
from ..models import MAX_TAGS, SEARCH_TAGS_RULE, SearchQuery
from ..schema import agent_tags, agents
from ..sqlexec import Cursor, Prepared
from ..tool_masks import masks_containing
from .cursor import SortKey
from .statements import AGENT_COLUMNS
from .strategy import EngineStrategy, TextIndex

#: Tags of a search tested one ``EXISTS`` each; the rest by one count (``_has_tags``).
TAGS_EXISTS: Final = 4
#: The most filters besides its word a search walks first with (``_walks_first``).
WALK_FILTERS_MAX: Final = 2
#: Shapes whose statements are kept (the cache starts over past it: a bound, not a policy).
_SHAPES_KEPT: Final = 512

#: Each sort but the name's: its column, which orders descending, ties broken by name ascending.
_SORT_COLUMNS: Final[Mapping[str, ColumnElement[Any]]] = {
    "created_at": agents.c.created_at,
    "updated_at": agents.c.updated_at,
    "execution_count": agents.c.execution_count,
}
#: The parameters' types, one instance each: SQLAlchemy adapts a type to a dialect once per
#: instance (``TypeEngine.dialect_impl``), so a new shape's parameters reuse what the last made.
_TEXT: Final = String()
_INTEGER: Final = Integer()
_LIMIT: Final = bindparam("limit", type_=_INTEGER)
#: Every type a search statement binds or returns, by name (``kept_statements``).
_TYPE_NAMES: Final = TypeNames(
    {"text": _TEXT, "integer": _INTEGER} | {f"agents.{c.key}": c.type for c in agents.c}
)


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


def needs_snapshot(query: SearchQuery, engine: EngineStrategy) -> bool:
    """Whether a search of ``query`` reads more than one statement (the engine's text probe,
    then the query): they must see one snapshot (``_read(snapshot=True)``)."""
    return bool(_indexed(_words(query.query), engine.text_index))


def _words(query: str | None) -> list[str]:
    """The distinct words of a text query, in lower case: each must be in the name or the
    description (a repeated word adds no condition)."""
    return list(dict.fromkeys(query.lower().split())) if query else []


def _indexed(words: list[str], index: TextIndex | None) -> list[str]:
    """The words the engine's text index serves (none without one)."""
    return [w for w in words if len(w) >= index.min_word] if index is not None else []


def search_rows(cursor: Cursor, query: SearchQuery, engine: EngineStrategy) -> list[Sequence[Any]]:
    """The rows (``AGENT_COLUMNS``) that answer ``query``: filters combined with AND, in the
    sort's order, at most ``limit``. The engine's text probe runs first on ``cursor``; where the
    index ``walks_first`` (for a search of one word and few filters: ``_walks_first``), only
    once a walk of the sort's order, the word tested by ``LIKE``, has run as long as a probe
    without filling the page (the word is rare)."""
    index, limit = engine.text_index, {"limit": query.limit}
    if index is not None and index.walks_first and _walks_first(query, index):
        shape, values = _bound(cursor, query, engine, text_by="like")
        rows = index.walk(cursor, _search(shape, query.sort_by, engine), values | limit)
        if rows is not None:
            return rows
    shape, values = _bound(cursor, query, engine)
    return cursor.all(_search(shape, query.sort_by, engine), values | limit, prepare=False)


def _walks_first(query: SearchQuery, index: TextIndex) -> bool:
    """Whether a search walks before it probes: for one word the index serves (two words are
    seldom common together) and at most ``WALK_FILTERS_MAX`` other filters (each thins the
    walk's hits: with more, the page seldom fills in the walk's time)."""
    filters = (
        query.stratum is not None,
        bool(query.tools),
        bool(query.tags),
        query.created_after is not None,
        query.created_before is not None,
        query.min_executions is not None,
    )
    return len(_indexed(_words(query.query), index)) == 1 and sum(filters) <= WALK_FILTERS_MAX


def _search(shape: _Shape, sort_by: str, engine: EngineStrategy) -> Prepared:
    key = ("search", engine.name, sort_by, shape)
    return _cached(key, lambda: _ordered(shape, sort_by, engine).limit(_LIMIT))


def count_matches(
    cursor: Cursor,
    query: SearchQuery,
    engine: EngineStrategy,
    probed: tuple[_Shape, dict[str, Any]] | None = None,
) -> int:
    """How many agents match ``query``'s filters (its sort and limit aside). No order to walk
    here: the filters may use their indexes on either engine; the text, the engine's index as
    a whole where it has one that counts (``TextIndex.matches``): a common word would
    otherwise be tested by ``LIKE`` on every agent (350-900 ms at 100,000 agents on SQLite;
    30-40 ms so). Else ``probed``, the query as a page's probe bound it, serves it too."""
    index = engine.text_index
    if index is not None and index.matches is not None:
        shape, values = _bound(cursor, query, engine, text_by="match")
    else:
        shape, values = probed or _bound(cursor, query, engine)
    return _count(cursor, shape, values, engine)


def page_rows(
    cursor: Cursor, query: SearchQuery, after: SortKey | None, engine: EngineStrategy
) -> tuple[int, list[Sequence[Any]]]:
    """For ``search_page``: the count of every match (``count_matches``), and the page of
    ``query.limit`` + 1 matches after the sort key ``after`` (the extra row says whether another
    page follows), in the sort's order (run them in one snapshot). The page's text probe serves
    the count too, where the engine's index has no whole match."""
    shape, values = _bound(cursor, query, engine)
    total = count_matches(cursor, query, engine, (shape, values))
    sort = query.sort_by
    key = ("page", engine.name, sort, shape, after is not None)

    def statement() -> Select[Any]:
        page = _ordered(shape, sort, engine)
        return (page if after is None else page.where(_after(sort))).limit(_LIMIT)

    values |= {"limit": query.limit + 1}
    if after is not None:
        values |= {"after_value": after.value, "after_name": after.name}
    return total, cursor.all(_cached(key, statement), values, prepare=False)


def _count(cursor: Cursor, shape: _Shape, values: dict[str, Any], engine: EngineStrategy) -> int:
    def statement() -> Select[Any]:
        index = engine.text_index
        if shape.matched and index is not None and index.matches is not None:
            return _counted_among(shape, index, index.matches)
        condition = _condition(shape, _indexed_column, index)
        return select(func.count()).select_from(agents).where(condition)

    rows = cursor.all(_cached(("count", engine.name, shape), statement), values, prepare=False)
    return int(rows[0][0])


def _counted_among(shape: _Shape, index: TextIndex, matches: SelectBase) -> Select[Any]:
    """The count of ``shape``'s agents among the index's whole match and the agents it may hold
    with an older text (``changed_ids``: tested by ``LIKE``), each looked up by its id: every
    match is one of them. Not ``count(*) FROM agents WHERE id IN (...)``: SQLite's planner,
    with no statistics, walks the tenant's index past every agent then (30 ms at 100,000
    agents for a word no agent has, 60-180 ms for a common one)."""
    found = matches.subquery()
    parts = [select(found.c.id, literal_column("1", _INTEGER).label("matched"))]
    if index.changed_ids is not None:
        changed = index.changed_ids.subquery()
        parts.append(select(*changed.c, literal_column("0", _INTEGER)))
    candidates = union_all(*parts).subquery()
    condition = _condition(shape, _indexed_column, index, candidates.c.matched == 1)
    counted = exists().where(agents.c.id == candidates.c.id, condition)
    return select(func.count()).select_from(candidates).where(counted)


_statements: dict[tuple[Any, ...], Prepared] = {}


def _cached(key: tuple[Any, ...], statement: Callable[[], Any]) -> Prepared:
    """The statement of ``key``, built by ``statement`` the first time a process needs it
    that no process compiled before (``kept_statements``: ``key`` as text names it there)."""
    found = _statements.get(key)
    if found is None:
        if len(_statements) >= _SHAPES_KEPT:
            _statements.clear()
        found = _statements[key] = KeptStatement(repr(key), statement, _TYPE_NAMES)
    return found


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


def _text_values(
    cursor: Cursor, query: str | None, index: TextIndex | None, whole: bool = False
) -> tuple[list[str], list[int] | None, list[str], str | None]:
    """The ``LIKE`` patterns of ``query``'s words every row is tested for; with the engine's
    text ``index``, a selective probe's ids (or, ``whole``, the value of the index's whole
    match) and the patterns the agents the index may not hold with their current text
    (``changed_ids``) are tested for instead.

    Every word must be a case-insensitive substring of the name or the description. The index
    (SQLite's trigram index: ``engines.sqlite.statements``; MariaDB's:
    ``engines.mariadb.statements``) is probed for the words it serves, up to a cap of matches among
    the agents it holds. Fewer matches (a selective query) become an id list, plus the changed
    agents whose current text contains the words (an index without ``changed_ids`` has none); an
    index that is not ``exact`` gives candidates, tested for every word by ``LIKE`` as well. A probe
    that fills up (None) means the words are common, and then an ordered scan that checks ``LIKE``
    row by row finds ``limit`` hits sooner than collecting every match would. A count (``whole``)
    wants every match: the index's own, in the statement (``TextIndex.matches``), with no probe.
    """
    words = _words(query)
    ids: list[int] | None = None
    matched: str | None = None
    logged: list[str] = []
    indexed = _indexed(words, index)
    if indexed and index is not None:
        if whole:
            matched = index.match_value(indexed)
        elif (found := index.probe(cursor, indexed)) is not None:
            ids = found
        if ids is not None or matched is not None:
            if index.changed_ids is not None:
                logged = [_pattern(w) for w in indexed]
            if index.exact:
                words = [w for w in words if len(w) < index.min_word]
    return [_pattern(w) for w in words], ids, logged, matched


def _pattern(word: str) -> str:
    return f"%{escape_like(word)}%"


def escape_like(text: str, escape: str = "\\") -> str:
    """Make ``%`` and ``_`` literal in a LIKE pattern."""
    return (
        text.replace(escape, escape + escape).replace("%", escape + "%").replace("_", escape + "_")
    )


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


def _indexed_column(col: ColumnElement[Any]) -> ColumnElement[Any]:
    return col
