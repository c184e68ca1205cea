"""The search query: every filter of ``SearchQuery`` in SQL, in the order of an index.

Every sort has an index, so the plan wanted is "walk the sort's index, test each row, stop at
``limit``", which stays cheap whatever a filter matches, except a text query selective enough to
hand over a short id list. PostgreSQL's planner finds that from its statistics. SQLite's, without
statistics, would rather drive from a filter's index and sort everything it matched, so there the
filter columns are read through ``+column`` (no index: documented SQLite idiom) and tags are
tested with ``EXISTS`` per row.

Text: every word must be a case-insensitive substring of the name or the description.
PostgreSQL: ``LIKE`` on ``lower()``, served by the pg_trgm indexes (revision 0003). SQLite: the
FTS5 trigram index ``agents_fts`` (revision 0003), fed through the log ``agents_fts_log``
(revision 0004); see ``_text_conditions``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    column,
    exists,
    func,
    literal_column,
    or_,
    select,
    table,
    text,
)
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement

from ..models import SearchQuery, escape_like
from ..schema import agent_tags, agents, masks_containing
from .cursor import SortKey
from .statements import AGENT_COLUMNS

#: The trigram index serves words of at least three characters.
FTS_MIN_WORD: Final = 3
#: How many index matches a search collects before it treats its words as common.
FTS_PROBE_CAP: Final = 1000

# The SQLite text index, as Alembic revisions 0003 and 0004 left it (migrations/versions/).
# 0003_search made ``agents_fts``, an FTS5 trigram index of the agents' name and description.
# 0004_search_log feeds it through ``agents_fts_log``: triggers log the id of each changed agent
# (with the text the index holds for it), and every 256 entries the log is moved into the index.
# Its invariant, which the two statements below rely on: an agent whose id is not in the log is
# indexed with its current text; an id in the log may be indexed with an older text, or not at all.
# A revision that changes either table or its triggers must keep this strategy in step.

#: Agents changed since the index last took in its log: search checks their current text itself.
_FTS_LOGGED: Final[Select[tuple[Any]]] = select(column("agent_id")).select_from(
    table("agents_fts_log")
)
#: Agents outside the log whose indexed text matches a MATCH expression, up to the cap.
_FTS_PROBE: Final = text(
    "SELECT rowid FROM agents_fts WHERE agents_fts MATCH :fts_query "
    f"AND rowid NOT IN (SELECT agent_id FROM agents_fts_log) LIMIT {FTS_PROBE_CAP}"
)

#: Each sort but the name's: its column, which orders descending, ties broken by name ascending.
_SORT_COLUMNS: Final[Mapping[str, ColumnElement[Any]]] = {
    "created_at": agents.c.created_at,
    "updated_at": agents.c.updated_at,
    "execution_count": agents.c.execution_count,
}
_SORTS: Final[Mapping[str, tuple[ColumnElement[Any], ...]]] = {
    "name": (agents.c.name.asc(),),
    **{sort: (col.desc(), agents.c.name.asc()) for sort, col in _SORT_COLUMNS.items()},
}


@contextmanager
def query_connection(engine: Engine, *, statements: int = 1) -> Iterator[Connection]:
    """A Core connection for a search. SQLite: one read transaction (the text probe and the
    query see one snapshot). PostgreSQL: with ``statements == 1`` it runs in autocommit (no
    BEGIN and ROLLBACK round trips); several statements run in a transaction that ends in
    COMMIT, since psycopg answers a ROLLBACK by dropping its prepared statements.
    Searches are never prepared there: a prepared statement soon runs a generic plan, one made
    without its values, and a substring's pattern is what decides a search's plan."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            yield conn
        return
    options = {"isolation_level": "AUTOCOMMIT"} if statements == 1 else {}
    with engine.connect().execution_options(**options) as conn:
        driver: Any = conn.connection.driver_connection
        threshold = driver.prepare_threshold
        driver.prepare_threshold = None
        try:
            yield conn
            if statements > 1:
                conn.commit()
        finally:
            driver.prepare_threshold = threshold


def search_statement(conn: Connection, query: SearchQuery, *, sqlite: bool) -> Select[Any]:
    """The SELECT of ``AGENT_COLUMNS`` that answers ``query``: filters combined with AND, rows in
    the sort's order, at most ``limit``. On SQLite a text query first probes the text index on
    ``conn``: run the statement on the same connection and transaction (one snapshot)."""
    condition = _condition(query, _text(conn, query, sqlite=sqlite), _ordered_filter(sqlite))
    return (
        select(*AGENT_COLUMNS).where(condition).order_by(*_SORTS[query.sort_by]).limit(query.limit)
    )


def count_statement(conn: Connection, query: SearchQuery, *, sqlite: bool) -> Select[Any]:
    """The SELECT of how many agents match ``query``'s filters (its sort and limit aside).

    No order to walk here: the filters may use their indexes on either engine. Same snapshot
    rule as ``search_statement``."""
    return _count(query, _text(conn, query, sqlite=sqlite))


