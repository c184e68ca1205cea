"""The async side: tools' coroutines and ASYNC_TOOLS never block the event loop; the default store
of BUILDER_TOOLS / ASYNC_TOOLS is opened on first use, never on import."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool

from acti_store import SqlAgentRepository
from acti_store.testing import ScriptedChatModel
from acti_store.tools import ASYNC_TOOLS, BUILDER_TOOLS, make_builder_tools
from acti_store.tools.defaults import default_repository

#: The heartbeat ticks every ``TICK`` seconds. A blocked loop does not tick at all while the tools
#: run (see the control test: one pause as long as the whole run). The tools' worker threads share
#: the GIL with the loop, and a shared CI machine may be overloaded, so a tick can come late:
#: "on time" is no pause above ``ON_TIME`` seconds, nor above a third of the run. (Idle 2-CPU
#: machine: pauses under 0.1 s in a 1 s run; at load average 8: up to 0.4 s in a 2 s run.)
TICK = 0.005
ON_TIME = 0.5
CALLERS = 40


def by_name(repo: SqlAgentRepository, **options: object) -> dict[str, BaseTool]:
    return {t.name: t for t in make_builder_tools(repo, **options)}


async def longest_pause(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Run ``work`` while a heartbeat task ticks every ``TICK`` seconds on the same loop.

    Returns how long ``work`` took and the longest time the heartbeat waited between two ticks.
    """
    loop = asyncio.get_running_loop()
    pauses: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(TICK)
            now = loop.time()
            pauses.append(now - last)
            last = now

    # A full garbage collection of this (large) test process stops every thread for up to
    # ~0.15 s: a pause of the process, not the tools blocking the loop. Collect before, not during.
    gc.collect()
    gc.disable()
    try:
        beat = asyncio.create_task(heartbeat())
        await asyncio.sleep(TICK)
        start = loop.time()
        await work()
        elapsed = loop.time() - start
        done.set()
        await beat
    finally:
        gc.enable()
    return elapsed, max(pauses)


def workload(
    tools: dict[str, BaseTool], *, blocking: bool, prefix: str = "agent"
) -> Callable[[], Awaitable[object]]:
    """``CALLERS`` concurrent callers, each creating, updating, searching and reading an agent."""

    async def invoke(name: str, arguments: dict[str, object]) -> str:
        tool = tools[name]
        text = tool.invoke(arguments) if blocking else await tool.ainvoke(arguments)
        assert isinstance(text, str) and not text.startswith("ERROR"), text
        return text

    async def caller(i: int) -> None:
        config = make_config(f"{prefix}_{i:03d}")
        await invoke(
            "create_agent_config",
            {
                "name": config.name,
                "description": config.description,
                "system_prompt": config.system_prompt,
                "tools": config.tools,
            },
        )
        await invoke("update_agent_config", {"name": config.name, "tags": ["load", "test"]})
        await invoke("search_agents", {"query": prefix, "tags": ["load"], "limit": 100})
        await invoke("get_agent_history", {"name": config.name})
        await invoke("list_created_agents", {})

    async def work() -> None:
        await asyncio.gather(*(caller(i) for i in range(CALLERS)))

    return work


async def test_async_tools_keep_the_loop_free(repo: SqlAgentRepository) -> None:
    tools = by_name(repo)
    await workload(tools, blocking=False, prefix="warm")()  # connections opened, caches filled
    elapsed, pause = await longest_pause(workload(tools, blocking=False))
    assert len(repo.list_names()) == 2 * CALLERS
    assert pause < ON_TIME, f"the loop stalled {pause:.3f}s during {elapsed:.3f}s of tool calls"
    assert pause < elapsed / 3


async def test_the_heartbeat_detects_a_blocked_loop(repo: SqlAgentRepository) -> None:
    """The control: the same work through the blocking calls stalls the heartbeat throughout."""
    elapsed, pause = await longest_pause(workload(by_name(repo), blocking=True))
    assert pause > elapsed * 0.9


