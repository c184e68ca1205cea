# ruff: noqa: E501 - golden texts are compared whole
"""The four version tools on both engines: their texts (golden), artifacts, errors that never
raise, and the builder agent's ``versions=True`` with its approval rules."""

from __future__ import annotations

import inspect
from typing import Any, cast

import pytest
from conftest import FakeClock, make_config
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from acti_store import SqlAgentRepository
from acti_store.testing import ScriptedChatModel, calls, tool_call
from acti_store.tools import create_builder_agent, make_version_tools
from acti_store.tools.agent import (
    BUILDER_SYSTEM_PROMPT,
    VERSION_INTERRUPT_ON,
    builder_system_prompt,
)
from acti_store.tools.specs import VERSION_TOOL_SPECS, ToolSpec
from acti_store.tools.version_tools import VersionTools

PROMPT_2 = "You are a lead qualification specialist.\nAssess budget first.\nThen authority."

VERSIONS_TEXT = """\
Versions of agent 'lead_qualifier' (current: v3, newest first)
==================================================
v3 [current] [production]  2025-01-09T14:30:22+00:00
    Message: rollback to v1
v2  2025-01-09T14:30:22+00:00
    Message: (none)
==================================================
Labels: production -> v3
Showing the newest 2; older versions are stored: pass a larger limit (at most 100).

Compare two versions with diff_agent_versions('lead_qualifier', <from_version>, <to_version>); go back to one with rollback_agent_config('lead_qualifier', <version>)."""

DIFF_TEXT = """\
Diff of agent 'lead_qualifier'
==================================================
lead_qualifier: version 1 -> 2, 2 fields changed
system_prompt:
  --- lead_qualifier v1 system_prompt
  +++ lead_qualifier v2 system_prompt
  @@ -1 +1,3 @@
  -You are a professional lead qualification specialist. Assess budget, authority, need and timeline for every lead.
  +You are a lead qualification specialist.
  +Assess budget first.
  +Then authority.
tools: added voice; removed communication
==================================================
To make v1 current again: rollback_agent_config('lead_qualifier', 1, confirm=True)"""

PREVIEW_TEXT = """\
PREVIEW: Rolling back agent 'lead_qualifier' to v1 would write v3 with the configuration of v1 (current: v2).

Changes it would apply:
system_prompt:
  --- lead_qualifier v2 system_prompt
  +++ lead_qualifier v1 system_prompt
  @@ -1,3 +1 @@
  -You are a lead qualification specialist.
  -Assess budget first.
  -Then authority.
  +You are a professional lead qualification specialist. Assess budget, authority, need and timeline for every lead.
tools: added communication; removed voice

Nothing was changed. To roll back, call:
  rollback_agent_config('lead_qualifier', 1, confirm=True)"""


@pytest.fixture
def tools(repo: SqlAgentRepository) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in make_version_tools(repo)}


def _call(tool: BaseTool, **args: Any) -> tuple[str, dict[str, Any]]:
    message = tool.invoke({"type": "tool_call", "id": "1", "name": tool.name, "args": args})
    return message.content, message.artifact


def test_the_six_tools_in_order(tools: dict[str, BaseTool]) -> None:
    assert list(tools) == [
        "list_agent_versions", "diff_agent_versions", "rollback_agent_config", "set_agent_label",
        "rollback_agent_label", "compare_agent_versions",
    ]  # fmt: skip
    schema = tools["list_agent_versions"].tool_call_schema.model_json_schema()
    assert schema["properties"]["limit"]["maximum"] == 100


def test_list_diff_and_label_texts(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], clock: FakeClock
) -> None:
    clock.tick = clock.tick * 0  # every timestamp the same second: the texts are fixed
    repo.create(make_config())
    repo.update("lead_qualifier", {"system_prompt": PROMPT_2, "tools": ["crm", "voice"]})
    text, artifact = _call(
        tools["diff_agent_versions"], name="lead_qualifier", from_version=1, to_version=2
    )
    assert text == DIFF_TEXT
    assert artifact["diff"]["changes"][1]["added"] == ["voice"]
    text, artifact = _call(tools["rollback_agent_config"], name="lead_qualifier", to_version=1)
    assert text == PREVIEW_TEXT
    assert artifact["rolled_back"] is False and repo.get("lead_qualifier").metadata.version == 2
    text, artifact = _call(
        tools["rollback_agent_config"], name="lead_qualifier", to_version=1, confirm=True
    )
    assert text.startswith(
        "SUCCESS: Agent 'lead_qualifier' rolled back to the configuration of v1: now v3."
    )
    assert (artifact["previous_version"], artifact["version"]) == (2, 3)
    text, artifact = _call(
        tools["set_agent_label"], name="lead_qualifier", label="production", version=3
    )
    assert (
        text
        == "SUCCESS: Label 'production' of agent 'lead_qualifier' set on v3 (it was not set).\n\nLabels now: production -> v3"
    )
    text, _ = _call(tools["list_agent_versions"], name="lead_qualifier", limit=2)
    assert text == VERSIONS_TEXT
    text, artifact = _call(
        tools["set_agent_label"], name="lead_qualifier", label="production", version=2
    )
    assert "moved from v3 to v2" in text and artifact["from_version"] == 3


