"""The search query run: a page, a count, and the statements of each shape, built once and kept.

A search's parts are modules of their own: its filters, as values and as SQL
(``search_filters``), its order and the page after a key (``search_order``), and its text and
the engine's text-index probe (``search_text``); here they are assembled into statements,
cached by shape (``_cached``, ``kept_statements``) and run on the fast path's cursor.

Every sort has an index, so the plan wanted is "walk the sort's index, test each row, stop at
``limit``", which stays cheap whatever a filter matches, except a text query selective enough to
hand over a short id list. PostgreSQL's planner finds that from its statistics. SQLite's, without
statistics, would rather drive from a filter's index and sort everything it matched, so there the
filter columns are read through ``+column`` (no index: documented SQLite idiom) and tags are
tested per row (``search_filters._has_tags``).

Text: every word must be a case-insensitive substring of the name or the description.
PostgreSQL: ``LIKE`` on ``lower()``, served by the pg_trgm indexes (revision 0003). SQLite: the
FTS5 trigram index ``agents_fts`` (revision 0003), fed through the log ``agents_fts_log``
(revision 0004); see ``search_text._text_values``; a search walks first, and probes the index
only when the walk has run as long as a probe without filling its page (``search_rows``); a
count takes the index's whole match (``count_matches``). MariaDB: the trigram table
``agent_trigrams`` (revision 0008), whose candidates are tested by ``LIKE``. What differs is the
engine's (``EngineStrategy``: ``filter_column``, ``text_index``; ``engines.sqlite.statements``,
``engines.postgresql.statements``, ``engines.mariadb.statements``).

A search runs on the repository's fast path (``sqlexec``): its statement holds only parameters,
so it is built and compiled once per *shape* (the sort, which filters are set and how many
values each has: ``search_filters._Shape``) and then only its values change. PostgreSQL runs it
unprepared (``Cursor.all(prepare=False)``): a prepared statement soon runs a generic plan, one
made without its values, and a substring's pattern is what decides a search's plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import bindparam, exists, func, literal_column, select, union_all
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import SelectBase

from ..kept_statements import KeptStatement, TypeNames
from ..models import SearchQuery
from ..schema import agents
from ..sqlexec import Cursor, Prepared
from .cursor import SortKey
from .search_filters import _INTEGER, _TEXT, TAGS_EXISTS, TextBy, _bound, _condition, _Shape
from .search_order import _after, _ordered
from .search_text import _indexed, _words, escape_like
from .strategy import EngineStrategy, TextIndex

__all__ = [
    "TAGS_EXISTS",
    "WALK_FILTERS_MAX",
    "TextBy",
    "count_matches",
    "escape_like",
    "needs_snapshot",
    "page_rows",
    "search_rows",
]

#: The most filters besides its word a search walks first with (``_walks_first``).
WALK_FILTERS_MAX: Final = 2
#: Shapes whose statements are kept (the cache starts over past it: a bound, not a policy).
_SHAPES_KEPT: Final = 512
#: The limit's parameter, of the filters' one integer type (``search_filters._INTEGER``).
_LIMIT: Final = bindparam("limit", type_=_INTEGER)
#: Every type a search statement binds or returns, by name (``kept_statements``).
_TYPE_NAMES: Final = TypeNames(
    {"text": _TEXT, "integer": _INTEGER} | {f"agents.{c.key}": c.type for c in agents.c}
)


def needs_snapshot(query: SearchQuery, engine: EngineStrategy) -> bool:
    """Whether a search of ``query`` reads more than one statement (the engine's text probe,
    then the query): they must see one snapshot (``_read(snapshot=True)``)."""
    return bool(_indexed(_words(query.query), engine.text_index))


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


def _indexed_column(col: ColumnElement[Any]) -> ColumnElement[Any]:
    return col
