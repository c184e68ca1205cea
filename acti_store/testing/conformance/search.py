"""Search: its filters (text, stratum, tools, tags, dates, runs), sorts, limits and counts, and
paging through ``search_page``."""

from __future__ import annotations

from typing import Any

import pytest

from ...errors import InvalidCursorError, InvalidInputError
from ...models import MAX_TAGS, SEARCH_LIMIT_DEFAULT, SORT_FIELDS, STRATA, Agent, SearchQuery
from ...repository import AgentRepository
from .base import ConformanceBase, make_config, refused, run


def names(repo: AgentRepository, **query: Any) -> list[str]:
    """The names ``repo.search`` finds for ``query``'s fields."""
    return [a.name for a in repo.search(SearchQuery.model_validate(query))]


def in_order(agents: list[Agent], sort_by: str) -> list[str]:
    """``agents``' names in ``sort_by``'s order: by name; else the field descending, ties by
    name ascending."""
    if sort_by == "name":
        return sorted(a.name for a in agents)
    by_name = sorted(agents, key=lambda a: a.name)
    return [
        a.name for a in sorted(by_name, key=lambda a: getattr(a.metadata, sort_by), reverse=True)
    ]


def fill_catalogue(repo: AgentRepository) -> AgentRepository:
    """Five agents of various strata, tools, tags and runs (times from the store's clock)."""
    repo.create(
        make_config(
            "lead_researcher",
            description="Researches lead information",
            tools=["communication", "websearch"],
            tags=["sales", "research"],
        )
    )
    repo.create(make_config("lead_qualifier", tags=["sales", "qualification", "production"]))
    repo.create(
        make_config(
            "appointment_scheduler",
            stratum="ZACS",
            tools=["calendar"],
            description="Schedules appointments and manages calendar 100%_sure",
            tags=["production"],
        )
    )
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
    repo.update("lead_researcher", {"model": "openai:gpt-4o"})
    return repo


