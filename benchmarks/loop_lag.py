"""How long the async paths hold the event loop: concurrent agent runs and store calls, cold.

In a fresh process (so nothing heavy is imported yet, and the default store does not exist), a
heartbeat task sleeps ``TICK`` seconds in a loop and records how late each wake-up is, while at
once:

- ``--runs`` agents are created through ``ASYNC_TOOLS`` and each executed through the async
  ``execute_created_agent`` tool, with a scripted model (one tool call, then an answer) and a real
  MCP server (``tests/mcp_servers/crm_server.py``): one per run over stdio, or with
  ``--transport http`` one for all, started beforehand (many Python servers starting at once load
  a small machine so much that the OS, not the loop, delays the heartbeat);
- ``--store-calls`` callers use the other async tools (search, list, get, history);

the default store (``ACTI_STORE_URL``) is a new temporary store, so the first call creates and
migrates it. Prints one JSON line: the longest lag (``max_lag_ms``), the 99th percentile, how many
ticks were over 50 ms, and the outcome of every call::

    python -m benchmarks.loop_lag [--runs 50] [--store-calls 20] [--transport stdio|http]
                                  [--url URL] [--trace] [--debug] [--nice N] [--baseline]

``--trace`` also watches the loop from a thread and prints, for every stall over ``--trace-ms``,
the loop thread's stack at that moment (where the time goes); ``--debug`` turns on asyncio's debug
mode, which logs every callback slower than ``--trace-ms`` ("Executing <Task ...> took X s").
``host_cpu_s`` is the CPU time of this process meanwhile, ``children_cpu_s`` that of the servers.

What the OS does to the loop, apart from the runs: ``--nice N`` starts each stdio server under
``nice -n N`` and, where Linux groups processes by session for the scheduler (autogroups), gives
the server's session that nice too (each server has a session of its own, so a plain ``nice``
would weigh it only against itself): the host keeps its share of the CPUs while the servers
start. ``--baseline`` runs no agent at all, only the heartbeat, while a shell starts ``--runs``
Python processes that import what the CRM server imports (``mcp.server.fastmcp``) and exit: the
lag a loop doing nothing gets from that many Python servers starting at once.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import gc
import importlib
import importlib.abc
import json
import logging
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# What an application imports at its top: the tools (not the agent stack, which loads on first use).
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from sqlalchemy.engine import make_url

from acti_store.execution import CategorySpec, McpCatalog
from acti_store.repository.strategy import strategy_for
from acti_store.testing import ScriptedChatModel, calls, tool_call
from acti_store.tools import ASYNC_TOOLS
from acti_store.tools.builder import BuilderTools
from acti_store.tools.defaults import default_repository
from acti_store.tools.langchain_tools import builder_tools

TICK = 0.005
SERVERS = Path(__file__).resolve().parent.parent / "tests" / "mcp_servers"
TOKEN_VARIABLE = "PRIVATE_APP_ACCESS_TOKEN"


class Heartbeat:
    """Sleeps ``TICK`` seconds in a loop; ``lags`` are how late each wake-up was, in seconds."""

    def __init__(self, pauses: GcPauses | None = None) -> None:
        self.lags: list[float] = []
        #: Each lag less the garbage collector's passes during its tick (``pauses``): what
        #: the loop's own work and the OS kept it waiting.
        self.lags_outside_gc: list[float] = []
        self.last = time.perf_counter()
        self._stop = asyncio.Event()
        self._pauses = pauses or GcPauses()  # one that is not installed counts no pause

    async def beat(self) -> None:
        while not self._stop.is_set():
            collected = self._pauses.total
            expected = time.perf_counter() + TICK
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            lag = max(now - expected, 0.0)
            self.lags.append(lag)
            self.lags_outside_gc.append(max(lag - (self._pauses.total - collected), 0.0))
            self.last = now

    def stop(self) -> None:
        self._stop.set()


def _summary(frame: Any) -> str:
    """The loop thread's stack, shortened: what the loop runs, and where that code is now."""
    lines = [
        f"{f.filename.rsplit('site-packages/', 1)[-1]}:{f.lineno} {f.name}"
        for f in traceback.extract_stack(frame)
    ]
    runs = [i for i, line in enumerate(lines) if "asyncio/events.py" in line]
    inner = lines[runs[-1] + 1 :] if runs else lines
    if len(inner) <= 8:
        return " <- ".join(reversed(inner))
    return " <- ".join([*reversed(inner[-4:]), "...", *reversed(inner[:4])])


