"""The repository conformance suite: every rule of the store, on SQLite and PostgreSQL, through
the sync methods and through their async twins (``AsyncDriven``: ``get`` is ``await aget``)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from conftest import APIS, AsyncDriven, FakeClock, make_config
from pydantic import ValidationError

from acti_store import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ImportItem,
    InvalidAgentError,
    InvalidInputError,
    NoChangesError,
    SearchQuery,
    SqlAgentRepository,
    VersionConflictError,
)
from acti_store.engines.sqlite.statements import FtsTrigramIndex
from acti_store.models import MAX_TAGS


@pytest.fixture(params=APIS)
def repo(request: pytest.FixtureRequest, repo: SqlAgentRepository) -> Iterator[SqlAgentRepository]:
    """The store of each engine, called through its sync methods or through their async twins."""
    if request.param == "sync":
        yield repo
        return
    driven = AsyncDriven(repo)
    try:
        yield driven  # type: ignore[misc]  # the same methods, each through its twin
    finally:
        driven.close()


def run(repo: SqlAgentRepository, name: str, task: str, success: bool = True, **kw: object):
    record = ExecutionRecord(
        timestamp=repo.now(),
        task=task,
        result_summary=f"done: {task}",
        success=success,
        duration_seconds=kw.pop("duration", 2.0),  # type: ignore[arg-type]
        tool_calls_count=1,
        error_type=None if success else "ExecutionError",
    )
    repo.record_execution(name, record)
    return record


def snapshot(repo: SqlAgentRepository) -> list[tuple[object, ...]]:
    return [(a.model_dump_json(), repo.get_history(a.name, 50)) for a in repo.list_agents()]


# -- create / get ----------------------------------------------------------------------------------


def test_create_sets_fresh_metadata_and_round_trips(repo: SqlAgentRepository, clock: FakeClock):
    start = clock.current
    created = repo.create(make_config(description="Qualifies leads — naïve ünïcode 日本"))
    stored = repo.get("lead_qualifier")
    assert stored == created
    meta = stored.metadata
    assert meta.created_at == meta.updated_at == start
    assert meta.created_at.tzinfo == UTC
    assert (meta.version, meta.execution_count, meta.success_count, meta.error_count) == (
        1,
        0,
        0,
        0,
    )
    assert meta.last_executed_at is None and meta.builder == "acti-agent-builder"
    assert stored.description == "Qualifies leads — naïve ünïcode 日本"
    assert stored.tools == ["communication", "crm"] and stored.tags == ["sales", "qualification"]


def test_duplicate_name_is_refused_and_nothing_changes(repo: SqlAgentRepository):
    repo.create(make_config())
    before = snapshot(repo)
    with pytest.raises(AgentExistsError):
        repo.create(make_config(description="Another agent with the same name"))
    assert snapshot(repo) == before


def test_missing_agent(repo: SqlAgentRepository):
    assert not repo.exists("ghost")
    for call in (
        lambda: repo.get("ghost"),
        lambda: repo.update("ghost", AgentUpdate(model="openai:gpt-4o")),
        lambda: repo.delete("ghost"),
        lambda: repo.clone("ghost", "ghost_two"),
        lambda: run(repo, "ghost", "task"),
        lambda: repo.get_history("ghost"),
        lambda: repo.execution_stats("ghost"),
    ):
        with pytest.raises(AgentNotFoundError):
            call()
    assert repo.list_agents() == [] and repo.archived_history("ghost").executions == []


def test_list_is_sorted_by_name(repo: SqlAgentRepository):
    for name in ("zeta_agent", "alpha_agent", "mid_agent"):
        repo.create(make_config(name))
    assert [a.name for a in repo.list_agents()] == ["alpha_agent", "mid_agent", "zeta_agent"]
    assert repo.list_names() == ["alpha_agent", "mid_agent", "zeta_agent"]


# -- update ----------------------------------------------------------------------------------------


def test_update_applies_only_given_fields_and_bumps_version(
    repo: SqlAgentRepository, clock: FakeClock
):
    created = repo.create(make_config())
    run(repo, "lead_qualifier", "first")
    clock.advance(hours=1)
    updated = repo.update(
        "lead_qualifier", AgentUpdate(description="Enhanced lead qualification with MEDDIC")
    )
    assert updated == repo.get("lead_qualifier")
    assert updated.description == "Enhanced lead qualification with MEDDIC"
    assert updated.tools == created.tools and updated.system_prompt == created.system_prompt
    meta = updated.metadata
    assert meta.version == 2
    assert meta.created_at == created.metadata.created_at
    assert meta.updated_at > created.metadata.updated_at + timedelta(minutes=59)
    assert (meta.execution_count, meta.success_count) == (1, 1)  # preserved
    assert len(repo.get_history("lead_qualifier").executions) == 1  # history preserved


def test_empty_list_clears_and_tag_index_follows(repo: SqlAgentRepository):
    repo.create(make_config(tags=["sales", "production"]))
    repo.update("lead_qualifier", AgentUpdate(tags=[], tools=[]))
    agent = repo.get("lead_qualifier")
    assert agent.tags == [] and agent.tools == [] and agent.metadata.version == 2
    assert repo.search(SearchQuery(tags=["sales"])) == []
    assert repo.search(SearchQuery(tools=["crm"])) == []
    repo.update("lead_qualifier", AgentUpdate(tags=["b2b"]))
    assert [a.name for a in repo.search(SearchQuery(tags=["b2b"]))] == ["lead_qualifier"]


def test_update_errors_write_nothing(repo: SqlAgentRepository):
    repo.create(make_config())
    before = snapshot(repo)
    with pytest.raises(NoChangesError):
        repo.update("lead_qualifier", AgentUpdate())
    with pytest.raises(VersionConflictError) as info:
        repo.update("lead_qualifier", AgentUpdate(model="openai:gpt-4o"), expected_version=7)
    assert (info.value.expected, info.value.actual) == (7, 1)
    with pytest.raises(InvalidAgentError, match="description: String should have at least 10"):
        repo.update("lead_qualifier", AgentUpdate.model_construct(description="short"))
    assert snapshot(repo) == before
    repo.update("lead_qualifier", AgentUpdate(model="openai:gpt-4o"), expected_version=1)
    assert repo.get("lead_qualifier").metadata.version == 2


# -- delete ----------------------------------------------------------------------------------------


def test_delete_with_history(repo: SqlAgentRepository):
    repo.create(make_config())
    run(repo, "lead_qualifier", "one")
    deleted = repo.delete("lead_qualifier")
    assert deleted.name == "lead_qualifier" and deleted.metadata.execution_count == 1
    assert not repo.exists("lead_qualifier")
    assert repo.archived_history("lead_qualifier").executions == []
    assert repo.search(SearchQuery(tags=["sales"])) == []


def test_delete_keeping_history_archives_it(repo: SqlAgentRepository):
    repo.create(make_config())
    for task in ("one", "two"):
        run(repo, "lead_qualifier", task)
    repo.delete("lead_qualifier", delete_history=False)
    archived = repo.archived_history("lead_qualifier")
    assert [r.task for r in archived.executions] == ["two", "one"]
    assert archived.total_executions == 2
    # A later agent of the same name starts fresh; the archive stays apart.
    repo.create(make_config())
    assert repo.get_history("lead_qualifier").executions == []
    run(repo, "lead_qualifier", "three")
    assert [r.task for r in repo.get_history("lead_qualifier").executions] == ["three"]
    assert repo.archived_history("lead_qualifier").total_executions == 2


# -- clone -----------------------------------------------------------------------------------------


def test_clone_follows_the_clone_behaviour_table(repo: SqlAgentRepository, clock: FakeClock):
    repo.create(make_config(tags=["sales", "template"]))
    repo.update("lead_qualifier", AgentUpdate(model="openai:gpt-4o"))
    run(repo, "lead_qualifier", "one", success=False)
    clock.advance(days=1)
    clone = repo.clone("lead_qualifier", "lead_qualifier_v2")
    source = repo.get("lead_qualifier")
    assert clone == repo.get("lead_qualifier_v2")
    assert clone.description == source.description + " (clone)"
    for field in ("system_prompt", "tools", "model", "stratum", "tags"):
        assert getattr(clone, field) == getattr(source, field)
    meta = clone.metadata
    assert (meta.version, meta.execution_count, meta.success_count, meta.error_count) == (
        1,
        0,
        0,
        0,
    )
    assert meta.created_at == meta.updated_at > source.metadata.created_at + timedelta(hours=23)
    assert meta.last_executed_at is None
    assert repo.get_history("lead_qualifier_v2").executions == []


def test_clone_overrides_and_errors(repo: SqlAgentRepository):
    repo.create(make_config(description="d" * 500))
    clone = repo.clone("lead_qualifier", "long_clone")
    assert len(clone.description) == 500 and clone.description.endswith(" (clone)")
    custom = repo.clone("lead_qualifier", "custom", description="A custom description", tags=[])
    assert custom.description == "A custom description" and custom.tags == []
    before = snapshot(repo)
    with pytest.raises(AgentExistsError):
        repo.clone("lead_qualifier", "custom")
    with pytest.raises(InvalidAgentError, match="new_name: name must be snake_case"):
        repo.clone("lead_qualifier", "Lead-Qualifier-V2")
    with pytest.raises(InvalidAgentError, match="tags: 'NOT OK' is not a valid tag"):
        repo.clone("lead_qualifier", "ok_name", tags=["NOT OK"])
    assert snapshot(repo) == before


# -- search ----------------------------------------------------------------------------------------


@pytest.fixture
def catalogue(repo: SqlAgentRepository, clock: FakeClock) -> SqlAgentRepository:
    clock.set(datetime(2025, 1, 8, 10, tzinfo=UTC))
    repo.create(
        make_config(
            "lead_researcher",
            description="Researches lead information",
            tools=["communication", "websearch"],
            tags=["sales", "research"],
        )
    )
    clock.set(datetime(2025, 1, 9, 14, tzinfo=UTC))
    repo.create(make_config("lead_qualifier", tags=["sales", "qualification", "production"]))
    clock.set(datetime(2025, 1, 9, 15, tzinfo=UTC))
    repo.create(
        make_config(
            "appointment_scheduler",
            stratum="ZACS",
            tools=["calendar"],
            description="Schedules appointments and manages calendar 100%_sure",
            tags=["production"],
        )
    )
    clock.set(datetime(2025, 1, 10, 8, tzinfo=UTC))
    repo.create(
        make_config(
            "research_assistant",
            stratum="RTI",
            tools=["websearch"],
            description="Researches topics on the web",
            tags=[],
        )
    )
    repo.create(
        make_config(
            "unsorted_helper",
            stratum=None,
            tools=[],
            tags=[],
            description="Helps with whatever is left over",
        )
    )
    for _ in range(3):
        run(repo, "lead_qualifier", "q")
    run(repo, "research_assistant", "r")
    clock.set(datetime(2025, 1, 11, tzinfo=UTC))
    repo.update("lead_researcher", AgentUpdate(model="openai:gpt-4o"))
    return repo


def names(repo: SqlAgentRepository, **query: object) -> list[str]:
    return [a.name for a in repo.search(SearchQuery.model_validate(query))]


def test_search_filters(catalogue: SqlAgentRepository):
    r = catalogue
    assert names(r) == sorted(names(r))
    assert len(names(r)) == 5
    assert names(r, query="LEAD") == ["lead_qualifier", "lead_researcher"]
    assert names(r, query="scheduler appointment") == ["appointment_scheduler"]
    assert names(r, query="researches web") == ["research_assistant"]
    assert names(r, stratum="RAI") == ["lead_qualifier", "lead_researcher"]
    assert names(r, tools=["communication", "crm"]) == ["lead_qualifier"]
    assert names(r, tools=["websearch"]) == ["lead_researcher", "research_assistant"]
    assert names(r, tags=["sales", "production"]) == ["lead_qualifier"]
    assert names(r, tags=["production"]) == ["appointment_scheduler", "lead_qualifier"]
    assert names(r, tags=["nobody-has-this"]) == []
    assert names(r, created_after="2025-01-09") == [
        "appointment_scheduler",
        "lead_qualifier",
        "research_assistant",
        "unsorted_helper",
    ]
    assert names(r, created_before="2025-01-09") == [
        "appointment_scheduler",
        "lead_qualifier",
        "lead_researcher",
    ]
    assert names(r, created_after="2025-01-09T14:30:00", created_before="2025-01-09") == [
        "appointment_scheduler"
    ]
    assert names(r, min_executions=1) == ["lead_qualifier", "research_assistant"]
    assert names(r, query="lead", stratum="RAI", tools=["websearch"], tags=["research"]) == [
        "lead_researcher"
    ]


#: More distinct tags than an agent can have (issue 25).
TOO_MANY_TAGS = [f"tag-{i}" for i in range(MAX_TAGS + 1)]


@pytest.mark.timeout(60)
def test_search_for_more_tags_than_an_agent_has_is_refused_at_once(
    catalogue: SqlAgentRepository,
):
    """Tags combine with AND and an agent has at most MAX_TAGS: a search for more can match
    nothing, so it is refused as bad input, whatever its size (issue 25: 120 tags took 4.6 s
    on PostgreSQL, 1,000 never ended; SQLite said "Expression tree is too large", reported as
    the store failing). Duplicates and spellings of one tag count once."""
    for tags in (TOO_MANY_TAGS, [f"tag-{i}" for i in range(1000)]):
        with pytest.raises(ValidationError, match=f"at most {MAX_TAGS} tags"):
            SearchQuery(tags=tags)
        # A query that skipped validation is refused by the store too, as bad input.
        unchecked = SearchQuery.model_construct(tags=tags)
        for call in (catalogue.search, catalogue.count, catalogue.search_page):
            with pytest.raises(InvalidInputError, match=f"at most {MAX_TAGS} tags"):
                call(unchecked)
    repeated = SearchQuery(tags=["production"] * 1000 + ["PRODUCTION", " production "])
    assert repeated.tags == ["production"]
    assert names(catalogue, tags=repeated.tags) == ["appointment_scheduler", "lead_qualifier"]


def test_a_repeated_word_or_tag_counts_once(catalogue: SqlAgentRepository):
    """A query of 250 words (its 500 characters) is one condition per distinct word."""
    assert names(catalogue, query="a " * 250) == names(catalogue, query="a")
    assert names(catalogue, query="LEAD lead Lead " * 30) == ["lead_qualifier", "lead_researcher"]
    assert names(catalogue, tags=["sales", "Sales", " sales"] * 100) == names(
        catalogue, tags=["sales"]
    )


def test_search_for_every_tag_an_agent_has(repo: SqlAgentRepository):
    """MAX_TAGS tags, the most an agent has: the agent that has them all, and no other."""
    every = [f"tag-{i}" for i in range(MAX_TAGS)]
    repo.create(make_config("all_tags", tags=every))
    repo.create(make_config("all_but_one", tags=[*every[:-1], "other"]))
    repo.create(make_config("no_tags", tags=[]))
    assert names(repo, tags=every) == ["all_tags"]
    assert names(repo, tags=list(reversed(every))) == ["all_tags"]
    assert names(repo, tags=every[:-1]) == ["all_but_one", "all_tags"]
    assert names(repo, tags=every[:5]) == ["all_but_one", "all_tags"]
    assert names(repo, tags=every[4:]) == ["all_tags"]
    assert names(repo, tags=[*every[:-1], "nobody-has-this"]) == []
    assert repo.count(SearchQuery(tags=every[:-1])) == 2
    page = repo.search_page(SearchQuery(tags=every[:-1], limit=1))
    assert [a.name for a in page.agents] == ["all_but_one"] and page.total == 2


def test_search_wildcards_are_literal_text(catalogue: SqlAgentRepository):
    assert names(catalogue, query="%") == ["appointment_scheduler"]
    assert names(catalogue, query="100%_") == ["appointment_scheduler"]
    assert names(catalogue, query="_") == sorted(
        [
            "appointment_scheduler",
            "lead_qualifier",
            "lead_researcher",
            "research_assistant",
            "unsorted_helper",
        ]
    )
    assert names(catalogue, query="lead%qual") == []
    assert names(catalogue, query="' OR 1=1 --") == []


def test_search_sorts_and_limit(catalogue: SqlAgentRepository):
    r = catalogue
    assert names(r, sort_by="created_at", limit=3) == [
        "unsorted_helper",
        "research_assistant",
        "appointment_scheduler",
    ]
    assert names(r, sort_by="updated_at", limit=1) == ["lead_researcher"]
    assert names(r, sort_by="execution_count", limit=3) == [
        "lead_qualifier",
        "research_assistant",
        "appointment_scheduler",
    ]
    assert len(names(r, limit=1)) == 1


def test_count_by_stratum(catalogue: SqlAgentRepository):
    assert catalogue.count_by_stratum() == {
        "RTI": 1,
        "RAI": 2,
        "ZACS": 1,
        "EEI": 0,
        "IGE": 0,
        None: 1,
    }


# -- history ---------------------------------------------------------------------------------------


def test_record_execution_moves_counters(repo: SqlAgentRepository, clock: FakeClock):
    created = repo.create(make_config())
    first = run(repo, "lead_qualifier", "ok")
    second = run(repo, "lead_qualifier", "boom", success=False)
    meta = repo.get("lead_qualifier").metadata
    assert (meta.execution_count, meta.success_count, meta.error_count) == (2, 1, 1)
    assert meta.last_executed_at == second.timestamp > first.timestamp
    assert meta.updated_at == created.metadata.updated_at and meta.version == 1  # preserved
    history = repo.get_history("lead_qualifier")
    assert history.executions == [second, first]  # newest first, stored exactly
    assert history.total_executions == 2
    errors = repo.get_history("lead_qualifier", errors_only=True)
    assert [r.task for r in errors.executions] == ["boom"] and errors.total_executions == 2


def test_fifo_keeps_the_fifty_newest(repo: SqlAgentRepository):
    repo.create(make_config())
    repo.create(make_config("other_agent"))
    for i in range(51):
        run(repo, "lead_qualifier", f"task {i}", success=i % 10 != 0, duration=float(i))
    run(repo, "other_agent", "untouched")
    history = repo.get_history("lead_qualifier", limit=50)
    assert [r.task for r in history.executions] == [f"task {i}" for i in range(50, 0, -1)]
    assert history.total_executions == 51
    assert [r.task for r in repo.get_history("lead_qualifier", limit=3).executions] == [
        "task 50",
        "task 49",
        "task 48",
    ]
    assert len(repo.get_history("other_agent").executions) == 1
    stats = repo.execution_stats("lead_qualifier")
    assert (stats.total_executions, stats.success_count, stats.error_count) == (51, 45, 6)
    assert stats.retained == 50
    assert stats.average_duration_seconds == pytest.approx(sum(range(1, 51)) / 50)


def test_timestamps_keep_microseconds_and_utc(repo: SqlAgentRepository, clock: FakeClock):
    clock.set(datetime(2025, 1, 10, 9, 20, 45, 123456, tzinfo=UTC))
    repo.create(make_config())
    record = run(repo, "lead_qualifier", "t")
    stored = repo.get_history("lead_qualifier").executions[0]
    assert stored.timestamp == record.timestamp and stored.timestamp.tzinfo == UTC
    assert repo.get("lead_qualifier").metadata.created_at.microsecond == 123456


# -- bulk put (the importer's primitive) -----------------------------------------------------------


def test_bulk_put_is_all_or_nothing(repo: SqlAgentRepository):
    existing = repo.create(make_config())
    newcomer = existing.model_copy(update={"name": "newcomer"})
    before = snapshot(repo)
    with pytest.raises(AgentExistsError):
        repo.bulk_put(
            [ImportItem("newcomer", agent=newcomer), ImportItem("lead_qualifier", agent=existing)],
            on_conflict="fail",
        )
    assert snapshot(repo) == before
    result = repo.bulk_put(
        [ImportItem("newcomer", agent=newcomer), ImportItem("lead_qualifier", agent=existing)]
    )
    assert result.outcomes == {"newcomer": "imported", "lead_qualifier": "skipped"}
    assert repo.get("newcomer").metadata == existing.metadata  # metadata kept exactly


def test_text_search_index_follows_every_write(repo: SqlAgentRepository):
    repo.create(make_config(description="Books dentist appointments"))
    assert names(repo, query="dentist") == ["lead_qualifier"]
    repo.update("lead_qualifier", AgentUpdate(description="Books veterinary appointments"))
    assert names(repo, query="dentist") == []
    assert names(repo, query="VETERINARY appoint") == ["lead_qualifier"]
    repo.clone("lead_qualifier", "vet_clone")
    assert names(repo, query="veterinary") == ["lead_qualifier", "vet_clone"]
    assert names(repo, query="vet clone") == ["vet_clone"]  # words may hit name or description
    repo.delete("lead_qualifier")
    assert names(repo, query="veterinary") == ["vet_clone"]
    assert names(repo, query='"quoted" veterinary') == []


def test_bulk_put_in_batches_keeps_every_agent_its_own_tags_history_and_index(
    repo: SqlAgentRepository, clock: FakeClock
):
    """More agents than one INSERT carries (and not a multiple of it): ids, tags, records and
    the text index must all land on the right agent."""
    from acti_store.repository.strategy import strategy_for

    batch = strategy_for(repo.engine.dialect.name).bulk_batch  # the engine's own batch size
    count = batch * 2 + 7
    donor = repo.create(make_config("donor"))
    run(repo, "donor", "warm up")
    items = []
    for i in range(count):
        agent = make_config(
            f"bulk_{i:04d}", description=f"Handles ticket queue number{i:04d}", tags=[f"t{i % 7}"]
        )
        stored = donor.model_copy(update=dict(agent) | {"metadata": donor.metadata})
        history = None
        if i % 3 == 0:
            records = [
                ExecutionRecord(
                    execution_id=f"run-{i}-{k}",
                    timestamp=clock.current - timedelta(minutes=k),
                    task=f"task {i}/{k}",
                    result_summary="ok",
                    success=True,
                    duration_seconds=1.0,
                    tool_calls_count=0,
                )
                for k in range(i % 5 + 1)  # newest first, as in a history file
            ]
            history = ExecutionHistory(
                agent_name=stored.name, executions=records, total_executions=len(records) + 10
            )
        items.append(ImportItem(stored.name, agent=stored, history=history))
    replacement = repo.get("donor").model_copy(update={"description": "Replaced by the import"})
    items.append(ImportItem("donor", agent=replacement))

    result = repo.bulk_put(items, on_conflict="replace")

    assert result.outcomes["donor"] == "replaced"
    assert sum(o == "imported" for o in result.outcomes.values()) == count
    assert repo.get_history("donor").executions == []  # replaced: its old history went with it
    for i in (0, 1, batch - 1, batch, batch + 1, 2 * batch - 1, 2 * batch, count - 1):
        name = f"bulk_{i:04d}"
        assert names(repo, query=f"number{i:04d}") == [name]
        assert names(repo, query=name, tags=[f"t{i % 7}"]) == [name]
        history = repo.get_history(name, limit=50)
        if i % 3:
            assert history.executions == [] and history.total_executions == 0
        else:
            tasks = [r.task for r in history.executions]
            assert tasks == [f"task {i}/{k}" for k in range(i % 5 + 1)]  # newest first
            assert history.total_executions == i % 5 + 11
    assert names(repo, query="replaced by the import") == ["donor"]


def test_the_same_name_twice_in_one_bulk_put(repo: SqlAgentRepository):
    first = repo.create(make_config())
    repo.delete("lead_qualifier")
    second = first.model_copy(update={"description": "The second version"})
    kept = repo.bulk_put(
        [ImportItem(first.name, agent=first), ImportItem(first.name, agent=second)]
    )
    assert kept.outcomes == {"lead_qualifier": "skipped"}  # the first one is in: skip the second
    assert repo.get("lead_qualifier").description == first.description
    replaced = repo.bulk_put(
        [ImportItem(first.name, agent=second), ImportItem(first.name, agent=first)],
        on_conflict="replace",
    )
    assert replaced.outcomes == {"lead_qualifier": "replaced"}
    assert repo.get("lead_qualifier").description == first.description
    assert names(repo, query="second version") == []


def test_timestamps_from_any_offset_come_back_as_the_same_instant_in_utc(
    repo: SqlAgentRepository, clock: FakeClock
):
    plus_two = timezone(timedelta(hours=2))
    clock.set(datetime(2025, 6, 1, 8, 0, 0, 5, tzinfo=plus_two))
    created = repo.create(make_config())
    stored = repo.get("lead_qualifier").metadata.created_at
    assert stored == created.metadata.created_at == datetime(2025, 6, 1, 6, 0, 0, 5, tzinfo=UTC)
    assert stored.utcoffset() == timedelta(0)
    clock.set(datetime(2025, 6, 1, 9, tzinfo=UTC))
    naive = ExecutionRecord.model_construct(
        execution_id="x",
        timestamp=datetime(2025, 6, 1),
        task="t",
        result_summary="r",
        success=True,
        duration_seconds=1.0,
        tool_calls_count=0,
        error_type=None,
    )
    with pytest.raises((ValueError, AgentStoreError)):
        repo.record_execution("lead_qualifier", naive)
    assert repo.get_history("lead_qualifier").executions == []  # nothing written


def test_text_search_stays_exact_as_writes_pass_through_the_index_log(
    repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
):
    """On SQLite the trigram index takes changes through a log, 256 at a time: search must give
    the same answer as checking every agent, before, at and after each hand-over, through
    updates, deletes, and a deleted agent's id given to the next new one. SQLite's search walks
    first, and this store is small enough that the walk always answers: each check is made
    with the probe first too."""
    rng = random.Random(7)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]

    def description() -> str:
        return " ".join(rng.sample(words, 2)) + f" item{rng.randrange(40)}"

    def check() -> None:
        check_searches()
        with monkeypatch.context() as probing_first:
            probing_first.setattr(FtsTrigramIndex, "walks_first", False)
            check_searches()

    def check_searches() -> None:
        stored = repo.list_agents()
        agents = {a.name: f"{a.name} {a.description}".lower() for a in stored}
        for query in ("alpha", "bravo charlie", "item1", "ECHO item2", "ha golf", "agent_1"):
            expected = sorted(
                n for n, text in agents.items() if all(w in text for w in query.lower().split())
            )
            assert names(repo, query=query, limit=100) == expected[:100], query
            assert repo.count(SearchQuery(query=query)) == len(expected), query
            # Narrowed by another filter, the probe's ids drive the search (SQLite): the same
            # agents, in each sort's order.
            narrowed = [a for a in stored if a.name in expected and a.stratum == "EEI"]
            newest = sorted(narrowed, key=lambda a: a.name)
            newest.sort(key=lambda a: a.metadata.updated_at, reverse=True)
            assert names(repo, query=query, stratum="EEI", sort_by="updated_at", limit=7) == [
                a.name for a in newest[:7]
            ], query
            assert names(repo, query=query, stratum="EEI", limit=100) == sorted(
                a.name for a in narrowed
            ), query

    created = 0
    for round_ in range(3):
        for _ in range(120):
            stratum = rng.choice(("EEI", "RAI"))
            repo.create(
                make_config(f"agent_{created:03d}", description=description(), stratum=stratum)
            )
            created += 1
        for i in range(round_, created, 5):
            if repo.exists(f"agent_{i:03d}"):
                repo.update(f"agent_{i:03d}", AgentUpdate(description=description()))
        for i in range(round_ * 3, created, 13):
            if repo.exists(f"agent_{i:03d}"):
                repo.delete(f"agent_{i:03d}")
        newest = f"agent_{created - 1:03d}"
        repo.delete(newest)  # the highest id: SQLite hands it to the next agent created
        repo.create(make_config(newest, description="a reused id, echo foxtrot"))
        check()
    existing = repo.list_names()
    for k in range(300):  # one write at a time, across a hand-over
        repo.update(existing[k % len(existing)], AgentUpdate(description=description()))
        if k % 29 == 0:
            check()
    check()
