"""Measure what a run costs apart from the model: connect, agent build, record.

Runs an agent with 1 and with 3 real MCP servers (the test servers, over stdio) and an instant
scripted model, on a temporary SQLite store, and prints the median of each phase::

    python tests/mcp_servers/overhead.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from acti_store import AgentConfig, ExecutionRecord, open_repository
from acti_store.execution import AgentRunner, CategorySpec, McpCatalog
from acti_store.execution.runner import ServerPool
from acti_store.testing import ScriptedChatModel

HERE = Path(__file__).resolve().parent
CATALOG = McpCatalog(
    {
        category: CategorySpec(
            provider,
            {"transport": "stdio", "command": sys.executable, "args": [str(HERE / script)]},
            env=(variable,),
        )
        for category, provider, script, variable in [
            ("crm", "HubSpot", "crm_server.py", "PRIVATE_APP_ACCESS_TOKEN"),
            ("calendar", "Google Calendar", "calendar_server.py", "GOOGLE_OAUTH_CREDENTIALS"),
            ("websearch", "Tavily", "search_server.py", "TAVILY_API_KEY"),
        ]
    }
)
PROMPT = "You measure overhead. Answer at once, without tools, in one short sentence please."


def instant_model() -> ScriptedChatModel:
    return ScriptedChatModel(script=[AIMessage("done")])


async def timed(work: Awaitable[object]) -> float:
    began = time.perf_counter()
    await work
    return (time.perf_counter() - began) * 1000


async def measure(categories: list[str], repeat: int, store: str) -> dict[str, float]:
    from deepagents import create_deep_agent

    repo = open_repository(store)
    name = f"overhead_{len(categories)}"
    repo.create(
        AgentConfig(
            name=name, description="Overhead probe agent", system_prompt=PROMPT, tools=categories
        )
    )
    agent = repo.get(name)
    runner = AgentRunner(repo, model=lambda _: instant_model(), catalog=CATALOG)
    phases: dict[str, list[float]] = {
        k: [] for k in ("connect", "build", "invoke", "close", "record", "run")
    }
    connections = {c: CATALOG.categories[c].connection_for(os.environ) for c in categories}
    for _ in range(repeat):
        pool = ServerPool()
        began = time.perf_counter()
        tools_by_category, errors = await pool.start(connections, 30.0)
        phases["connect"].append((time.perf_counter() - began) * 1000)
        assert not errors, errors
        tools = [t for ts in tools_by_category.values() for t in ts]
        began = time.perf_counter()
        graph = create_deep_agent(model=instant_model(), tools=tools, system_prompt=PROMPT)
        phases["build"].append((time.perf_counter() - began) * 1000)
        phases["invoke"].append(await timed(graph.ainvoke({"messages": [HumanMessage("go")]})))
        phases["close"].append(await timed(pool.close()))
        record = ExecutionRecord(
            timestamp=repo.now(),
            task="go",
            result_summary="done",
            success=True,
            duration_seconds=0.1,
        )
        phases["record"].append(await timed(asyncio.to_thread(repo.record_execution, name, record)))
        phases["run"].append(await timed(runner.run(agent, "go")))
    repo.close()
    return {phase: statistics.median(values) for phase, values in phases.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(
        PRIVATE_APP_ACCESS_TOKEN="pat-probe",
        GOOGLE_OAUTH_CREDENTIALS="/probe.json",
        TAVILY_API_KEY="tvly-probe",
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{tmp}/overhead.db"
        await measure(["crm"], 1, f"sqlite:///{tmp}/warmup.db")  # imports, caches
        print(f"median of {args.repeat} runs, milliseconds")
        print(
            f"{'servers':>8} {'connect':>8} {'build':>8} {'invoke':>8} {'close':>8} "
            f"{'record':>8} {'run':>8}"
        )
        for categories in ([], ["crm"], ["crm", "calendar", "websearch"]):
            m = await measure(categories, args.repeat, store)
            print(
                f"{len(categories):>8} {m['connect']:>8.0f} {m['build']:>8.0f} "
                f"{m['invoke']:>8.0f} {m['close']:>8.0f} {m['record']:>8.1f} {m['run']:>8.0f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