class GcPauses:
    """The garbage collector's passes while installed: the longest, per generation, in seconds,
    and how many there were."""

    def __init__(self) -> None:
        self.longest = [0.0, 0.0, 0.0]
        self.passes = [0, 0, 0]
        #: Every pass's pause added up, in seconds (each stops every thread, the loop's too).
        self.total = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            generation = info["generation"]
            pause = time.perf_counter() - self._started
            self.longest[generation] = max(self.longest[generation], pause)
            self.passes[generation] += 1
            self.total += pause


class ImportSpy(importlib.abc.MetaPathFinder):
    """Notes the modules imported by the loop's thread while ``active`` (it finds nothing)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.active = False
        self.imported: list[str] = []

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if self.active and threading.get_ident() == self.thread and name not in sys.modules:
            self.imported.append(name)


class Watchdog(threading.Thread):
    """Samples the loop thread's stack every 2 ms while the heartbeat is late by ``threshold``.

    ``stalls``: (how long the heartbeat waited, the samples taken meanwhile by stack), longest
    first after ``join``.
    """

    def __init__(self, heartbeat: Heartbeat, threshold: float, all_threads: bool) -> None:
        super().__init__(daemon=True)
        self.all_threads = all_threads
        self.heartbeat = heartbeat
        self.threshold = threshold
        self.loop_thread = threading.get_ident()
        self.stalls: list[tuple[float, collections.Counter[str]]] = []
        self.running = True

    def run(self) -> None:
        current: collections.Counter[str] | None = None
        stalled_since = 0.0
        while self.running:
            time.sleep(0.002)
            last = self.heartbeat.last
            late = time.perf_counter() - last > self.threshold + TICK
            if current is not None and (not late or last != stalled_since):
                self.stalls.append((self.heartbeat.last - stalled_since, current))
                current = None
            if late:
                if current is None:
                    current, stalled_since = collections.Counter(), last
                frames = sys._current_frames()
                frame = frames.get(self.loop_thread)
                if frame is not None:
                    current[_summary(frame)] += 1
                if self.all_threads:
                    for ident, other in frames.items():
                        if ident not in (self.loop_thread, threading.get_ident()):
                            current["[worker] " + _summary(other)] += 1


def scripted_model() -> ScriptedChatModel:
    """One CRM lookup, then an answer quoting its result; the same script for every run."""

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"Lead qualified: {last.text}")
        return calls(tool_call("crm_lookup_contact", company="Acme Corp"))

    return ScriptedChatModel(script=[reply], loop=True, delay=0.01)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server() -> Iterator[str]:
    """The CRM test server over streamable HTTP, answering before this returns; its URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(SERVERS / "serve_http.py"), "crm_server", str(port)],
        cwd=SERVERS,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP test server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.kill()
        server.wait()


def crm_catalog(url: str | None, nice: int | None = None) -> McpCatalog:
    """The CRM category: the test server at ``url`` (HTTP), else one server per run (stdio),
    under ``nice -n nice`` if given."""
    command = [sys.executable, str(SERVERS / "crm_server.py")]
    if nice is not None:  # the server's own session is its own autogroup: nice that too
        script = (
            f'{{ echo {nice} > /proc/self/autogroup; }} 2>/dev/null; exec nice -n {nice} "$0" "$@"'
        )
        command = ["sh", "-c", script, *command]
    connection: dict[str, Any] = (
        {"transport": "streamable_http", "url": url}
        if url
        else {"transport": "stdio", "command": command[0], "args": command[1:]}
    )
    return McpCatalog({"crm": CategorySpec("HubSpot", connection, env=(TOKEN_VARIABLE,))})


