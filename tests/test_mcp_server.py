"""``acti-store serve-mcp`` through the official MCP Python client, over stdio and streamable HTTP.

The server is the real command in its own process (``mcp_harness``); every tool's answer is
compared with what the LangChain tool answers for the same call on a twin store that went through
the same calls (times and the store's location aside), resources with the files export writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config
from langchain_core.messages import ToolMessage
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp_harness import TRANSPORTS, acti_store, served

from acti_store import ExecutionRecord, SqlAgentRepository, export_json, open_repository
from acti_store.mcp_server import texts
from acti_store.mcp_server.resources import RESOURCE_NOT_FOUND
from acti_store.mcp_server.tools import ARTIFACT_SCHEMA
from acti_store.tools import make_builder_tools
from acti_store.tools.agent import APPROVALS, BUILDER_SYSTEM_PROMPT
from acti_store.tools.specs import TOOL_SPECS

# each test starts serve-mcp (or runs agents) in processes,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

LEAD = {
    "name": "lead_qualifier",
    "description": "Qualifies inbound leads by assessing BANT criteria",
    "system_prompt": "You are a professional lead qualification specialist. Assess budget, "
    "authority, need and timeline for every lead.",
    "tools": ["communication", "crm"],
    "stratum": "RAI",
    "tags": ["sales", "qualification"],
}

#: Every tool, with good arguments and bad ones, in an order that builds up a store.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_available_tools", {}),
    ("list_created_agents", {}),
    ("search_agents", {}),
    ("create_agent_config", LEAD),
    ("create_agent_config", LEAD),
    ("create_agent_config", {**LEAD, "name": "Bad Name", "stratum": "XYZ"}),
    ("create_agent_config", {**LEAD, "name": "short_one", "description": "x", "tags": ["A B"]}),
    ("create_agent_config", {"name": "only_a_name"}),
    ("create_agent_config", {"name": 5, "description": [], "system_prompt": None}),
    ("get_agent_config", {"name": "lead_qualifier"}),
    ("get_agent_config", {"name": "missing_agent"}),
    ("get_agent_config", {"name": "../etc/passwd"}),
    ("get_agent_config", {}),
    ("update_agent_config", {"name": "lead_qualifier", "tags": ["sales", "urgent"]}),
    ("update_agent_config", {"name": "lead_qualifier"}),
    ("update_agent_config", {"name": "lead_qualifier", "tools": ["crm", "nope"]}),
    ("update_agent_config", {"name": "ghost_agent", "description": "A description long enough"}),
    ("clone_agent_config", {"source_name": "lead_qualifier", "new_name": "lead_v2"}),
    ("clone_agent_config", {"source_name": "lead_qualifier", "new_name": "lead_v2"}),
    ("clone_agent_config", {"source_name": "nobody_here", "new_name": "lead_v3"}),
    ("clone_agent_config", {"source_name": "lead_qualifier", "new_name": "Lead V3", "tags": 7}),
    ("list_created_agents", {}),
    ("search_agents", {"query": "lead", "stratum": "RAI", "tools": ["crm"]}),
    ("search_agents", {"sort_by": "execution_count", "limit": 1}),
    ("search_agents", {"limit": 0, "sort_by": "size", "created_after": "yesterday"}),
    ("search_agents", {"tags": [f"tag-{i}" for i in range(180)]}),  # issue 25: 22 s, no cap
    ("get_agent_history", {"name": "lead_qualifier"}),
    ("get_agent_history", {"name": "lead_qualifier", "limit": 99, "include_errors_only": "x"}),
    ("get_agent_history", {"name": "nobody_here"}),
    ("execute_created_agent", {"agent_name": "nobody_here", "task": "Qualify John"}),
    ("execute_created_agent", {"agent_name": "lead_qualifier", "task": "", "timeout": 0}),
    ("execute_created_agent", {"task": "Qualify John"}),
    ("delete_agent_config", {"name": "lead_v2"}),
    ("delete_agent_config", {"name": "lead_v2", "confirm": True, "delete_history": "no"}),
    ("delete_agent_config", {"name": "lead_v2", "confirm": True}),
    ("delete_agent_config", {"name": "lead_v2", "confirm": True}),
    ("list_created_agents", {}),
]

#: An ISO 8601 time as the texts print it, and the "when" of a listing.
TIMES = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z| UTC)?")


def same_state(text: str, location: str) -> str:
    """``text`` with its times and the store's location replaced: what two stores share."""
    return TIMES.sub("<time>", text.replace(location, "<store>"))


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def twin(tmp_path: Path) -> Iterator[SqlAgentRepository]:
    """The store the LangChain tools answer from, put through the same calls."""
    repo = open_repository(f"sqlite:///{tmp_path / 'twin.db'}", export_dir="")
    try:
        yield repo
    finally:
        repo.close()


