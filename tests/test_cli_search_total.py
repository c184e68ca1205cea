"""``acti-store search`` says how many agents matched when its limit cut the answer.

The tool's text keeps the contract's ``Found: N`` (the agents shown); the artifact carries the
``total`` (counted by ``repo.count`` only when the page is full) and the CLI prints a second line.
"""

from __future__ import annotations

import pytest
from conftest import make_config

from acti_store import AgentUpdate, SearchQuery, SqlAgentRepository
from acti_store.cli import main
from acti_store.tools.builder import BuilderTools


def _seed(repo: SqlAgentRepository) -> None:
    for i in range(5):
        repo.create(make_config(f"lead_agent_{i}", stratum="RAI" if i % 2 else "RTI"))
    repo.create(make_config("scheduler", description="Books meetings with every attendee"))


@pytest.mark.parametrize(
    ("query", "total"),
    [
        (SearchQuery(), 6),
        (SearchQuery(query="lead", limit=2), 5),
        (SearchQuery(query="lead qualifies", stratum="RAI", limit=1), 2),
        (SearchQuery(query="le", tools=["crm"], tags=["sales"], sort_by="created_at"), 6),
        (SearchQuery(query="nothing like it"), 0),
    ],
    ids=["all", "text", "text-and-filter", "short-word-tools-tags", "none"],
)
def test_count_is_the_number_of_matches_whatever_the_limit(
    repo: SqlAgentRepository, query: SearchQuery, total: int
) -> None:
    _seed(repo)
    assert repo.count(query) == total
    unlimited = query.model_copy(update={"limit": 100})
    assert len(repo.search(unlimited)) == total


def test_count_sees_agents_changed_since_the_text_index_took_in_its_log(
    repo: SqlAgentRepository,
) -> None:
    """SQLite feeds its text index through a log: a fresh write is counted all the same."""
    _seed(repo)
    repo.update("scheduler", AgentUpdate(description="Now it also qualifies leads"))
    assert repo.count(SearchQuery(query="qualifies leads")) == 6


def test_the_tool_artifact_has_the_total_and_the_text_keeps_found(
    repo: SqlAgentRepository,
) -> None:
    _seed(repo)
    text, artifact = BuilderTools(lambda: repo).search_agents(query="lead", limit=3)
    assert (artifact["count"], artifact["total"]) == (3, 5)
    assert "\nFound: 3 agent(s)\n" in text
    _, artifact = BuilderTools(lambda: repo).search_agents(query="lead", limit=10)
    assert (artifact["count"], artifact["total"]) == (5, 5)


def test_the_cli_says_showing_n_of_total_only_when_cut(
    repo: SqlAgentRepository, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(repo)
    assert main(["search", "lead", "--limit", "3", "--url", store_url]) == 0
    out = capsys.readouterr().out
    assert "\nFound: 3 agent(s)\n" in out
    assert out.endswith(
        "Use acti-store show NAME for full details.\n"
        "showing 3 of 5 matching agents: narrow the search, or raise --limit (at most 100)\n"
    )
    assert main(["search", "lead", "--limit", "5", "--url", store_url]) == 0
    assert "showing" not in capsys.readouterr().out
