"""What a run costs besides the model: cold (servers started per run) vs warm (``keep_servers``).

Agents with 1 and with 3 real MCP servers (the test servers of ``tests/mcp_servers``, over
stdio) run one after another with an instant scripted model, through ``AgentRunner.run`` as an
application calls it, cold (the one-shot runner) and warm (``keep_servers``). Then bursts of
``--concurrent`` runs of 5 agents that share the same 3 servers, warm (``--rounds`` bursts) and
cold (one burst). Each phase of each run is timed from inside the runner:

- ``connect``: getting the servers (starting them, or leasing warm sessions and pinging them);
- ``build``: ``create_deep_agent``; ``execute``: the graph's run (the model answers at once);
- ``release``: stopping the servers (cold) or letting go of them (warm);
- ``record``: the report and its history record; ``overhead``: the whole ``run()`` call.

A warm runner's first burst starts the servers (its runs wait for those starts); the rows after it
are the bursts that find them warm.

Prints median and p99 (ms) per phase and how many server processes started (each test server
notes its start in a file)::

    python -m benchmarks.warm_runs [--repeat 20] [--concurrent 20] [--rounds 3] [--url URL]
                                   [--out benchmarks/results/warm_runs]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from acti_store import AgentConfig, open_repository
from acti_store.execution import AgentRunner, CategorySpec, McpCatalog
from acti_store.execution import runner as runner_module
from acti_store.repository import AgentRepository
from acti_store.testing import ScriptedChatModel

SERVERS = Path(__file__).resolve().parent.parent / "tests" / "mcp_servers"
CATEGORIES = (
    ("crm", "HubSpot", "crm_server.py", "PRIVATE_APP_ACCESS_TOKEN"),
    ("calendar", "Google Calendar", "calendar_server.py", "GOOGLE_OAUTH_CREDENTIALS"),
    ("websearch", "Tavily", "search_server.py", "TAVILY_API_KEY"),
)
PHASES = ("connect", "build", "execute", "release", "record", "overhead")
PROMPT = "You measure overhead. Answer at once, without tools, in one short sentence please."
TIMEOUT = 300.0

_phases: contextvars.ContextVar[dict[str, float]] = contextvars.ContextVar("phases")


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def catalog(starts: Path) -> McpCatalog:
    return McpCatalog(
        {
            category: CategorySpec(
                provider,
                {
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": [str(SERVERS / script), "--starts", str(starts)],
                },
                env=(variable,),
            )
            for category, provider, script, variable in CATEGORIES
        }
    )


def instant_model(_model: str) -> ScriptedChatModel:
    return ScriptedChatModel(script=[AIMessage("done")])


# -- timing from inside the runner (the run's context carries its phase dict) ----------------------


def _timed_servers(
    open_servers: Callable[..., contextlib.AbstractAsyncContextManager[Any]],
) -> Callable[..., contextlib.AbstractAsyncContextManager[Any]]:
    @asynccontextmanager
    async def timed(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        phases = _phases.get()
        began = time.perf_counter()
        async with open_servers(*args, **kwargs) as servers:
            phases["connect"] = _ms(began)
            try:
                yield servers
            finally:
                began = time.perf_counter()
        phases["release"] = _ms(began)

    return timed


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Time the phases of every run of this process (``runner_module``'s names, patched)."""
    saved = {
        name: getattr(runner_module, name) for name in ("started", "create_deep_agent", "WarmPool")
    }
    execute, conclude = AgentRunner._execute, AgentRunner._conclude

    def build(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return saved["create_deep_agent"](*args, **kwargs)
        finally:
            _phases.get()["build"] = _ms(began)

    async def timed_execute(self: AgentRunner, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await execute(self, *args, **kwargs)
        finally:
            phases = _phases.get()
            phases["execute"] = _ms(began) - phases.get("build", 0.0)

    def timed_conclude(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return conclude(*args, **kwargs)
        finally:
            _phases.get()["record"] = _ms(began)

    class TimedPool(saved["WarmPool"]):  # type: ignore[misc]
        def __init__(self, keep: float) -> None:
            super().__init__(keep)
            self.lease = _timed_servers(super().lease)  # type: ignore[method-assign]

    runner_module.started = _timed_servers(saved["started"])  # type: ignore[attr-defined]
    runner_module.create_deep_agent = build  # type: ignore[attr-defined]
    runner_module.WarmPool = TimedPool  # type: ignore[attr-defined,misc]
    AgentRunner._execute = timed_execute  # type: ignore[method-assign]
    AgentRunner._conclude = staticmethod(timed_conclude)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(runner_module, name, value)
        AgentRunner._execute = execute  # type: ignore[method-assign]
        AgentRunner._conclude = staticmethod(conclude)  # type: ignore[method-assign,assignment]


async def one_run(runner: AgentRunner, agent: Any) -> dict[str, float]:
    phases: dict[str, float] = {}
    _phases.set(phases)
    began = time.perf_counter()
    report = await runner.run(agent, "go", timeout=TIMEOUT)
    phases["overhead"] = _ms(began)
    if not report.success or report.result.degraded_mode:
        raise RuntimeError(f"a measured run failed:\n{report.text}")
    return phases


# -- scenarios ------------------------------------------------------------------------------------


def _p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]


def summary(label: str, servers: int, runs: list[dict[str, float]], started: int) -> dict[str, Any]:
    row: dict[str, Any] = {"scenario": label, "servers": servers, "runs": len(runs)}
    for phase in PHASES:
        values = [r.get(phase, 0.0) for r in runs]
        row[phase] = {"median": statistics.median(values), "p99": _p99(values)}
    row["processes_started"] = started
    return row


def count(starts: Path) -> int:
    return len(starts.read_text().split()) if starts.exists() else 0


async def sequential(
    repo: AgentRepository, tools: list[str], repeat: int, warm: bool, starts: Path
) -> list[dict[str, Any]]:
    name = f"overhead_{len(tools)}_{'warm' if warm else 'cold'}"
    repo.create(
        AgentConfig(name=name, description="Overhead probe", system_prompt=PROMPT, tools=tools)
    )
    agent = repo.get(name)
    before = count(starts)
    keep = 300.0 if warm else None
    mode = "warm" if warm else "cold"
    async with AgentRunner(
        repo, model=instant_model, catalog=catalog(starts), keep_servers=keep
    ) as runner:
        first = await one_run(runner, agent)  # warm: starts the servers; cold: like any run
        after_first = count(starts)
        runs = [await one_run(runner, agent) for _ in range(repeat)]
    rows = [
        summary(f"{mode}, one run after another", len(tools), runs, count(starts) - after_first)
    ]
    if warm:
        rows.insert(0, summary("warm, its first run", len(tools), [first], after_first - before))
    return rows


async def burst(
    repo: AgentRepository, concurrent: int, rounds: int, warm: bool, starts: Path
) -> list[dict[str, Any]]:
    mode = "warm" if warm else "cold"
    tools = [category for category, *_ in CATEGORIES]
    agents = []
    for i in range(5):
        name = f"burst_{mode}_{i}"
        config = AgentConfig(
            name=name, description="Burst probe", system_prompt=PROMPT, tools=tools
        )
        repo.create(config)
        agents.append(repo.get(name))
    keep = 300.0 if warm else None
    bursts: list[tuple[list[dict[str, float]], int]] = []
    async with AgentRunner(
        repo, model=instant_model, catalog=catalog(starts), keep_servers=keep
    ) as runner:
        for _ in range(rounds):
            before = count(starts)
            runs = await asyncio.gather(
                *(one_run(runner, agents[i % len(agents)]) for i in range(concurrent))
            )
            bursts.append((list(runs), count(starts) - before))
    what = f"{concurrent} concurrent runs of 5 agents"
    rows = [summary(f"{mode}, {what}", len(tools), *bursts[0])]
    if len(bursts) > 1:
        later = [run for runs, _ in bursts[1:] for run in runs]
        label = f"{mode}, {len(bursts) - 1} later burst(s) of {concurrent}"
        rows.append(summary(label, len(tools), later, sum(n for _, n in bursts[1:])))
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    head = f"{'scenario':<46} {'srv':>3} {'runs':>4} " + " ".join(
        f"{phase:>15}" for phase in PHASES
    )
    lines = [
        "median / p99 per phase, milliseconds; processes = MCP server processes started",
        head + f" {'processes':>9}",
        "-" * (len(head) + 10),
    ]
    for row in rows:
        cells = " ".join(f"{row[p]['median']:>7.1f}/{row[p]['p99']:>7.1f}" for p in PHASES)
        lines.append(
            f"{row['scenario']:<46} {row['servers']:>3} {row['runs']:>4} {cells} "
            f"{row['processes_started']:>9}"
        )
    return "\n".join(lines)


async def measure(
    url: str, repeat: int, concurrent: int, rounds: int, starts: Path
) -> list[dict[str, Any]]:
    repo = open_repository(url)
    rows: list[dict[str, Any]] = []
    try:
        with instrumented():
            warmup = ["crm"]  # imports and caches, not measured
            await sequential(repo, warmup, 1, False, starts.with_name("warmup.txt"))
            repo.delete("overhead_1_cold")
            for tools in (["crm"], [c for c, *_ in CATEGORIES]):
                for warm in (False, True):
                    rows += await sequential(repo, tools, repeat, warm, starts)
            rows += await burst(repo, concurrent, rounds, True, starts)
            rows += await burst(repo, concurrent, 1, False, starts)
    finally:
        repo.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs one after another (20)")
    parser.add_argument("--concurrent", type=int, default=20, help="runs per burst (20)")
    parser.add_argument("--rounds", type=int, default=3, help="warm bursts (3)")
    parser.add_argument("--url", help="the store (default: a new temporary SQLite file)")
    parser.add_argument("--out", type=Path, help="also write OUT.json and OUT.txt")
    args = parser.parse_args(argv)
    for _, _, _, variable in CATEGORIES:
        os.environ.setdefault(variable, f"probe-{variable.lower()}")
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{tmp}/warm_runs.db"
        began = time.perf_counter()
        rows = asyncio.run(
            measure(url, args.repeat, args.concurrent, args.rounds, Path(tmp) / "starts.txt")
        )
        seconds = time.perf_counter() - began
    text = render(rows) + f"\n\nruntime {seconds:.0f} s, load average {os.getloadavg()[0]:.1f}"
    print(text)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
        args.out.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
