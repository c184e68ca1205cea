"""Reading the store page by page: the export's one-snapshot stream, ``iter_agents``, and
``search_page`` (keyset pagination on a search's sort; the cursor is in ``cursor``).

An export must be the store as it was at one moment, so all its pages are read in ONE read
transaction held on one connection (SQLite: ``BEGIN``; PostgreSQL: REPEATABLE READ, READ ONLY).
Neither engine blocks writers for it; on SQLite the WAL cannot be reset past the reader's
snapshot while it lasts, so the WAL grows with the writes made during a long export.
``iter_agents`` instead reads each page in its own short read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.engine import Dialect

from ..connections import Connections, roll_back
from ..dberrors import translate_errors
from ..models import Agent, ExecutionHistory, SearchQuery
from ..sqlexec import Cursor
from ..versioning import VersionLog
from .cursor import SortKey, encode_cursor
from .port import SearchPage
from .search import page_rows
from .statements import AGENTS_PAGE, GET_ID, NAME, agent_from_row, export_page
from .strategy import EngineStrategy
from .transaction import begin_transaction, forget_tenant, use_tenant
from .versions import read_version_log

T = TypeVar("T")
#: ``SqlAgentRepository._read``: runs a read on a cursor, its errors translated.
Read = Callable[[Callable[[Cursor], T]], T]


#: What the export stream yields for an agent and its history, read on the stream's cursor
#: (so from its snapshot): ``export_entry``, or ``versions_entry`` for an export with versions.
Entry = Callable[[Cursor, Agent, ExecutionHistory | None], T]


def export_entry(
    _cursor: Cursor, agent: Agent, history: ExecutionHistory | None
) -> tuple[Agent, ExecutionHistory | None]:
    return agent, history


def versions_entry(
    cursor: Cursor, agent: Agent, history: ExecutionHistory | None
) -> tuple[Agent, ExecutionHistory | None, VersionLog]:
    """The agent, its history and its version log, all from one snapshot: the log holds the
    agent's own version whatever is updated or pruned meanwhile."""
    row = cursor.first(GET_ID, {"name": agent.name})
    assert row is not None  # the page read it in this snapshot
    return agent, history, read_version_log(cursor, agent.name, row[0])


def export_stream(
    connections: Connections,
    dialect: Dialect,
    dbapi: Any,
    engine: EngineStrategy,
    page_size: int,
    entry: Entry[T],
    tenant: str,
) -> Iterator[T]:
    """Every agent with its history, by name, ``page_size`` agents per page, all pages from one
    snapshot: the read transaction the engine's ``begin_snapshot`` opens on one connection taken
    from ``connections``; ``entry`` turns each into what is yielded, reading more in that
    snapshot if it needs to. However the stream ends (exhausted, ``close()``d, the consumer
    raising), the transaction is rolled back and the connection given back. ``tenant``: the
    store's (``transaction.use_tenant``)."""
    with translate_errors(dbapi):  # a server down or restarting: StoreUnavailableError
        connection = connections.take()
        try:
            raw_cursor = connection.cursor()
            cursor = Cursor(raw_cursor, dialect)
            if use_tenant(engine, connection, cursor, tenant):
                connection.commit()  # before the snapshot's first statement
        except BaseException:
            forget_tenant(connection)
            roll_back(connections, connection)
            raise

    def read_page(after: str, *, first: bool) -> tuple[list[T], str]:
        """The entries of the page after ``after``, and the name of its last agent."""
        with translate_errors(dbapi):  # transient or lasting, as ``dberrors`` decides
            if first:
                begin_transaction(engine, cursor, engine.begin_snapshot, tenant=tenant)
            page = export_page(cursor, after, page_size, engine.export_records)
            last = page[-1][0].name if page else after
            return [entry(cursor, agent, history) for agent, history in page], last

    try:
        entries, last = read_page("", first=True)
        while entries:
            yield from entries
            if len(entries) < page_size:
                return
            entries, last = read_page(last, first=False)
    finally:
        raw_cursor.close()  # ends a half-read statement
        roll_back(connections, connection)  # ends the snapshot; the connection goes back


def agent_pages(read: Read[list[Any]], page_size: int) -> Iterator[Agent]:
    """Every agent, by name: ``page_size`` per ``read``, each page its own short read."""
    after = ""
    while True:
        values = {"after": after, "page_size": page_size}
        rows = read(partial(_agents_page, values=values))
        yield from map(agent_from_row, rows)
        if len(rows) < page_size:
            return
        after = rows[-1][NAME]


def _agents_page(cursor: Cursor, values: dict[str, Any]) -> list[Any]:
    return cursor.all(AGENTS_PAGE, values)


def search_page(
    cursor: Cursor, query: SearchQuery, after: SortKey | None, engine: EngineStrategy
) -> SearchPage:
    """The page of ``query`` after the sort key ``after`` (None: the first page), on ``cursor``.

    ``total`` is counted as ``repo.count`` counts. Run it in one read transaction: the text
    probe (the engine's, if any), the count and the page are read from one snapshot. One row
    more than the page is read: the next cursor is given only when another page follows.
    """
    total, rows = page_rows(cursor, query, after, engine)
    agents = [agent_from_row(row) for row in rows[: query.limit]]
    more = len(rows) > query.limit
    return SearchPage(
        agents=agents,
        total=total,
        next_cursor=encode_cursor(query, agents[-1]) if more else None,
    )
