"""The tools invoked as a model invokes them: with a tool call, directly and through LangGraph's
``ToolNode``. A refusal is an error ``ToolMessage`` with its artifact; lists may come as JSON."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from acti_store import SqlAgentRepository
from acti_store.mcp_server.tools import ServedTool
from acti_store.tools import make_builder_tools, make_version_tools
from acti_store.tools.specs import SPECS_BY_NAME


@pytest.fixture
def tools(repo: SqlAgentRepository) -> dict[str, BaseTool]:
    return {t.name: t for t in (*make_builder_tools(repo), *make_version_tools(repo))}


def tool_call(name: str, args: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "args": args}


def invoked(tool: BaseTool, args: Any) -> ToolMessage:
    message = tool.invoke(tool_call(tool.name, args))
    assert isinstance(message, ToolMessage)
    return message


async def ainvoked(tool: BaseTool, args: Any) -> ToolMessage:
    message = await tool.ainvoke(tool_call(tool.name, args))
    assert isinstance(message, ToolMessage)
    return message


#: Refusals of every kind: unknown agent, wrong name, wrong values, nothing to change.
REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("get_agent_config", {"name": "ghost_agent"}, "not_found"),
    ("get_agent_config", {"name": "Bad Name"}, "invalid_name"),
    (
        "create_agent_config",
        {"name": "x_agent", "description": "x", "system_prompt": "y"},
        "validation",
    ),
    ("update_agent_config", {"name": "lead_qualifier"}, "no_changes"),
    ("search_agents", {"limit": 0}, "validation"),
    ("get_agent_history", {"name": "ghost_agent"}, "not_found"),
    ("list_agent_versions", {"name": "ghost_agent"}, "not_found"),
]


@pytest.mark.parametrize(("name", "args", "kind"), REFUSALS)
async def test_a_refusal_is_an_error_tool_message(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], name: str, args: dict[str, Any], kind: str
) -> None:
    repo.create(make_config())
    text = tools[name].invoke(args)  # plain arguments: the text, as before

    for message in (invoked(tools[name], args), await ainvoked(tools[name], args)):
        assert message.status == "error"
        assert message.content == text and text.startswith("ERROR: ")
        assert message.tool_call_id == "call_1" and message.name == name
        assert message.artifact["status"] == "error" and message.artifact["error"] == kind


async def test_a_success_stays_a_success(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    for message in (
        invoked(tools["get_agent_config"], {"name": "lead_qualifier"}),
        await ainvoked(tools["get_agent_config"], {"name": "lead_qualifier"}),
        invoked(tools["list_available_tools"], {}),
    ):
        assert message.status == "success" and message.artifact["status"] == "success"


@pytest.mark.parametrize("args", [{}, {"limit": 5}])
async def test_missing_arguments_have_an_artifact(tools: dict[str, BaseTool], args: Any) -> None:
    tool = tools["get_agent_history"]
    messages = [invoked(tool, args), await ainvoked(tool, args)]
    for message in messages:
        assert message.status == "error"
        assert message.artifact["status"] == "error" and message.artifact["error"] == "validation"
    if args == {}:
        assert messages[0].content == (
            "ERROR: Invalid arguments for get_agent_history.\n\nValidation errors:\n"
            "  - name: Field required\n\nPlease fix the issues and try again."
        )
        assert messages[0].artifact["errors"] == [{"field": "name", "message": "Field required"}]


def test_missing_arguments_answer_as_the_mcp_tools_do(tools: dict[str, BaseTool]) -> None:
    for name in ("get_agent_config", "create_agent_config", "clone_agent_config"):
        message = invoked(tools[name], {})
        served = ServedTool(SPECS_BY_NAME[name], object())
        text, artifact = anyio.run(served.call, {})
        assert (message.content, message.artifact) == (text, artifact)


async def test_tool_node_reports_refusals_as_errors(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(list(tools.values())))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    node = graph.compile()
    calls = [
        tool_call("get_agent_config", {"name": "lead_qualifier"}, "ok"),
        tool_call("get_agent_config", {"name": "ghost_agent"}, "missing"),
        tool_call("get_agent_config", {}, "no_args"),
        tool_call("create_agent_config", {"name": "bad"}, "invalid"),
    ]
    state = {"messages": [AIMessage(content="", tool_calls=calls)]}
    for output in (node.invoke(state), await node.ainvoke(state)):
        answers = [m for m in output["messages"] if isinstance(m, ToolMessage)]
        status = {m.tool_call_id: m.status for m in answers}
        assert status == {
            "ok": "success",
            "missing": "error",
            "no_args": "error",
            "invalid": "error",
        }
        assert all(m.artifact is not None for m in answers)


# --------------------------------------------------------------------------------------------------
# What an update changed reads differently on each side
# --------------------------------------------------------------------------------------------------

INVOICES = "Chases overdue invoices politely by email, then escalates to a phone call after a week"


@pytest.mark.parametrize(
    ("new", "line"),
    [
        (
            INVOICES.replace("email", "SMS"),
            '  - description: "...politely by email, then escalates to a..." -> '
            '"...politely by SMS, then escalates to a..."',
        ),
        (
            INVOICES + " and a letter after a month",
            '  - description: "...after a week" -> "...after a week and a letter after a month"',
        ),
        (  # a difference within the first words: the beginnings, as the contract shows them
            "Escalates overdue invoices at once",
            '  - description: "Chases overdue invoices politely by..." -> '
            '"Escalates overdue invoices at once"',
        ),
    ],
)
def test_update_shows_where_two_texts_differ(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], new: str, line: str
) -> None:
    repo.create(make_config(description=INVOICES))
    text = tools["update_agent_config"].invoke({"name": "lead_qualifier", "description": new})
    assert text.startswith(
        "SUCCESS: Agent 'lead_qualifier' updated (v1 -> v2).\n\nChanges applied:\n"
    )
    assert f"\n{line}\n" in text
    shown = line.split(": ", 1)[1]
    assert len(shown) < 2 * (40 + 6) + len(" -> ")


def test_update_shows_a_change_of_whitespace(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    prompt = make_config().system_prompt
    repo.create(make_config())
    new = prompt.replace(" ", "\n", 1)
    text = tools["update_agent_config"].invoke({"name": "lead_qualifier", "system_prompt": new})
    old_shown, new_shown = text.split("  - system_prompt: ")[1].split("\n")[0].split(" -> ")
    assert old_shown != new_shown and "\\n" in new_shown


# --------------------------------------------------------------------------------------------------
# A list may come as JSON text (the MCP Inspector's CLI and some models send lists so)
# --------------------------------------------------------------------------------------------------


def test_lists_may_be_json_text(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    created = invoked(
        tools["create_agent_config"],
        {**make_config().model_dump(), "tools": '["crm", "communication"]', "tags": ' ["sales"]'},
    )
    assert created.status == "success", created.content
    assert repo.get("lead_qualifier").tools == ["crm", "communication"]
    assert repo.get("lead_qualifier").tags == ["sales"]

    found = invoked(tools["search_agents"], {"tools": '["crm"]', "tags": '["sales"]'})
    assert found.artifact["names"] == ["lead_qualifier"]
    cloned = invoked(
        tools["clone_agent_config"],
        {"source_name": "lead_qualifier", "new_name": "lead_copy", "tags": '["copy"]'},
    )
    assert cloned.status == "success" and repo.get("lead_copy").tags == ["copy"]
    updated = invoked(tools["update_agent_config"], {"name": "lead_qualifier", "tags": "[]"})
    assert updated.status == "success" and repo.get("lead_qualifier").tags == []


@pytest.mark.parametrize("value", ['["crm"', '"crm"', "crm", '{"a": 1}', "[" * 100_000])
def test_text_that_is_no_json_list_is_refused(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], value: str
) -> None:
    repo.create(make_config())
    message = invoked(tools["update_agent_config"], {"name": "lead_qualifier", "tools": value})
    assert message.status == "error"
    assert "  - tools: Input should be a valid list" in message.content
