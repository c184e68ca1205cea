"""What a short-lived process pays before it answers: whole processes, timed from the outside.

On one small SQLite store at head (the contract's ``lead_qualifier`` and two more agents), each
round runs every case once, in turn, so that the machine's load falls on all of them alike:

- ``python -c pass``: the interpreter alone, the floor of every other case (the baseline);
- ``import acti_store``: ``python -c "import acti_store"``;
- ``acti-store show NAME`` and ``acti-store list``: the console script a user runs;
- ``serve-mcp initialize``: the official MCP client starts ``acti-store serve-mcp --transport
  stdio`` and times it from the process's start to the ``initialize`` result.

Two reference cases are what the dependencies cost before acti_store does anything:
``import sqlalchemy.orm, pydantic``, the floor of a call that reads the store, and
``import sqlalchemy.orm, mcp.server.lowlevel``, serve-mcp's. ``--base REV``
runs every acti_store case on that commit too (its tree from ``git archive``, its own store),
alternating with this checkout's, and prints each case's ratio now / base: on a loaded machine
the ratio holds where absolute figures do not.

Prints, per case, the median of ``--runs`` processes (and the fastest), its share above the
baseline, its target and whether the median meets it; writes ``OUT.txt`` and ``OUT.json``::

    python -m benchmarks.cold_start [--runs 10] [--base REV] [--out benchmarks/results/cold_start]

Where a case's time goes: ``python -X importtime -c "import acti_store"`` (imports),
``python -m benchmarks.import_cost -- --url URL show NAME`` (each package's imports in CPU time,
steadier under load) and ``python -m cProfile -s cumtime -m acti_store --url URL show NAME``
(the whole call).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from .measure import git_state

ROOT: Final = Path(__file__).resolve().parent.parent
NAME: Final = "lead_qualifier"
#: The agents of the store besides the contract's: a short list, as a new user's.
OTHERS: Final = ("support_triage", "report_writer")


@dataclass(frozen=True)
class Side:
    """A tree of acti_store measured: its name (``now``, or the base's revision) and its root."""

    name: str
    root: Path


@dataclass(frozen=True)
class Case:
    """One kind of process of one side: its name, target (seconds, median) and how to time it."""

    name: str
    side: str
    target: float | None
    run: Callable[[], float]


def acti_store_command(*args: str) -> list[str]:
    """The ``acti-store`` console script beside this interpreter (else ``-m acti_store``); the
    side's tree comes first on ``PYTHONPATH``, so the script runs that tree's package."""
    script = Path(sys.executable).parent / "acti-store"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "acti_store"]
    return [*head, *args]


def _env(side: Side) -> dict[str, str]:
    """A process's environment (run in the side's root: ``python -c`` puts its folder first on
    ``sys.path``): the side's acti_store, no JSON mirror, and bytecode written and
    read as an installed package has it (``PYTHONDONTWRITEBYTECODE`` left out: with it, every
    module edited since its ``.pyc`` is compiled again in every process)."""
    env = {**os.environ, "PYTHONPATH": str(side.root), "ACTI_STORE_EXPORT_DIR": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed_process(side: Side, argv: list[str]) -> Callable[[], float]:
    """Times ``argv`` to its end (its output discarded; a failure stops the run)."""

    def run() -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=side.root, env=_env(side), capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()}")
        return elapsed

    return run


def timed_initialize(side: Side, url: str) -> Callable[[], float]:
    """Starts ``serve-mcp`` over stdio, timed from the start to the ``initialize`` result."""
    argv = acti_store_command("--url", url, "serve-mcp", "--transport", "stdio")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env(side), cwd=side.root)

    async def once() -> float:
        started = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return time.perf_counter() - started

    return lambda: asyncio.run(once())


def make_store(side: Side, folder: Path) -> str:
    """A SQLite store at the side's head with the contract's agent and two more, made by the
    side's own acti_store in a subprocess (this process imports none of it)."""
    url = f"sqlite:///{folder / f'{side.name}.db'}"
    code = (
        "import sys\n"
        "from acti_store import AgentConfig, open_repository\n"
        "with open_repository(sys.argv[1], export_dir='') as repo:\n"
        "    for name in sys.argv[2:]:\n"
        "        repo.create(AgentConfig(name=name, tools=['communication', 'crm'],\n"
        "            description='Qualifies inbound leads by assessing BANT criteria',\n"
        "            system_prompt='You are a professional lead qualification specialist. '\n"
        "            'Assess budget, authority, need and timeline for every lead.'))\n"
    )
    argv = [sys.executable, "-c", code, url, NAME, *OTHERS]
    subprocess.run(argv, cwd=side.root, env=_env(side), check=True)
    return url


