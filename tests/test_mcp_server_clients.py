"""``serve-mcp`` through clients no one here wrote: langchain-mcp-adapters and the MCP Inspector.

A deepagents agent driven by the scripted model loads the server's tools with
langchain-mcp-adapters and creates, searches and deletes an agent through them. The MCP Inspector
(npm's ``@modelcontextprotocol/inspector``, command-line mode) lists the tools and calls two; it
needs ``npx`` (skipped with the reason without it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from contextlib import closing
from typing import Any

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, ToolMessage
from mcp_harness import acti_store, server_env

from acti_store import open_repository
from acti_store.testing import ScriptedChatModel, calls, tool_call
from acti_store.tools import make_builder_tools
from acti_store.tools.specs import TOOL_SPECS

LEAD: dict[str, Any] = make_config().model_dump(mode="json")

# each test starts serve-mcp (or runs agents) in processes,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]


def text_of(message: ToolMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(block["text"] for block in message.content if isinstance(block, dict))


async def test_a_deepagents_agent_builds_through_the_adapters(store_url: str) -> None:
    from deepagents import create_deep_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    argv = acti_store("serve-mcp", "--url", store_url)
    connection: Any = {
        "transport": "stdio",
        "command": argv[0],
        "args": argv[1:],
        "env": server_env(),
    }
    client = MultiServerMCPClient({"acti": connection})
    model = ScriptedChatModel(
        script=[
            calls(tool_call("create_agent_config", **LEAD)),
            calls(tool_call("search_agents", query="lead", stratum="RAI")),
            calls(tool_call("delete_agent_config", name="lead_qualifier")),
            calls(tool_call("delete_agent_config", name="lead_qualifier", confirm=True)),
            AIMessage("Created, found and deleted lead_qualifier."),
        ]
    )
    async with client.session("acti") as session:
        tools = await load_mcp_tools(session)
        agent = create_deep_agent(model=model, tools=tools)
        state = await agent.ainvoke({"messages": [{"role": "user", "content": "Try the store"}]})

    assert {t.name for t in tools} == {spec.name for spec in TOOL_SPECS}
    answers = [text_of(m) for m in state["messages"] if isinstance(m, ToolMessage)]
    assert answers[0].startswith("SUCCESS: Agent configuration created and saved!")
    assert "Found: 1 agent(s)" in answers[1] and "lead_qualifier" in answers[1]
    assert "confirm=True" in answers[2]  # the dry run: the adapters do not elicit
    assert answers[3].startswith("SUCCESS")
    assert state["messages"][-1].text == "Created, found and deleted lead_qualifier."
    with closing(open_repository(store_url)) as repo:
        assert repo.list_agents() == []


NPX = shutil.which("npx")


def inspector(store_url: str, *method: str) -> Any:
    command = [
        str(NPX),
        "-y",
        "@modelcontextprotocol/inspector",
        "--cli",
        *acti_store("serve-mcp", "--url", store_url),
        *method,
    ]
    done = subprocess.run(
        command, env=server_env(), capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(NPX is None, reason="npx (Node.js) is not on this machine")
def test_the_mcp_inspector_lists_and_calls_the_tools(store_url: str) -> None:
    with closing(open_repository(store_url, export_dir="")) as repo:
        repo.create(make_config())
        repo.create(
            make_config(
                "research_assistant",
                description="Researches topics and gathers facts from the web",
                stratum="RTI",
                tools=["websearch"],
            )
        )
        expected = {t.name: t for t in make_builder_tools(repo)}
        search_text = expected["search_agents"].invoke({"query": "lead"})
        tools_text = expected["list_available_tools"].invoke({})

    listed = inspector(store_url, "--method", "tools/list")
    search = inspector(
        store_url,
        "--method",
        "tools/call",
        "--tool-name",
        "search_agents",
        "--tool-arg",
        "query=lead",
    )
    available = inspector(
        store_url, "--method", "tools/call", "--tool-name", "list_available_tools"
    )

    assert [t["name"] for t in listed["tools"]] == [spec.name for spec in TOOL_SPECS]
    assert search["isError"] is False
    assert search["content"] == [{"type": "text", "text": search_text}]
    assert search["structuredContent"]["names"] == ["lead_qualifier"]
    assert available["content"] == [{"type": "text", "text": tools_text}]


@pytest.mark.skipif(NPX is None, reason="npx (Node.js) is not on this machine")
def test_the_mcp_inspector_passes_lists_as_json_text(store_url: str) -> None:
    with closing(open_repository(store_url, export_dir="")) as repo:
        repo.create(make_config())
        repo.create(make_config("research_assistant", tools=["websearch"], tags=["research"]))

    # The Inspector's CLI sends a list argument as the JSON text it was given.
    found = inspector(
        store_url,
        "--method",
        "tools/call",
        "--tool-name",
        "search_agents",
        "--tool-arg",
        'tools=["websearch"]',
        "--tool-arg",
        'tags=["research"]',
    )

    assert found["isError"] is False, found["content"]
    assert found["structuredContent"]["names"] == ["research_assistant"]
