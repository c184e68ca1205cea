"""``search_page`` walks every match of a query page by page (keyset pagination on its sort), and
``iter_agents`` streams every agent; both stable while other processes create agents."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from conftest import FakeClock, make_config
from workers import snapshots
from workers.harness import context

from acti_store import (
    Agent,
    AgentMetadata,
    AgentStoreError,
    ExecutionRecord,
    ImportItem,
    InvalidCursorError,
    SearchPage,
    SearchQuery,
    SqlAgentRepository,
    open_repository,
)

START = datetime(2025, 1, 1, tzinfo=UTC)


def _agent(name: str, *, minute: int, runs: int = 0, description: str = "Pageable agent") -> Agent:
    moment = START + timedelta(minutes=minute)
    return Agent(
        name=name,
        description=description,
        system_prompt=make_config().system_prompt,
        tags=["paging"],
        metadata=AgentMetadata(
            created_at=moment,
            updated_at=moment,
            execution_count=runs,
            success_count=runs,
        ),
    )


def _seed(repo: SqlAgentRepository, count: int) -> list[Agent]:
    """``count`` agents whose sort keys tie in groups (7 share a created_at, 5 a run count)."""
    agents = [
        _agent(f"page_{i:05d}", minute=i // 7, runs=(i * 37) % (count // 5 + 1))
        for i in range(count)
    ]
    repo.bulk_put([ImportItem(name=a.name, agent=a) for a in agents])
    return agents


def _walk(repo: SqlAgentRepository, query: SearchQuery) -> tuple[list[str], list[int]]:
    names: list[str] = []
    totals: list[int] = []
    cursor: str | None = None
    while True:
        page = repo.search_page(query, cursor)
        assert isinstance(page, SearchPage)
        assert len(page.agents) <= query.limit
        names += [agent.name for agent in page.agents]
        totals.append(page.total)
        if page.next_cursor is None:
            return names, totals
        assert len(page.agents) == query.limit
        cursor = page.next_cursor


@pytest.mark.parametrize("sort_by", ["name", "created_at", "updated_at", "execution_count"])
def test_search_page_walks_every_match_once_in_the_sort_order(
    repo: SqlAgentRepository, sort_by: str
) -> None:
    _seed(repo, 230)
    repo.create(make_config("other_agent", description="Not part of the walk"))
    query = SearchQuery(query="pageable", sort_by=sort_by, limit=25)  # type: ignore[arg-type]
    names, totals = _walk(repo, query)

    expected = [a.name for a in repo.search(query.model_copy(update={"limit": 100}))]
    assert names[:100] == expected  # the same order as search
    assert len(names) == len(set(names)) == 230
    assert totals == [230] * 10


def test_the_last_page_has_no_cursor_even_when_it_is_full(repo: SqlAgentRepository) -> None:
    _seed(repo, 20)
    page = repo.search_page(SearchQuery(limit=20))
    assert (len(page.agents), page.total, page.next_cursor) == (20, 20, None)
    empty = repo.search_page(SearchQuery(query="nothing matches this", limit=20))
    assert (empty.agents, empty.total, empty.next_cursor) == ([], 0, None)


def test_a_malformed_cursor_is_a_clear_error(repo: SqlAgentRepository) -> None:
    _seed(repo, 10)
    query = SearchQuery(sort_by="execution_count", limit=3)
    cursor = repo.search_page(query).next_cursor
    assert cursor is not None
    payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))

    def forged(**changes: object) -> str:
        text = json.dumps(payload | changes).encode()
        return base64.urlsafe_b64encode(text).decode().rstrip("=")

    bad = {
        "not base64": "not a cursor!",
        "not json": base64.urlsafe_b64encode(b"\xff\x00").decode(),
        "a list": base64.urlsafe_b64encode(b"[1, 2]").decode(),
        "huge": "A" * 10_000,
        "wrong key type": forged(k=["many", "page_00001"]),
        "bad name": forged(k=[3, "'; DROP TABLE agents; --"]),
        "short key": forged(k=[3]),
        "text for a count": forged(k=["1 OR 1=1", "page_00001"]),
    }
    for label, text in bad.items():
        with pytest.raises(InvalidCursorError) as caught:
            repo.search_page(query, text)
        assert isinstance(caught.value, AgentStoreError) and isinstance(caught.value, ValueError)
        assert "invalid search cursor" in str(caught.value), label
    with pytest.raises(InvalidCursorError, match="sort_by='execution_count'"):
        repo.search_page(SearchQuery(sort_by="name", limit=3), cursor)
    with pytest.raises(InvalidCursorError, match="other filters"):
        repo.search_page(SearchQuery(sort_by="execution_count", stratum="RAI", limit=3), cursor)
    with pytest.raises(InvalidCursorError, match="not int"):
        repo.search_page(query, 42)  # type: ignore[arg-type]
    # The page size may change between pages: the cursor is the same query's.
    assert len(repo.search_page(query.model_copy(update={"limit": 5}), cursor).agents) == 5


def test_iter_agents_streams_every_agent_by_name(repo: SqlAgentRepository) -> None:
    agents = _seed(repo, 53)
    assert [a.name for a in repo.iter_agents(page_size=10)] == sorted(a.name for a in agents)
    assert [a.model_dump() for a in repo.iter_agents()] == [a.model_dump() for a in agents]
    assert list(repo.iter_agents(page_size=53))[-1].name == "page_00052"


def test_an_agent_whose_run_count_grows_after_it_was_seen_is_not_seen_again(
    repo: SqlAgentRepository, clock: FakeClock
) -> None:
    _seed(repo, 30)
    query = SearchQuery(sort_by="execution_count", limit=10)
    first = repo.search_page(query)
    moved = first.agents[0].name  # the walk has passed it; its key now grows
    repo.record_execution(
        moved,
        ExecutionRecord(
            timestamp=clock(), task="t", result_summary="ok", success=True, duration_seconds=1
        ),
    )
    seen = [a.name for a in first.agents]
    cursor = first.next_cursor
    while cursor is not None:
        page = repo.search_page(query, cursor)
        seen += [a.name for a in page.agents]
        cursor = page.next_cursor
    assert sorted(seen) == sorted(f"page_{i:05d}" for i in range(30))


# -- while another process creates agents ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sort_by", ["name", "created_at"])
def test_walks_see_every_agent_once_while_another_process_creates_agents(
    store_url: str, sort_by: str
) -> None:
    repo = open_repository(store_url)
    try:
        _seed(repo, 5000)
        query = SearchQuery(query="pageable", sort_by=sort_by, limit=100)  # type: ignore[arg-type]
        quiet, totals = _walk(repo, query)
        assert totals == [5000] * 50 and len(quiet) == len(set(quiet)) == 5000

        ctx = context()
        started, stop = ctx.Event(), ctx.Event()
        creator = ctx.Process(
            target=snapshots.create_until_stopped, args=(store_url, started, stop)
        )
        creator.start()
        try:
            assert started.wait(30)
            names, totals = _walk(repo, query)
            streamed = [a.name for a in repo.iter_agents(page_size=100)]
        finally:
            stop.set()
            creator.join(30)
        assert creator.exitcode == 0
        newcomers = repo.search(SearchQuery(query="newcomer", limit=1))
        assert newcomers  # the creator wrote during the walks
        for walked in (names, [n for n in streamed if n.startswith("page_0")]):
            assert len(walked) == len(set(walked))  # nobody twice
            assert set(quiet) <= set(walked)  # everyone who was there throughout
        assert totals[-1] > 5000 and totals == sorted(totals)
    finally:
        repo.close()