async def scenario(runs: int, store_calls: int, catalog: McpCatalog) -> dict[str, Any]:
    tools = {
        t.name: t
        for t in builder_tools(
            BuilderTools(default_repository, model=scripted_model(), mcp_catalog=catalog)
        )
    }
    outcomes: collections.Counter[str] = collections.Counter()

    async def run(i: int) -> None:
        name = f"runner_{i:03d}"
        created = await ASYNC_TOOLS["create_agent_config"](
            name,
            "Qualifies inbound leads by assessing BANT criteria",
            "You are a lead qualification specialist. Look the company up in the CRM first.",
            tools=["crm"],
            stratum="RAI",
        )
        outcomes["create ok" if created.startswith("SUCCESS") else f"create: {created[:80]}"] += 1
        text = await tools["execute_created_agent"].ainvoke(
            {"agent_name": name, "task": "Qualify John from Acme Corp", "timeout": 120}
        )
        ok = text.startswith("EXECUTION SUCCESS") and "John Smith" in text
        outcomes["run ok" if ok else f"run: {text[:200]}"] += 1

    async def store_caller(i: int) -> None:
        for call in (
            ASYNC_TOOLS["search_agents"](query="runner", stratum="RAI", limit=100),
            ASYNC_TOOLS["list_created_agents"](),
            ASYNC_TOOLS["get_agent_config"](f"runner_{i % max(runs, 1):03d}"),
            ASYNC_TOOLS["get_agent_history"](f"runner_{i % max(runs, 1):03d}"),
        ):
            text = await call
            outcomes["store call" if text else "store call: empty"] += 1

    await asyncio.gather(
        *(run(i) for i in range(runs)), *(store_caller(i) for i in range(store_calls))
    )
    return dict(outcomes)


async def baseline(processes: int) -> dict[str, Any]:
    """No agent: ``processes`` Python processes importing the MCP server stack, started at once
    by a shell (not by this process), waited for."""
    script = f"for i in $(seq {processes}); do \"$0\" -c 'import mcp.server.fastmcp' & done; wait"
    shell = await asyncio.create_subprocess_exec("sh", "-c", script, sys.executable)
    await shell.wait()
    return {"baseline processes": processes} if shell.returncode == 0 else {}


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