def cases(side: Side, url: str) -> list[Case]:
    """The acti_store cases of one side (``python -c pass`` and the floor are the run's)."""
    python = sys.executable
    return [
        Case("import acti_store", side.name, 0.25, timed_process(side, [python, "-c", IMPORT])),
        Case(
            SHOW,
            side.name,
            0.35,
            timed_process(side, acti_store_command("--url", url, "show", NAME)),
        ),
        Case(
            "acti-store list",
            side.name,
            0.35,
            timed_process(side, acti_store_command("--url", url, "list")),
        ),
        Case("serve-mcp initialize", side.name, 0.6, timed_initialize(side, url)),
    ]


IMPORT: Final = "import acti_store"
SHOW: Final = f"acti-store show {NAME}"
BASELINE: Final = "python -c pass"
FLOOR: Final = "import sqlalchemy.orm, pydantic"
#: The MCP SDK's server (its package imports FastMCP, jsonschema, httpx): serve-mcp's floor.
MCP_FLOOR: Final = "import sqlalchemy.orm, mcp.server.lowlevel"


def base_tree(revision: str, folder: Path) -> Path:
    """The tree of ``revision`` (``git archive``: nothing in this checkout changes)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def measure(every: list[Case], runs: int) -> dict[tuple[str, str], list[float]]:
    """``runs`` rounds, each case once per round, in turn, after one unmeasured round (bytecode
    written, the file cache warm, as for a user's second call)."""
    for case in every:
        case.run()
    seconds: dict[tuple[str, str], list[float]] = {(c.name, c.side): [] for c in every}
    for _ in range(runs):
        for case in every:
            seconds[case.name, case.side].append(case.run())
    return seconds


def summary(every: list[Case], seconds: dict[tuple[str, str], list[float]]) -> list[dict[str, Any]]:
    baseline = statistics.median(seconds[BASELINE, "python"])
    medians = {key: statistics.median(times) for key, times in seconds.items()}
    rows = []
    for case in every:
        median = medians[case.name, case.side]
        base = [
            m
            for (name, side), m in medians.items()
            if name == case.name and side not in ("now", "python")
        ]
        rows.append(
            {
                "case": case.name,
                "side": case.side,
                "median_s": round(median, 4),
                "fastest_s": round(min(seconds[case.name, case.side]), 4),
                "above_baseline_s": round(median - baseline, 4),
                "target_s": case.target if case.side == "now" else None,
                "meets_target": None
                if case.target is None or case.side != "now"
                else median <= case.target,
                "now_over_base": round(median / base[0], 3)
                if base and case.side == "now"
                else None,
            }
        )
    return rows


def render(rows: list[dict[str, Any]], runs: int) -> str:
    lines = [
        f"Cold start: median of {runs} whole processes per case, cases alternating "
        f"(load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end, "
        f"{os.cpu_count()} CPUs)",
        "",
        f"{'case':<42} {'side':<8} {'median':>8} {'fastest':>8} {'- python':>9} "
        f"{'now/base':>8} {'target':>7}  verdict",
    ]
    for row in rows:
        target = row["target_s"]
        verdict = "" if target is None else "pass" if row["meets_target"] else "MISS"
        ratio = "" if row["now_over_base"] is None else f"{row['now_over_base']:.2f}x"
        shown_target = "" if target is None else f"{target:.2f}s"
        lines.append(
            f"{row['case']:<42} {row['side']:<8} {row['median_s']:>7.3f}s "
            f"{row['fastest_s']:>7.3f}s {row['above_baseline_s']:>8.3f}s {ratio:>8} "
            f"{shown_target:>7}  {verdict}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_start", description=__doc__)
    parser.add_argument("--runs", type=int, default=10, help="processes per case (default 10)")
    parser.add_argument("--base", metavar="REV", help="also measure this commit, alternating")
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "results" / "cold_start",
        help="OUT.txt and OUT.json are written (default: benchmarks/results/cold_start)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        sides = [Side("now", ROOT)]
        if args.base:
            sides.append(Side(args.base, base_tree(args.base, Path(folder) / "base")))
        python = Side("python", ROOT)
        every = [
            Case(BASELINE, "python", None, timed_process(python, [sys.executable, "-c", "pass"])),
            Case(FLOOR, "python", None, timed_process(python, [sys.executable, "-c", FLOOR])),
            Case(
                MCP_FLOOR, "python", None, timed_process(python, [sys.executable, "-c", MCP_FLOOR])
            ),
        ]
        per_side = [cases(side, make_store(side, Path(folder))) for side in sides]
        every += [case for group in zip(*per_side, strict=True) for case in group]
        seconds = measure(every, args.runs)
    rows = summary(every, seconds)
    text = render(rows, args.runs)
    sys.stdout.write(text)
    document = {
        "runs": args.runs,
        "base": args.base,
        "cases": rows,
        "seconds": {
            f"{name} [{side}]": [round(s, 4) for s in t] for (name, side), t in seconds.items()
        },
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        **git_state(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".txt").write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(
        json.dumps(document, indent=2) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