def langchain_answer(tool: Any, args: dict[str, Any]) -> tuple[str, bool]:
    message = tool.invoke({"type": "tool_call", "id": "1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    artifact = message.artifact
    return str(message.content), artifact is None or artifact["status"] == "error"


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def serve(store_url: str, *options: str) -> list[str]:
    return acti_store("serve-mcp", "--url", store_url, *options)


# --------------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------------


async def test_a_fresh_server_s_tools_prompt_and_refusal_of_an_unknown_tool(
    transport: str, store_url: str, twin: SqlAgentRepository, tmp_path: Path
) -> None:
    """The checks that only read a fresh server share one: each start is a process that imports
    acti_store and the MCP SDK (10-14 s a test at a load of 6, of which the checks take little)."""
    async with served(transport, serve(store_url), tmp_path / "server.log") as server:
        await the_tools_are_the_langchain_tools(server.session, twin)
        await an_unknown_tool_is_a_protocol_error(server.session)
        await the_build_agent_prompt(server.session)


async def the_tools_are_the_langchain_tools(
    session: ClientSession, twin: SqlAgentRepository
) -> None:
    langchain = make_builder_tools(twin)
    listed = (await session.list_tools()).tools
    assert [t.name for t in listed] == [spec.name for spec in TOOL_SPECS]
    for tool, lc_tool in zip(listed, langchain, strict=True):
        assert tool.description == lc_tool.description
        assert tool.inputSchema == lc_tool.get_input_schema().model_json_schema()
        assert tool.outputSchema == ARTIFACT_SCHEMA
        assert tool.annotations is not None
        reads_only = tool.name in {
            "get_agent_config",
            "list_available_tools",
            "list_created_agents",
            "search_agents",
            "get_agent_history",
        }
        assert tool.annotations.readOnlyHint is reads_only
    # Enums and bounds come through: the strata, the tool categories, the search limit.
    search = next(t for t in listed if t.name == "search_agents").inputSchema["properties"]
    assert search["limit"]["minimum"] == 1 and search["limit"]["maximum"] == 100
    assert "RAI" in search["stratum"]["anyOf"][0]["enum"]


async def test_every_tool_answers_as_the_langchain_tool(
    transport: str, store_url: str, twin: SqlAgentRepository, tmp_path: Path
) -> None:
    langchain = {tool.name: tool for tool in make_builder_tools(twin)}
    served_repo = open_repository(store_url)
    try:
        async with served(transport, serve(store_url), tmp_path / "server.log") as server:
            for name, args in CALLS:
                result = await server.session.call_tool(name, args)
                expected, refused = langchain_answer(langchain[name], args)

                got = same_state(text_of(result), served_repo.location)
                assert got == same_state(expected, twin.location), (name, args)
                assert result.isError is refused, (name, args)
                assert result.structuredContent is not None
                assert result.structuredContent["status"] == ("error" if refused else "success")
    finally:
        served_repo.close()
    assert [a.name for a in twin.list_agents()] == ["lead_qualifier"]


async def an_unknown_tool_is_a_protocol_error(session: ClientSession) -> None:
    with pytest.raises(McpError) as raised:
        await session.call_tool("drop_everything", {})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert "Unknown tool 'drop_everything'" in raised.value.error.message
    assert "create_agent_config" in raised.value.error.message


async def test_read_only_serves_the_reading_tools_of_a_read_only_store(
    store_url: str, tmp_path: Path
) -> None:
    open_repository(store_url).close()  # a read-only open needs the schema there
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
    async with served("stdio", serve(store_url, "--read-only"), tmp_path / "log") as server:
        names = [t.name for t in (await server.session.list_tools()).tools]
        shown = await server.session.call_tool("get_agent_config", {"name": "lead_qualifier"})
        with pytest.raises(McpError):
            await server.session.call_tool("delete_agent_config", {"name": "lead_qualifier"})
    assert names == [
        "get_agent_config",
        "list_available_tools",
        "list_created_agents",
        "search_agents",
        "get_agent_history",
    ]
    assert not shown.isError and "lead_qualifier" in text_of(shown)


# --------------------------------------------------------------------------------------------------
# Elicitation
# --------------------------------------------------------------------------------------------------


class Person:
    """An elicitation callback that answers ``action`` and remembers what it was asked."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        content = {} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_a_confirmed_delete_asks_the_person(
    transport: str, store_url: str, tmp_path: Path, action: str
) -> None:
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
        repo.create(make_config("other_agent"))
    person = Person(action)
    async with served(
        transport, serve(store_url), tmp_path / "log", elicitation_callback=person
    ) as server:
        dry_run = await server.session.call_tool("delete_agent_config", {"name": "lead_qualifier"})
        missing = await server.session.call_tool(
            "delete_agent_config", {"name": "nobody_here", "confirm": True}
        )
        assert person.asked == []  # a dry run, or a call the tool refuses, asks nobody
        result = await server.session.call_tool(
            "delete_agent_config", {"name": "lead_qualifier", "confirm": True}
        )

    question = APPROVALS["delete_agent_config"].question({"name": "lead_qualifier"})
    assert person.asked == [question]
    assert not dry_run.isError and "confirm=True" in text_of(dry_run)
    assert missing.isError and "not found" in text_of(missing)
    with closing(open_repository(store_url)) as repo:
        names = [a.name for a in repo.list_agents()]
    if action == "accept":
        assert not result.isError and text_of(result).startswith("SUCCESS")
        assert names == ["other_agent"]
        return
    kind = "declined" if action == "decline" else "cancelled"
    expected = texts.DECLINED if action == "decline" else texts.CANCELLED
    assert result.isError and text_of(result) == expected.format(tool="delete_agent_config")
    assert result.structuredContent == {
        "status": "error",
        "error": kind,
        "tool": "delete_agent_config",
    }
    assert names == ["lead_qualifier", "other_agent"]


async def test_a_client_without_elicitation_keeps_the_two_steps(
    transport: str, store_url: str, tmp_path: Path
) -> None:
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
    async with served(transport, serve(store_url), tmp_path / "log") as server:
        preview = await server.session.call_tool("delete_agent_config", {"name": "lead_qualifier"})
        with closing(open_repository(store_url)) as repo:
            assert repo.exists("lead_qualifier")
        done = await server.session.call_tool(
            "delete_agent_config", {"name": "lead_qualifier", "confirm": True}
        )
    assert "Nothing has been deleted" in text_of(preview) or "confirm=True" in text_of(preview)
    assert not done.isError and text_of(done).startswith("SUCCESS")
    with closing(open_repository(store_url)) as repo:
        assert not repo.exists("lead_qualifier")


# --------------------------------------------------------------------------------------------------
# Resources and notifications
# --------------------------------------------------------------------------------------------------


async def test_resources_are_the_exported_documents(
    transport: str, store_url: str, tmp_path: Path
) -> None:
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
        repo.create(make_config("quiet_agent", stratum=None, tools=[]))
        repo.record_execution(
            "lead_qualifier",
            ExecutionRecord(
                timestamp=repo.now(),
                task="Qualify John from Acme",
                result_summary="HIGH priority",
                success=True,
                duration_seconds=3.2,
                tool_calls_count=2,
            ),
        )
        export_json(repo, tmp_path / "agents")
        listing = make_builder_tools(repo)[6].invoke({})
    async with served(transport, serve(store_url), tmp_path / "log") as server:
        session = server.session
        templates = (await session.list_resource_templates()).resourceTemplates
        resources = (await session.list_resources()).resources
        agent = await session.read_resource("acti://agents/lead_qualifier")
        history = await session.read_resource("acti://agents/lead_qualifier/history")
        agents = await session.read_resource("acti://agents")
        errors = []
        for uri in ("acti://agents/nobody_here", "acti://agents/Bad%20Name", "acti://nothing"):
            with pytest.raises(McpError) as raised:
                await session.read_resource(uri)
            errors.append(raised.value.error)

    assert [t.uriTemplate for t in templates] == [
        "acti://agents/{name}",
        "acti://agents/{name}/history",
    ]
    assert [str(r.uri) for r in resources] == [
        "acti://agents",
        "acti://agents/lead_qualifier",
        "acti://agents/quiet_agent",
    ]
    exported = tmp_path / "agents"
    (content,) = agent.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.mimeType == "application/json"
    assert content.text == (exported / "lead_qualifier.json").read_text(encoding="utf-8")
    (content,) = history.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text == (exported / "lead_qualifier_history.json").read_text(encoding="utf-8")
    (content,) = agents.contents
    assert isinstance(content, types.TextResourceContents)
    document = json.loads(content.text)
    assert document["total"] == 2
    assert document["groups"] == {"RAI": ["lead_qualifier"], "UNCLASSIFIED": ["quiet_agent"]}
    assert "lead_qualifier" in listing
    assert [e.code for e in errors] == [RESOURCE_NOT_FOUND] * 3
    assert "lead_qualifier" in errors[0].message  # the names that exist
    assert "acti://agents/{name}" in errors[2].message


async def test_resources_list_pages_through_every_agent(store_url: str, tmp_path: Path) -> None:
    with closing(open_repository(store_url)) as repo:
        for i in range(130):
            repo.create(make_config(f"agent_{i:03d}"))
    async with served("stdio", serve(store_url), tmp_path / "log") as server:
        first = await server.session.list_resources()
        assert first.nextCursor is not None
        second = await server.session.list_resources(first.nextCursor)
        with pytest.raises(McpError) as raised:
            await server.session.list_resources("not-a-cursor")
    uris = [str(r.uri) for r in [*first.resources, *second.resources]]
    assert uris == ["acti://agents"] + [f"acti://agents/agent_{i:03d}" for i in range(130)]
    assert second.nextCursor is None
    assert raised.value.error.code == types.INVALID_PARAMS


async def test_a_write_notifies_list_changed_and_updated(
    transport: str, store_url: str, tmp_path: Path
) -> None:
    notifications: list[types.ServerNotification] = []

    async def collect(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(message)

    def seen() -> list[tuple[str, str | None]]:
        kinds = []
        for note in notifications:
            root = note.root
            uri = (
                str(root.params.uri)
                if isinstance(root, types.ResourceUpdatedNotification)
                else None
            )
            kinds.append((root.method, uri))
        notifications.clear()
        return kinds

    async with served(
        transport, serve(store_url), tmp_path / "log", message_handler=collect
    ) as server:
        session = server.session
        caps = (await session.list_tools()) and session.get_server_capabilities()
        assert caps is not None and caps.resources is not None
        assert caps.resources.subscribe and caps.resources.listChanged
        await session.subscribe_resource("acti://agents/lead_qualifier")
        await session.call_tool("create_agent_config", LEAD)
        await session.send_ping()  # the notifications come before this answer
        created = seen()
        await session.call_tool("update_agent_config", {"name": "lead_qualifier", "tags": ["x1"]})
        await session.call_tool("get_agent_config", {"name": "lead_qualifier"})
        await session.call_tool("update_agent_config", {"name": "lead_qualifier"})  # no change
        await session.send_ping()
        updated = seen()
        await session.unsubscribe_resource("acti://agents/lead_qualifier")
        await session.call_tool("delete_agent_config", {"name": "lead_qualifier", "confirm": True})
        await session.send_ping()
        deleted = seen()

    updated_uri = ("notifications/resources/updated", "acti://agents/lead_qualifier")
    list_changed = ("notifications/resources/list_changed", None)
    assert created == [list_changed, updated_uri]
    assert updated == [updated_uri]
    assert deleted == [list_changed]


# --------------------------------------------------------------------------------------------------
# Prompt
# --------------------------------------------------------------------------------------------------


async def the_build_agent_prompt(session: ClientSession) -> None:
    (prompt,) = (await session.list_prompts()).prompts
    chosen = await session.get_prompt("build_agent", {"goal": "Book demos", "stratum": "ZACS"})
    free = await session.get_prompt("build_agent", {"goal": "Book demos"})
    problems = []
    for args in ({"goal": "Book demos", "stratum": "XYZ"}, {"goal": "  "}):
        with pytest.raises(McpError) as raised:
            await session.get_prompt("build_agent", args)
        problems.append(raised.value.error)

    assert prompt.name == "build_agent"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [
        ("goal", True),
        ("stratum", False),
    ]
    (message,) = chosen.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    assert message.content.text.startswith(BUILDER_SYSTEM_PROMPT)
    assert message.content.text.endswith(
        "Goal: Book demos\nStratum: ZACS: classify the agent there."
    )
    assert isinstance(free.messages[0].content, types.TextContent)
    assert free.messages[0].content.text.endswith(texts.PROMPT_ANY_STRATUM)
    assert [p.code for p in problems] == [types.INVALID_PARAMS] * 2
    assert "XYZ" in problems[0].message and "RAI" in problems[0].message
    assert problems[1].message == texts.GOAL_MISSING