def page_statements(
    conn: Connection, query: SearchQuery, after: SortKey | None, *, sqlite: bool
) -> tuple[Select[Any], Select[Any]]:
    """For ``search_page``: the count of every match (``count_statement``'s), and the page of
    ``query.limit`` + 1 matches after the sort key ``after`` (the extra row says whether another
    page follows), in the sort's order. One text probe serves both (same snapshot rule as
    ``search_statement``)."""
    text_conditions = _text(conn, query, sqlite=sqlite)
    condition = _condition(query, text_conditions, _ordered_filter(sqlite))
    page = select(*AGENT_COLUMNS).where(condition)
    if after is not None:
        page = page.where(_after(query.sort_by, after))
    ordered = page.order_by(*_SORTS[query.sort_by]).limit(query.limit + 1)
    return _count(query, text_conditions), ordered


def _after(sort_by: str, key: SortKey) -> ColumnElement[bool]:
    """The rows that come after ``key`` in the order of ``sort_by`` (keyset pagination).

    ``value <= v AND (value < v OR name > n)`` rather than just the OR: the first term is a
    range on the sort's index, which both planners use.
    """
    if sort_by == "name":
        return agents.c.name > key.name
    column = _SORT_COLUMNS[sort_by]
    return and_(column <= key.value, or_(column < key.value, agents.c.name > key.name))


def _count(query: SearchQuery, text_conditions: list[ColumnElement[bool]]) -> Select[Any]:
    """How many agents match: the filters read through their indexes (no order to walk)."""
    condition = _condition(query, text_conditions, _indexed_column)
    return select(func.count()).select_from(agents).where(condition)


def _ordered_filter(sqlite: bool) -> Callable[[ColumnElement[Any]], ColumnElement[Any]]:
    """How a read in the sort's order reads a filter's column (see the module's docstring)."""
    return _filter_column if sqlite else _indexed_column


def _text(conn: Connection, query: SearchQuery, *, sqlite: bool) -> list[ColumnElement[bool]]:
    """The conditions of ``query``'s text (probing SQLite's text index on ``conn``)."""
    return _text_conditions(conn, query.query, sqlite=sqlite) if query.query else []


def _condition(
    query: SearchQuery,
    text_conditions: list[ColumnElement[bool]],
    filtered: Callable[[ColumnElement[Any]], ColumnElement[Any]],
) -> ColumnElement[bool]:
    """Every filter of ``query`` combined with AND: the one place the filters become SQL.
    ``text_conditions`` come from ``_text``; ``filtered`` says how a filter reads its column."""
    conditions: list[ColumnElement[bool]] = []
    if query.stratum is not None:
        conditions.append(filtered(agents.c.stratum) == query.stratum)
    if query.tools:
        conditions.append(filtered(agents.c.tools_mask).in_(masks_containing(query.tools)))
    for tag in query.tags or ():
        conditions.append(
            exists().where(agent_tags.c.agent_id == agents.c.id, agent_tags.c.tag == tag)
        )
    if query.created_after is not None:
        conditions.append(filtered(agents.c.created_at) >= query.created_after)
    if query.created_before is not None:
        conditions.append(filtered(agents.c.created_at) <= query.created_before)
    if query.min_executions is not None:
        conditions.append(filtered(agents.c.execution_count) >= query.min_executions)
    return and_(True, *conditions, *text_conditions)


def _indexed_column(col: ColumnElement[Any]) -> ColumnElement[Any]:
    return col


def _filter_column(col: ColumnElement[Any]) -> ColumnElement[Any]:
    """``col`` as a SQLite search filter reads it: ``+col``, which no index serves."""
    return literal_column(f"+{agents.name}.{col.key}", col.type)


def _text_conditions(conn: Connection, query: str, *, sqlite: bool) -> list[ColumnElement[bool]]:
    """Every word must be a case-insensitive substring of the name or the description.

    SQLite: the trigram index is probed for the words of three characters or more, up to
    ``FTS_PROBE_CAP`` matches among the agents outside the log. Fewer matches (a selective query)
    become an id list, plus the logged agents whose current text contains the words; a probe that
    fills up means the words are common, and then an ordered scan that checks ``LIKE`` row by row
    finds ``limit`` hits sooner than collecting every match would.
    """
    words = query.lower().split()
    conditions: list[ColumnElement[bool]] = []
    if sqlite:
        indexed = [w for w in words if len(w) >= FTS_MIN_WORD]
        if indexed:
            phrases = " AND ".join('"' + w.replace('"', '""') + '"' for w in indexed)
            ids: list[int] = list(conn.execute(_FTS_PROBE, {"fts_query": phrases}).scalars())
            if len(ids) < FTS_PROBE_CAP:
                logged = agents.c.id.in_(_FTS_LOGGED)
                contain = [_contains_word(w) for w in indexed]
                conditions.append(or_(agents.c.id.in_(ids), and_(logged, *contain)))
                words = [w for w in words if len(w) < FTS_MIN_WORD]
    conditions.extend(_contains_word(word) for word in words)
    return conditions


def _contains_word(word: str) -> ColumnElement[bool]:
    """The agent's name or description contains ``word`` (lower case), case-insensitively."""
    pattern = f"%{escape_like(word)}%"
    return or_(
        func.lower(agents.c.name).like(pattern, escape="\\"),
        func.lower(agents.c.description).like(pattern, escape="\\"),
    )