async def test_ainvoke_returns_text_or_a_tool_message(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    tool = by_name(repo)["get_agent_config"]
    text = await tool.ainvoke({"name": "lead_qualifier"})
    assert text.startswith("Agent Configuration: lead_qualifier\n")
    message = await tool.ainvoke(
        {"type": "tool_call", "id": "c1", "name": tool.name, "args": {"name": "missing"}}
    )
    assert isinstance(message, ToolMessage)
    assert message.content.startswith("ERROR: Agent 'missing' not found.")
    assert message.artifact["error"] == "not_found"


async def test_async_execute(repo: SqlAgentRepository) -> None:
    repo.create(make_config("plain_agent", tools=[], stratum=None))
    model = ScriptedChatModel(script=[AIMessage("Hi there.")], delay=0.05, loop=True)
    tool = by_name(repo, model=model)["execute_created_agent"]
    # The first run imports the agent stack (CPU-bound: no thread spares the loop that once).
    await tool.ainvoke({"agent_name": "plain_agent", "task": "Warm up"})
    _, pause = await longest_pause(
        lambda: tool.ainvoke({"agent_name": "plain_agent", "task": "Greet me"})
    )
    assert pause < ON_TIME
    assert repo.get_history("plain_agent").executions[0].task == "Greet me"
    message = await tool.ainvoke(
        {
            "type": "tool_call",
            "id": "c2",
            "name": tool.name,
            "args": {"agent_name": "plain_agent", "task": "Bad \ud800 text"},
        }
    )
    assert isinstance(message, ToolMessage)
    assert message.artifact["error"] == "validation"
    missing = await tool.ainvoke({"agent_name": "missing", "task": "Greet me", "timeout": 5})
    assert missing.startswith("ERROR: Agent 'missing' not found.\n\nAvailable agents (1):")
    invalid = await tool.ainvoke({"agent_name": "plain_agent", "task": "Hi", "timeout": 0})
    assert invalid.startswith("ERROR: Invalid execution parameter.")
    assert repo.get_history("plain_agent").total_executions == 2


# --------------------------------------------------------------------------------------------------
# The default store of BUILDER_TOOLS and ASYNC_TOOLS
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def default_store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Point the default store at a fresh store of each engine (and forget it afterwards)."""
    default_repository.close()
    monkeypatch.setenv("ACTI_STORE_URL", store_url)
    monkeypatch.delenv("ACTI_STORE_EXPORT_DIR", raising=False)
    yield store_url
    default_repository.close()


async def test_async_tools_use_the_default_store(default_store: str) -> None:
    config = make_config()
    text = await ASYNC_TOOLS["create_agent_config"](
        config.name, config.description, config.system_prompt, tools=["crm"], stratum="RAI"
    )
    assert text.startswith("SUCCESS: Agent configuration created and saved!")
    assert (await ASYNC_TOOLS["get_agent_config"]("lead_qualifier")).startswith(
        "Agent Configuration: lead_qualifier"
    )
    text = await ASYNC_TOOLS["update_agent_config"]("lead_qualifier", tags=["production"])
    assert "updated (v1 -> v2)" in text
    text = await ASYNC_TOOLS["clone_agent_config"]("lead_qualifier", "lead_copy")
    assert text.startswith("SUCCESS: Agent 'lead_qualifier' cloned to 'lead_copy'.")
    assert "Total: 2 agent(s)" in await ASYNC_TOOLS["list_created_agents"]()
    text = await ASYNC_TOOLS["search_agents"](tags=["production"], sort_by="created_at")
    assert "Found: 2 agent(s)" in text
    assert "No execution history found." in await ASYNC_TOOLS["get_agent_history"]("lead_copy")
    text = await ASYNC_TOOLS["execute_created_agent"]("missing", "Say hello")
    assert text.startswith("ERROR: Agent 'missing' not found.")
    text = await ASYNC_TOOLS["delete_agent_config"]("lead_copy", confirm=True)
    assert text.startswith("SUCCESS: Agent 'lead_copy' has been permanently deleted.")
    assert default_repository().list_names() == ["lead_qualifier"]
    assert BUILDER_TOOLS[0].name == "create_agent_config"
    assert BUILDER_TOOLS[1].invoke({"name": "lead_qualifier"}).startswith("Agent Configuration")


def test_importing_the_tools_opens_no_store(tmp_path: Path) -> None:
    database = tmp_path / "never.db"
    script = (
        "import acti_store.tools as t\n"
        "assert [x.name for x in t.BUILDER_TOOLS][-1] == 'get_agent_history'\n"
        "assert len(t.ASYNC_TOOLS) == 9\n"
    )
    env = os.environ | {"ACTI_STORE_URL": f"sqlite:///{database}"}
    env.pop("ACTI_STORE_EXPORT_DIR", None)
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True, timeout=120)
    assert not database.exists()
    assert list(tmp_path.iterdir()) == []