class SearchRules(ConformanceBase):
    @pytest.fixture
    def catalogue(self, repo: AgentRepository) -> AgentRepository:
        return fill_catalogue(repo)

    def test_text_words_must_all_be_in_the_name_or_description(
        self, catalogue: AgentRepository
    ) -> None:
        r = catalogue
        for query, expected in (
            ("LEAD", ["lead_qualifier", "lead_researcher"]),
            ("scheduler appointment", ["appointment_scheduler"]),
            ("researches web", ["research_assistant"]),
            ("helper whatever", ["unsorted_helper"]),
            ("%", ["appointment_scheduler"]),
            ("100%_", ["appointment_scheduler"]),
            ("lead%qual", []),
            ("' OR 1=1 --", []),
        ):
            found = names(r, query=query)
            assert found == expected, (
                "SEARCH: every word of query is a case-insensitive substring of the name or "
                f"the description, wildcards literal: query={query!r} gave {found}, not {expected}"
            )

    def test_stratum_and_tools_filters(self, catalogue: AgentRepository) -> None:
        for query, expected in (
            ({"stratum": "RAI"}, ["lead_qualifier", "lead_researcher"]),
            ({"tools": ["communication", "crm"]}, ["lead_qualifier"]),
            ({"tools": ["websearch"]}, ["lead_researcher", "research_assistant"]),
            ({"min_executions": 1}, ["lead_qualifier", "research_assistant"]),
        ):
            found = names(catalogue, **query)
            assert found == expected, (
                f"SEARCH: stratum, tools (all of them) and min_executions filter: {query} "
                f"gave {found}, not {expected}"
            )

    def test_tag_filter_keeps_agents_with_every_tag(self, catalogue: AgentRepository) -> None:
        for tags, expected in (
            (["sales"], ["lead_qualifier", "lead_researcher"]),
            (["production"], ["appointment_scheduler", "lead_qualifier"]),
            (["sales", "production"], ["lead_qualifier"]),
            (["PRODUCTION", " sales "], ["lead_qualifier"]),
            (["nobody-has-this"], []),
        ):
            found = names(catalogue, tags=tags)
            assert found == expected, (
                "TAGS: a search by tags returns only the agents that have ALL of them: "
                f"tags={tags} gave {found}, not {expected}"
            )
            count = catalogue.count({"tags": tags})
            assert count == len(expected), f"TAGS: count by tags={tags} is {count}"

    def test_date_filters_and_combined_filters(self, catalogue: AgentRepository) -> None:
        agents = catalogue.list_agents()
        bound = catalogue.get("appointment_scheduler").metadata.created_at
        after = sorted(a.name for a in agents if a.metadata.created_at >= bound)
        before = sorted(a.name for a in agents if a.metadata.created_at <= bound)
        found = names(catalogue, created_after=bound, limit=100)
        assert found == after, f"SEARCH: created_after is inclusive: {found}, not {after}"
        found = names(catalogue, created_before=bound, limit=100)
        assert found == before, f"SEARCH: created_before is inclusive: {found}, not {before}"
        found = names(
            catalogue, query="lead", stratum="RAI", tools=["websearch"], tags=["research"]
        )
        assert found == ["lead_researcher"], f"SEARCH: filters combine with AND: {found}"

    def test_every_sort_and_its_ties(self, catalogue: AgentRepository) -> None:
        agents = catalogue.list_agents()
        for sort_by in SORT_FIELDS:
            expected = in_order(agents, sort_by)
            found = names(catalogue, sort_by=sort_by, limit=100)
            assert found == expected, (
                f"SORT: sort_by={sort_by} orders by name, else newest/most first, ties by "
                f"name: {found}, not {expected}"
            )
        top = names(catalogue, sort_by="execution_count", limit=1)
        assert top == ["lead_qualifier"], f"SORT: execution_count puts the most run first: {top}"

    def test_limit_and_count(self, repo: AgentRepository) -> None:
        total = SEARCH_LIMIT_DEFAULT + 2
        for i in range(total):
            repo.create(make_config(f"agent_{i:02d}"))
        found = len(repo.search({}))
        assert found == SEARCH_LIMIT_DEFAULT, f"LIMIT: the default limit is 20, got {found}"
        for limit in (1, 2, total, 100):
            found = len(repo.search({"limit": limit}))
            assert found == min(limit, total), f"LIMIT: limit={limit} gave {found} agents"
        assert repo.count({"limit": 1}) == total, "LIMIT: count ignores the limit"

    def test_count_by_stratum(self, catalogue: AgentRepository) -> None:
        expected: dict[str | None, int] = {stratum: 0 for stratum in STRATA}
        expected |= {"RAI": 2, "RTI": 1, "ZACS": 1, None: 1}
        found = catalogue.count_by_stratum()
        assert found == expected, f"SEARCH: count_by_stratum names every stratum: {found}"

    def test_bad_queries_are_refused(self, catalogue: AgentRepository) -> None:
        for query in ({"limit": 0}, {"limit": 101}, {"sort_by": "popularity"}):
            with refused(InvalidInputError, f"ERRORS: search {query} raises InvalidInputError"):
                catalogue.search(query)
        too_many = SearchQuery.model_construct(tags=[f"tag-{i}" for i in range(MAX_TAGS + 1)])
        rule = f"ERRORS: a search for more than {MAX_TAGS} tags (none can match) is refused"
        with refused(InvalidInputError, rule):
            catalogue.search(too_many)

    def test_search_follows_every_write(self, repo: AgentRepository) -> None:
        repo.create(make_config(description="Books dentist appointments", tags=["sales"]))
        repo.update("lead_qualifier", {"description": "Books veterinary visits", "tags": ["b2b"]})
        assert names(repo, query="dentist") == [], "SEARCH: an update replaces the old text"
        assert names(repo, tags=["sales"]) == [], "TAGS: an update replaces the old tags"
        assert names(repo, tags=["b2b"]) == ["lead_qualifier"], "TAGS: the new tags are found"
        repo.clone("lead_qualifier", "vet_clone")
        found = names(repo, query="veterinary", tags=["b2b"])
        assert found == ["lead_qualifier", "vet_clone"], f"SEARCH: a clone is found: {found}"
        repo.delete("lead_qualifier")
        found = names(repo, query="veterinary", tags=["b2b"])
        assert found == ["vet_clone"], f"SEARCH: a deleted agent is not found: {found}"

    def test_every_tag_an_agent_can_have(self, repo: AgentRepository) -> None:
        every = [f"tag-{i}" for i in range(MAX_TAGS)]
        repo.create(make_config("all_tags", tags=every))
        repo.create(make_config("all_but_one", tags=[*every[:-1], "other"]))
        for tags, expected in (
            (every, ["all_tags"]),
            (every[:-1], ["all_but_one", "all_tags"]),
            ([*every[:-1], "nobody-has-this"], []),
        ):
            found = names(repo, tags=tags)
            assert found == expected, f"TAGS: all {len(tags)} tags must match: {found}"


class PagingRules(ConformanceBase):
    def test_pages_walk_every_match_once_in_order(self, repo: AgentRepository) -> None:
        fill_catalogue(repo)
        for sort_by in SORT_FIELDS:
            query = SearchQuery(sort_by=sort_by, limit=2)
            seen: list[str] = []
            cursor: str | None = None
            for _ in range(10):
                page = repo.search_page(query, cursor)
                assert page.total == 5, f"PAGING: total counts every match, not {page.total}"
                seen += [a.name for a in page.agents]
                cursor = page.next_cursor
                if cursor is None:
                    break
            expected = names(repo, sort_by=sort_by, limit=100)
            assert seen == expected, (
                f"PAGING: the pages of sort_by={sort_by} give every match once, in order: "
                f"{seen}, not {expected}"
            )
        last = repo.search_page({"limit": 5})
        assert last.next_cursor is None, "PAGING: the last page has no next_cursor"

    def test_a_foreign_cursor_is_refused(self, repo: AgentRepository) -> None:
        fill_catalogue(repo)
        cursor = repo.search_page({"limit": 2}).next_cursor
        assert cursor is not None, "PAGING: a page followed by another has a next_cursor"
        for query, bad in (
            ({"limit": 2}, "not-a-cursor"),
            ({"limit": 2, "sort_by": "created_at"}, cursor),
            ({"limit": 2, "tags": ["sales"]}, cursor),
        ):
            rule = "PAGING: a cursor not made by this query's pages raises InvalidCursorError"
            with refused(InvalidCursorError, rule):
                repo.search_page(query, bad)

    def test_iter_agents_page_size_follows_its_rule(self, repo: AgentRepository) -> None:
        for size in (0, -1, True):
            with refused(InvalidInputError, f"ERRORS: iter_agents(page_size={size!r})"):
                list(repo.iter_agents(page_size=size))
