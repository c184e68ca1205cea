"""Tool-call latency through ``acti-store serve-mcp`` next to the LangChain tool in process.

One store with the contract's ``lead_qualifier``; ``--calls`` sequential ``get_agent_config``
calls each way, timed one by one from the caller's side:

- ``langchain``: the LangChain tool's ``invoke`` in this process (no transport at all);
- ``stdio``: the official MCP client, the real ``acti-store serve-mcp`` as its subprocess;
- ``http``: the official MCP client over streamable HTTP to ``serve-mcp --transport http``.

Prints one line per way (median, p99, mean in ms) and a JSON line with the figures::

    python -m benchmarks.mcp_latency [--calls 1000] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from acti_store import AgentConfig, open_repository
from acti_store.tools import make_builder_tools

ROOT = Path(__file__).resolve().parent.parent
ARGS = {"name": "lead_qualifier"}


def command(url: str, *options: str) -> list[str]:
    script = Path(sys.executable).parent / "acti-store"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "acti_store"]
    return [*head, "serve-mcp", "--url", url, *options]


def figures(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]
    return {
        "calls": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(p99 * 1000, 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }


async def timed(calls: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    await call()  # warm: the first call of each way pays for imports and connections
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - started)
    return seconds


async def over_stdio(url: str, calls: int) -> list[float]:
    argv = command(url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await timed(calls, lambda: session.call_tool("get_agent_config", ARGS))


async def over_http(url: str, calls: int) -> list[float]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACTI_STORE_MCP_TOKEN", None)
    server = subprocess.Popen(
        command(url, "--transport", "http", "--port", str(port)),
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("serve-mcp --transport http did not start") from None
                await asyncio.sleep(0.1)
        endpoint = f"http://127.0.0.1:{port}/mcp"
        async with (
            httpx.AsyncClient(timeout=60) as client,
            streamable_http_client(endpoint, http_client=client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await timed(calls, lambda: session.call_tool("get_agent_config", ARGS))
    finally:
        server.terminate()
        server.wait(30)


async def main_async(url: str, calls: int) -> dict[str, dict[str, float]]:
    repo = open_repository(url, export_dir="")
    try:
        if not repo.exists("lead_qualifier"):
            repo.create(
                AgentConfig(
                    name="lead_qualifier",
                    description="Qualifies inbound leads by assessing BANT criteria",
                    system_prompt="You are a professional lead qualification specialist. "
                    "Assess budget, authority, need and timeline for every lead.",
                    tools=["communication", "crm"],
                    stratum="RAI",
                    tags=["sales", "qualification"],
                )
            )
        tool = next(t for t in make_builder_tools(repo) if t.name == "get_agent_config")

        async def in_process() -> Any:
            return tool.invoke(ARGS)

        results = {"langchain": figures(await timed(calls, in_process))}
    finally:
        repo.close()
    results["stdio"] = figures(await over_stdio(url, calls))
    results["http"] = figures(await over_http(url, calls))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per way (default 1000)")
    parser.add_argument("--url", default=None, help="store URL (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{tmp}/latency.db"
        results = asyncio.run(main_async(url, args.calls))
    for way, figure in results.items():
        print(
            f"{way:>9}: median {figure['median_ms']:.2f} ms, p99 {figure['p99_ms']:.2f} ms, "
            f"mean {figure['mean_ms']:.2f} ms ({figure['calls']} calls)"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