def test_errors_come_back_as_texts(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    repo.create(make_config())
    text, artifact = _call(tools["list_agent_versions"], name="nobody")
    assert text.startswith("ERROR: Agent 'nobody' not found.") and artifact["error"] == "not_found"
    text, artifact = _call(
        tools["diff_agent_versions"], name="lead_qualifier", from_version=1, to_version=5
    )
    assert text == (
        "ERROR: Agent 'lead_qualifier' has no version 5 (only 1).\n\n"
        "See the stored versions with list_agent_versions('lead_qualifier')."
    )
    assert artifact["error"] == "version_not_found"
    text, artifact = _call(
        tools["rollback_agent_config"], name="lead_qualifier", to_version=1, confirm=True
    )
    assert text.startswith(
        "ERROR: Agent 'lead_qualifier' already has the configuration of v1 (current: v1)."
    )
    assert artifact["error"] == "no_changes"
    text, artifact = _call(
        tools["set_agent_label"], name="lead_qualifier", label="Prod!", version=1
    )
    assert text.startswith("ERROR: Invalid label 'Prod!'.") and artifact["error"] == "invalid_label"
    text, artifact = _call(tools["list_agent_versions"], name="lead_qualifier", limit=0)
    assert (
        text.startswith("ERROR: Invalid versions parameter.") and artifact["error"] == "validation"
    )
    text, artifact = _call(
        tools["diff_agent_versions"], name="lead_qualifier", from_version=True, to_version=1
    )
    assert artifact["error"] == "validation"
    text, _ = _call(tools["rollback_agent_config"], name="Bad Name", to_version=1)
    assert text.startswith("ERROR: Invalid name")


def test_versions_prompt_and_approval_rules() -> None:
    prompt = builder_system_prompt(versions=True)
    assert (
        prompt.startswith(BUILDER_SYSTEM_PROMPT)
        and builder_system_prompt() == BUILDER_SYSTEM_PROMPT
    )
    assert "rollback_agent_config(name, to_version, confirm)" in prompt
    assert "list_agent_versions(name, limit)" in prompt
    rollback, label = (
        VERSION_INTERRUPT_ON[t]["when"] for t in ("rollback_agent_config", "set_agent_label")
    )

    class Request:
        def __init__(self, **args: Any) -> None:
            self.tool_call = {"args": args}

    assert rollback(Request(confirm=True)) and not rollback(Request(confirm=False))
    assert label(Request(label="production")) and not label(Request(label="staging"))


def test_builder_agent_with_versions_asks_before_a_rollback_or_a_production_move(
    repo: SqlAgentRepository,
) -> None:
    repo.create(make_config())
    repo.update("lead_qualifier", {"system_prompt": PROMPT_2})
    rollback = {"name": "lead_qualifier", "to_version": 1}
    model = ScriptedChatModel(
        script=[
            calls(tool_call("rollback_agent_config", **rollback)),
            calls(tool_call("rollback_agent_config", **rollback, confirm=True)),
            calls(tool_call("set_agent_label", name="lead_qualifier", label="staging", version=2)),
            calls(
                tool_call("set_agent_label", name="lead_qualifier", label="production", version=3)
            ),
            AIMessage("Rolled back and labelled."),
        ]
    )
    agent = create_builder_agent(model, repo, checkpointer=InMemorySaver(), versions=True)
    thread = {"configurable": {"thread_id": "versions"}}

    def pending(state: dict[str, Any]) -> list[str]:
        return [
            r["name"] for i in state.get("__interrupt__", ()) for r in i.value["action_requests"]
        ]

    state = agent.invoke({"messages": [HumanMessage("Go back to v1")]}, thread)
    assert pending(state) == ["rollback_agent_config"]  # the dry run needed no approval
    assert repo.get("lead_qualifier").metadata.version == 2
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    state = agent.invoke(approve, thread)
    assert pending(state) == ["set_agent_label"]  # staging moved freely; production waits
    assert repo.labels("lead_qualifier") == {"staging": 2}
    state = agent.invoke(approve, thread)
    assert repo.labels("lead_qualifier") == {"production": 3, "staging": 2}
    assert repo.get("lead_qualifier").metadata.version == 3
    results = [m.name for m in state["messages"] if isinstance(m, ToolMessage)]
    assert results == ["rollback_agent_config"] * 2 + ["set_agent_label"] * 2
    assert state["messages"][-1].content == "Rolled back and labelled."


@pytest.mark.parametrize("spec", VERSION_TOOL_SPECS, ids=lambda s: s.name)
def test_each_version_tool_is_its_declaration(spec: ToolSpec) -> None:
    """The method takes the schema's arguments (names, order, defaults), and the LangChain tool
    is the declaration (the CLI calls the methods with the same arguments)."""
    method = inspect.signature(getattr(VersionTools, spec.name))
    parameters = list(method.parameters.values())[1:]  # without self
    assert [p.name for p in parameters] == list(spec.parameters)
    for parameter in parameters:
        field = spec.args_schema.model_fields[parameter.name]
        expected = inspect.Parameter.empty if field.is_required() else field.default
        assert parameter.default == expected, parameter.name
    (tool,) = [t for t in make_version_tools(cast(SqlAgentRepository, None)) if t.name == spec.name]
    assert (tool.description, tool.args_schema) == (spec.description, spec.args_schema)
    assert tool.coroutine is not None
