"""``acti-store serve-mcp --with-versions`` through the official MCP client (stdio): the version
tools served as their declarations, a label split, a protected label's refusal, a label's
rollback and a comparison, and a person asked before production moves (elicitation) without the
label moving before they answer."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config
from mcp import types
from mcp_harness import acti_store, served

from acti_store import ExecutionRecord, open_repository
from acti_store.mcp_server.tools import ARTIFACT_SCHEMA
from acti_store.tools.specs import TOOL_SPECS, VERSION_TOOL_SPECS

# each test starts serve-mcp in a process,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

NAME = "lead_qualifier"
SPLIT = [{"version": 1, "weight": 90}, {"version": 2, "weight": 10}]


def serve(store_url: str, *options: str) -> list[str]:
    return acti_store("serve-mcp", "--url", store_url, "--with-versions", *options)


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.fixture
def two_versions(store_url: str) -> str:
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
        prompt = "You are a lead qualification specialist.\nAssess budget first, then authority."
        repo.update(NAME, {"system_prompt": prompt})
        for index in range(4):
            record = ExecutionRecord(
                timestamp=repo.now(),
                task=f"Qualify lead {index}",
                result_summary="done",
                success=True,
                duration_seconds=1.0,
            )
            repo.record_execution(NAME, record, version=1)
    return store_url


class Person:
    """An elicitation callback that answers ``actions`` in turn (then accepts), and remembers
    what it was asked and where the labels were while it was asked."""

    def __init__(self, store_url: str, *actions: str) -> None:
        self.actions = list(actions)
        self.store_url = store_url
        self.asked: list[str] = []
        self.labels_when_asked: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        with closing(open_repository(self.store_url)) as repo:
            self.labels_when_asked.append(repo.label_weights(NAME))
        action = self.actions.pop(0) if self.actions else "accept"
        content = {} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]


async def test_with_versions_serves_the_version_tools(two_versions: str, tmp_path: Path) -> None:
    person = Person(two_versions)
    async with served(
        "stdio", serve(two_versions), tmp_path / "log", elicitation_callback=person
    ) as server:
        listed = {t.name: t for t in (await server.session.list_tools()).tools}
        split = await server.session.call_tool(
            "set_agent_label", {"name": NAME, "label": "canary", "split": SPLIT}
        )
        compared = await server.session.call_tool(
            "compare_agent_versions", {"name": NAME, "a": 1, "b": 2}
        )
        with closing(open_repository(two_versions)) as repo:
            repo.protect_label(NAME, "canary", min_runs=3)
        refused = await server.session.call_tool(
            "set_agent_label", {"name": NAME, "label": "canary", "version": 2, "force": True}
        )
        rolled = await server.session.call_tool(
            "rollback_agent_label", {"name": NAME, "label": "canary"}
        )

    assert list(listed) == [s.name for s in (*TOOL_SPECS, *VERSION_TOOL_SPECS)]
    schema = listed["set_agent_label"].inputSchema["properties"]
    assert "split" in schema and "force" not in schema
    assert listed["compare_agent_versions"].annotations is not None
    assert listed["compare_agent_versions"].annotations.readOnlyHint is True
    assert listed["rollback_agent_label"].outputSchema == ARTIFACT_SCHEMA
    assert person.asked == []  # canary is not production: nobody is asked

    assert not split.isError and text_of(split).startswith(
        "SUCCESS: Label 'canary' of agent 'lead_qualifier' set on v1 90 % / v2 10 %"
    )
    assert split.structuredContent is not None and split.structuredContent["to_weights"] == SPLIT
    assert text_of(compared).startswith("Version Comparison: lead_qualifier (v1 vs v2)")
    assert "  Runs: 4\n" in text_of(compared)

    assert refused.isError and refused.structuredContent is not None
    assert refused.structuredContent["error"] == "gate_refused"
    assert "Only a person can move it past the gate" in text_of(refused)

    assert not rolled.isError and "rolled back" in text_of(rolled)
    with closing(open_repository(two_versions)) as repo:
        assert "canary" not in repo.label_weights(NAME)  # the split had set it: now unset


async def test_moving_production_asks_the_person_before_it_moves(
    two_versions: str, tmp_path: Path
) -> None:
    with closing(open_repository(two_versions)) as repo:
        repo.set_label(NAME, "production", 1)
    person = Person(two_versions, "decline", "accept")
    move = {"name": NAME, "label": "production", "split": SPLIT}
    async with served(
        "stdio", serve(two_versions), tmp_path / "log", elicitation_callback=person
    ) as server:
        declined = await server.session.call_tool("set_agent_label", move)
        accepted = await server.session.call_tool("set_agent_label", move)

    question = (
        "Move label 'production' of agent 'lead_qualifier' to the split v1 90 % / v2 10 %. "
        "Approve or reject."
    )
    assert person.asked == [question, question]
    # Not moved while the person was asked, either time; moved once they accepted.
    assert person.labels_when_asked == [{"production": {1: 100}}] * 2
    assert declined.isError and declined.structuredContent is not None
    assert declined.structuredContent["error"] == "declined"
    assert not accepted.isError
    with closing(open_repository(two_versions)) as repo:
        assert repo.label_weights(NAME) == {"production": {1: 90, 2: 10}}


async def test_read_only_with_versions_serves_the_reading_version_tools(
    two_versions: str, tmp_path: Path
) -> None:
    async with served("stdio", serve(two_versions, "--read-only"), tmp_path / "log") as server:
        names = [t.name for t in (await server.session.list_tools()).tools]
    assert [n for n in names if n in {s.name for s in VERSION_TOOL_SPECS}] == [
        "list_agent_versions",
        "diff_agent_versions",
        "compare_agent_versions",
    ]
