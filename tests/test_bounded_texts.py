"""Every tool's text and artifact stays bounded at any store size: checked at 100,000 agents.

One store per engine is bulk-loaded once (``repo.bulk_put_stream``) and shared by every check of
this module: 100,000 agents on SQLite (13 s), 10,000 on PostgreSQL (its bulk load of 100,000
takes a minute on a 2-core machine; the same checks apply). The first agents by name of each
stratum have the longest descriptions and tags the rules allow, so the bounds are met by size,
not by count alone; one agent has a system prompt of the largest length allowed, one a full
history of the longest records.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, NamedTuple

import pytest
from conftest import BACKENDS, fresh_store

from acti_store import (
    Agent,
    AgentMetadata,
    ExecutionHistory,
    ExecutionRecord,
    ImportItem,
    SqlAgentRepository,
    open_repository,
)
from acti_store.models import (
    DESCRIPTION_MAX_LENGTH,
    HISTORY_MAX_RECORDS,
    MAX_TAGS,
    RESULT_SUMMARY_MAX_LENGTH,
    STRATA,
    TASK_RECORD_MAX_LENGTH,
    TEXT_MAX_LENGTH,
    TOOL_CATEGORIES,
    trusted,
)
from acti_store.tools import make_builder_tools

AGENTS = {"sqlite": 100_000, "postgresql": 10_000, "mysql": 10_000}
TEXT_BOUND = 32_000
ARTIFACT_BOUND = 64 * 1024
#: Stored stratum values in turn: the five strata and none (UNCLASSIFIED).
STRATUM_CYCLE = (*STRATA, None)
LABELS = (*STRATA, "UNCLASSIFIED")
#: The agents sorted first in each stratum carry the longest values allowed.
LONG_PREFIX = "a"
PROMPT_AGENT = "b_prompt_agent"
HISTORY_AGENT = "b_history_agent"
START = datetime(2025, 1, 1, tzinfo=UTC)

pytestmark = pytest.mark.slow


def _agent(i: int) -> Agent:
    stratum = STRATUM_CYCLE[i % len(STRATUM_CYCLE)]
    long = i < 600  # 100 per stratum value
    if long:
        name = f"{LONG_PREFIX}_{i:03d}_" + "x" * 40
        description = ("Long description " * 40)[:DESCRIPTION_MAX_LENGTH]
        tags = [f"t{k}-" + "y" * 28 for k in range(MAX_TAGS)]
    else:
        name = f"agent_{i:06d}"
        description = f"Agent number {i}, qualifies leads in its own way"
        tags = ["sales"]
    prompt = "You are a careful assistant. " * 4
    if i == 600:
        name = PROMPT_AGENT
        prompt = ('A "quoted"\tline\n' * TEXT_MAX_LENGTH)[:TEXT_MAX_LENGTH]
    elif i == 601:
        name = HISTORY_AGENT
    created = START + timedelta(seconds=i)
    return trusted(
        Agent,
        name=name,
        description=description,
        system_prompt=prompt,
        tools=list(TOOL_CATEGORIES[: 1 + i % len(TOOL_CATEGORIES)]),
        model="anthropic:claude-opus-4-5-20251101",
        stratum=stratum,
        tags=tags,
        metadata=AgentMetadata(
            created_at=created,
            updated_at=created,
            execution_count=HISTORY_MAX_RECORDS if i == 601 else 0,
            success_count=HISTORY_MAX_RECORDS // 2 if i == 601 else 0,
            error_count=HISTORY_MAX_RECORDS // 2 if i == 601 else 0,
        ),
    )


def _history() -> ExecutionHistory:
    records = [
        ExecutionRecord(
            execution_id=f"run-{k}",
            timestamp=START + timedelta(minutes=k),
            task=("Qualify the lead " * 40)[:TASK_RECORD_MAX_LENGTH],
            result_summary=("Needs a follow-up " * 20)[:RESULT_SUMMARY_MAX_LENGTH],
            success=k % 2 == 0,
            duration_seconds=1.5,
            tool_calls_count=3,
            error_type=None if k % 2 == 0 else "ExecutionError",
        )
        for k in range(HISTORY_MAX_RECORDS)
    ]
    return ExecutionHistory(
        agent_name=HISTORY_AGENT, executions=records, total_executions=HISTORY_MAX_RECORDS
    )


class Store(NamedTuple):
    repo: SqlAgentRepository
    agents: int

    def counts(self) -> dict[str, int]:
        """Agents per group label."""
        return {label: len(range(k, self.agents, len(LABELS))) for k, label in enumerate(LABELS)}


def _items(agents: int) -> Iterator[ImportItem]:
    for i in range(agents):
        agent = _agent(i)
        history = _history() if agent.name == HISTORY_AGENT else None
        yield ImportItem(agent.name, agent=agent, history=history)


@pytest.fixture(scope="module", params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """A store of many agents on each engine, loaded once for the module."""
    with fresh_store(request.param, tmp_path_factory.mktemp("big")) as url:
        repo = open_repository(url)
        try:
            agents = AGENTS[request.param]
            repo.bulk_put_stream(partial(_items, agents), on_conflict="fail")
            yield Store(repo, agents)
        finally:
            repo.close()


def run(repo: SqlAgentRepository, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """Call a tool as a model does; check both bounds; return its text and artifact."""
    message = {t.name: t for t in make_builder_tools(repo)}[tool].invoke(
        {"type": "tool_call", "id": "1", "name": tool, "args": arguments}
    )
    content, artifact = str(message.content), message.artifact
    size = len(json.dumps(artifact, ensure_ascii=False).encode())
    assert len(content) < TEXT_BOUND, (tool, len(content))
    assert size < ARTIFACT_BOUND, (tool, size)
    print(f"{tool} {arguments}: text {len(content):,} chars, artifact {size:,} bytes")
    return content, artifact


def test_list_shows_the_first_of_each_stratum_with_exact_counts(store: Store) -> None:
    content, artifact = run(store.repo, "list_created_agents")
    counts = store.counts()
    for label, count in counts.items():
        assert f"[{label}] ({count} agent(s))" in content
        shown = len(artifact["groups"][label])
        assert 1 <= shown <= 20
        more = f"  ... and {count - shown} more "
        if label == "UNCLASSIFIED":
            assert more + "(use search_agents() to find one)" in content
        else:
            assert more + f'(use search_agents(stratum="{label}") to see them)' in content
    assert f"Total: {store.agents} agent(s)" in content
    assert artifact["total"] == store.agents
    assert artifact["counts"] == counts
    assert artifact["groups"]["RTI"][0] == _agent(0).name  # the first by name


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_agent_config", {"name": "missing"}),
        ("update_agent_config", {"name": "missing", "tags": ["new"]}),
        ("update_agent_config", {"name": "missing"}),
        ("delete_agent_config", {"name": "missing", "confirm": True}),
        ("clone_agent_config", {"source_name": "missing", "new_name": "copy"}),
        ("get_agent_history", {"name": "missing"}),
    ],
)
def test_not_found_lists_the_first_names_and_the_exact_total(
    store: Store, tool: str, arguments: dict[str, Any]
) -> None:
    content, artifact = run(store.repo, tool, **arguments)
    assert f"Available agents ({store.agents}):\n" in content
    assert f"  ... and {store.agents - 50} more (use search_agents() to find one)" in content
    assert artifact["available_count"] == store.agents
    assert artifact["available"] == sorted(artifact["available"])
    assert len(artifact["available"]) == 50


def test_search_results_stop_at_the_budget(store: Store) -> None:
    content, artifact = run(store.repo, "search_agents", query="long description", limit=100)
    assert "Found: 100 agent(s)" in content
    assert artifact["count"] == 100
    shown = content.count("   Description: Long description")
    assert 0 < shown < 100
    assert (
        f"... and {100 - shown} more result(s) not shown (this text has room for {shown}): "
        "lower the limit or narrow the search to see them." in content
    )
    run(store.repo, "search_agents", limit=100, sort_by="created_at")
    content, _ = run(store.repo, "search_agents", query="no agent has this text")
    assert f"  - UNCLASSIFIED: {store.counts()['UNCLASSIFIED']} agent(s)" in content


def test_history_records_stop_at_the_budget(store: Store) -> None:
    content, artifact = run(store.repo, "get_agent_history", name=HISTORY_AGENT, limit=50)
    assert len(artifact["history"]["executions"]) == 50
    shown = content.count("   Task: Qualify the lead")
    assert 0 < shown < 50
    assert f"Recent Executions (showing {shown} of 50):" in content
    assert (
        f"... and {50 - shown} older record(s) not shown (this text has room for {shown})."
        in content
    )


def test_a_long_system_prompt_is_shown_cut(store: Store) -> None:
    """The text shows the beginning of a 100,000-character prompt; the artifact has it whole
    (an agent's document is bounded by the field limits, not by the store)."""
    tool = {t.name: t for t in make_builder_tools(store.repo)}["get_agent_config"]
    message = tool.invoke(
        {"type": "tool_call", "id": "1", "name": "get_agent_config", "args": {"name": PROMPT_AGENT}}
    )
    content = str(message.content)
    assert len(content) < TEXT_BOUND
    assert content.endswith(
        "\n\nNote: the system_prompt has 100,000 characters; only its beginning is shown above."
    )
    document = json.loads(content.split("Full Configuration:\n", 1)[1].split("\n\nNote:")[0])
    assert document["system_prompt"].endswith("...")
    assert _agent(600).system_prompt.startswith(document["system_prompt"][:-3])
    assert message.artifact["agent"]["system_prompt"] == _agent(600).system_prompt


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("list_available_tools", {}),
        ("get_agent_config", {"name": "agent_000700"}),
        ("get_agent_config", {"name": _agent(0).name}),
        ("delete_agent_config", {"name": _agent(1).name}),
        ("update_agent_config", {"name": "agent_000999"}),
        ("get_agent_history", {"name": "agent_000700"}),
    ],
)
def test_other_tools_stay_bounded(store: Store, tool: str, arguments: dict[str, Any]) -> None:
    """Texts about one agent are bounded by the field limits (each is checked by ``run``)."""
    content, artifact = run(store.repo, tool, **arguments)
    assert artifact["status"] == "success" or "No changes specified" in content


def test_writing_tools_stay_bounded(store: Store) -> None:
    long = _agent(2)
    content, _ = run(store.repo, "clone_agent_config", source_name=long.name, new_name="b_clone")
    assert content.startswith("SUCCESS")
    content, _ = run(store.repo, "update_agent_config", name="b_clone", system_prompt="New. " * 30)
    assert content.startswith("SUCCESS")
    content, _ = run(store.repo, "delete_agent_config", name="b_clone", confirm=True)
    assert content.startswith("SUCCESS")