async def measure(
    runs: int,
    store_calls: int,
    catalog: McpCatalog | None,
    trace_ms: float | None = None,
    all_threads: bool = False,
) -> dict[str, Any]:
    """The heartbeat's lags during ``scenario`` (``baseline`` without a catalog)."""
    pauses = GcPauses()
    heartbeat = Heartbeat(pauses)
    watchdog = None if trace_ms is None else Watchdog(heartbeat, trace_ms / 1000, all_threads)
    spy = ImportSpy()
    sys.meta_path.insert(0, spy)
    gc.callbacks.append(pauses)
    beat = asyncio.create_task(heartbeat.beat())
    await asyncio.sleep(0.05)  # the heartbeat is ticking before the first call
    if watchdog is not None:
        watchdog.start()
    started = time.perf_counter()
    host_cpu, children_cpu = (
        cpu_seconds(resource.RUSAGE_SELF),
        cpu_seconds(resource.RUSAGE_CHILDREN),
    )
    spy.active = True
    try:
        if catalog is None:
            outcomes = await baseline(runs)
        else:
            outcomes = await scenario(runs, store_calls, catalog)
    finally:
        spy.active = False
        sys.meta_path.remove(spy)
        gc.callbacks.remove(pauses)
        elapsed = time.perf_counter() - started
        heartbeat.stop()
        await beat
        if watchdog is not None:
            watchdog.running = False
    lags = sorted(heartbeat.lags)
    result: dict[str, Any] = {
        "runs": runs,
        "store_calls": store_calls,
        "seconds": round(elapsed, 2),
        "ticks": len(lags),
        "max_lag_ms": round(lags[-1] * 1000, 1),
        "max_lag_outside_gc_ms": round(max(heartbeat.lags_outside_gc) * 1000, 1),
        "p99_lag_ms": round(lags[int(len(lags) * 0.99)] * 1000, 1),
        "median_lag_ms": round(statistics.median(lags) * 1000, 1),
        "ticks_over_50ms": sum(lag > 0.05 for lag in lags),
        "outcomes": outcomes,
        "imported_on_loop": sorted(set(spy.imported)),
        "gc_longest_ms": [round(p * 1000, 1) for p in pauses.longest],
        "gc_passes": pauses.passes,
        "host_cpu_s": round(cpu_seconds(resource.RUSAGE_SELF) - host_cpu, 1),
        "children_cpu_s": round(cpu_seconds(resource.RUSAGE_CHILDREN) - children_cpu, 1),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    if watchdog is not None:
        watchdog.join()
        longest = sorted(watchdog.stalls, key=lambda stall: -stall[0])[:12]
        result["stalls"] = [
            {"ms": round(seconds * 1000), "samples": samples.most_common(10)}
            for seconds, samples in longest
        ]
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--store-calls", type=int, default=20)
    parser.add_argument("--url", help="the default store (default: a new temporary SQLite file)")
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio: one CRM server process per run; http: one shared server, started first",
    )
    parser.add_argument(
        "--nice", type=int, help="start each stdio server (and its autogroup) at nice NICE"
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="no agent: the heartbeat while a shell starts --runs Python processes",
    )
    parser.add_argument("--trace", action="store_true", help="print the stacks of stalls")
    parser.add_argument("--trace-ms", type=float, default=20.0)
    parser.add_argument("--all-threads", action="store_true", help="--trace: every thread")
    parser.add_argument("--debug", action="store_true", help="asyncio debug mode")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="leave the objects of the startup imports to the garbage collector's full passes",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault(TOKEN_VARIABLE, "loop-lag-token")
    os.environ.pop("ACTI_STORE_EXPORT_DIR", None)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        url = stack.enter_context(http_server()) if args.transport == "http" else None
        os.environ["ACTI_STORE_URL"] = args.url or f"sqlite:///{tmp}/store.db"
        default_repository.close()
        if not args.no_freeze:
            # What a latency-minded server does once its imports are done: the startup objects
            # leave the collector's full passes (each of which stops every thread), which then
            # scan only what the work allocates. Collection stays on. acti_store loads Alembic
            # only when a store needs migrating, as this cold one will at its first call, and an
            # engine's strategy when that engine is first used: those modules are part of such a
            # server's startup, as when `import acti_store` loaded them.
            importlib.import_module("acti_store.revisions")
            strategy_for(make_url(os.environ["ACTI_STORE_URL"]).get_backend_name())
            gc.collect()
            gc.freeze()
        if args.debug:
            logging.basicConfig(level=logging.WARNING)
            logging.getLogger("asyncio").setLevel(logging.DEBUG)

        async def main_task() -> dict[str, Any]:
            loop = asyncio.get_running_loop()
            if args.debug:
                loop.set_debug(True)
                loop.slow_callback_duration = args.trace_ms / 1000
            return await measure(
                args.runs,
                args.store_calls,
                None if args.baseline else crm_catalog(url, args.nice),
                args.trace_ms if args.trace else None,
                args.all_threads,
            )

        try:
            result = asyncio.run(main_task())
        finally:
            default_repository.close()
    stalls = result.pop("stalls", None)
    print(json.dumps(result))
    if stalls:
        for stall in stalls:
            print(
                f"\n--- a stall of {stall['ms']} ms; samples of the loop thread:", file=sys.stderr
            )
            for stack, count in stall["samples"]:
                print(f"  {count:4d} x {stack}", file=sys.stderr)
    expected = {"create ok": args.runs, "run ok": args.runs, "store call": 4 * args.store_calls}
    if args.baseline:
        expected = {"baseline processes": args.runs}
    return 0 if result["outcomes"] == {k: v for k, v in expected.items() if v} else 1


if __name__ == "__main__":
    sys.exit(main())
