"""The store at another revision against this working tree, on SQLite, in one run.

``python -m benchmarks.ab --base dbb6849 [--agents 3000] [--rounds 3]`` puts the base revision's
tree in a temporary directory (``git archive``) and starts two worker processes, one importing
each tree's ``acti_store``. In each round both make a fresh SQLite store; the driver then has
them take turns, ``--block`` calls each (which goes first alternates), so both are measured on
the same machine at the same moment (a loaded machine slows both alike). Each times, one call
each:

- ``create`` of N agents (the median over all of them: the store grows as it goes);
- ``update`` of K = min(N, 1,000) of them (description and tags), ``record_execution`` of 2K
  runs, ``get`` of K and ``history`` (``get_history(name, limit=10)``) of K.

It prints ``call | base | now | now/base`` (each side's best median over the rounds, as the
issue measured it), marks ``create``, ``update`` and ``record_execution`` against the 1.15x
target, and writes ``benchmarks/results/ab.txt`` and ``ab.json`` (``--name``). A worker is this
file run as a script from a directory of its own, so it imports nothing but the standard
library and the ``acti_store`` its ``PYTHONPATH`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import IO, Any, Final

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results"
CALLS: Final = ("create", "update", "record_execution", "get", "history")
#: The calls the target holds to (``TARGET`` x the base's median at most).
WRITES: Final = ("create", "update", "record_execution")
TARGET: Final = 1.15
#: Most updates, runs / 2, gets and history reads per round.
READS_MAX: Final = 1_000

_WORDS: Final = (
    "qualifies inbound leads by budget and timeline",
    "summarises support tickets for the weekly review",
    "drafts outreach emails from CRM notes",
    "answers billing questions with the pricing sheet",
    "triages bug reports and assigns an owner",
)


# -- worker ----------------------------------------------------------------------------------


def _config(i: int) -> dict[str, Any]:
    return {
        "name": f"agent_{i:06d}",
        "description": f"Agent {i} that {_WORDS[i % len(_WORDS)]}",
        "system_prompt": "You are a careful assistant. " * 3,
        "tools": ["websearch", "crm"][: i % 3],
        "tags": [f"team-{i % 7}", "bench"][: i % 3],
        "stratum": None,
    }


class Round:
    """One round's fresh store and the calls it times, phase by phase (``CALLS``), one block
    at a time (``block``): the driver alternates the two workers between blocks."""

    def __init__(self, agents: int, seed: int, folder: str) -> None:
        from acti_store import AgentConfig, ExecutionRecord, open_repository

        rng = random.Random(seed)
        k = min(agents, READS_MAX)
        names = [_config(i)["name"] for i in range(agents)]
        picked = rng.sample(names, k)
        start = datetime(2026, 1, 1, tzinfo=UTC)
        runs = [
            ExecutionRecord(
                timestamp=start + timedelta(seconds=i),
                task=f"task {i}",
                result_summary="done",
                success=i % 5 != 0,
                duration_seconds=0.25,
            )
            for i in range(2 * k)
        ]
        ran = [rng.choice(picked) for _ in runs]
        configs = [AgentConfig(**_config(i)) for i in range(agents)]  # what both revisions take
        self.repo = repo = open_repository(f"sqlite:///{folder}/ab.db")
        self.calls: dict[str, list[Callable[[], object]]] = {
            "create": [partial(repo.create, c) for c in configs],
            "update": [
                partial(repo.update, n, {"description": f"Updated {i} " + n})
                for i, n in enumerate(picked)
            ],
            "record_execution": [
                partial(repo.record_execution, n, r) for n, r in zip(ran, runs, strict=True)
            ],
            "get": [partial(repo.get, n) for n in picked],
            "history": [partial(repo.get_history, n, limit=10) for n in picked],
        }

    def block(self, call: str, start: int, stop: int) -> list[float]:
        """The µs of each of calls ``start`` to ``stop`` of ``call``, each timed alone."""
        clock = time.perf_counter
        spent = []
        for each in self.calls[call][start:stop]:
            began = clock()
            each()
            spent.append((clock() - began) * 1e6)
        return spent


def worker(agents: int) -> None:
    """Answer each request of stdin (one JSON line: ``open`` a round's store, time a ``block``,
    ``close`` it) with one JSON line."""
    import acti_store

    print(json.dumps({"package": acti_store.__file__}), flush=True)
    current: Round | None = None
    folder: tempfile.TemporaryDirectory[str] | None = None
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any] = {}
        if request["op"] == "open":
            folder = tempfile.TemporaryDirectory()
            current = Round(agents, request["seed"], folder.name)
            answer = {"sizes": {call: len(calls) for call, calls in current.calls.items()}}
        elif request["op"] == "block" and current is not None:
            answer = {"spent": current.block(request["call"], request["start"], request["stop"])}
        elif current is not None and folder is not None:
            current.repo.close()
            folder.cleanup()
            current = None
        print(json.dumps(answer), flush=True)


# -- driver ----------------------------------------------------------------------------------


@contextmanager
def base_tree(revision: str) -> Iterator[tuple[Path, str]]:
    """The tree of ``revision`` in a temporary directory, and its full commit id."""
    commit = _git("rev-parse", "--verify", f"{revision}^{{commit}}")
    with tempfile.TemporaryDirectory(prefix="acti-ab-") as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder), commit


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


class Worker:
    """One worker process, importing the ``acti_store`` of ``tree``."""

    def __init__(self, tree: Path, script: Path, agents: int) -> None:
        env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--worker", "--agents", str(agents)],
            cwd=tree,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.package = str(self._answer()["package"])
        if not self.package.startswith(str(tree)):
            raise SystemExit(f"the worker for {tree} imported {self.package}")

    def _answer(self) -> dict[str, Any]:
        stdout: IO[str] | None = self.process.stdout
        line = stdout.readline() if stdout is not None else ""
        if not line:
            raise SystemExit(f"a worker ended (status {self.process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **request: Any) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def table(base: dict[str, float], now: dict[str, float], label: str) -> str:
    """``call | base | now | now/base``, the writes marked against ``TARGET``."""
    lines = [
        f"call              | base ({label}) | now       | now/base",
        "------------------|-----------------|-----------|---------",
    ]
    for call in CALLS:
        ratio = now[call] / base[call]
        mark = ""
        if call in WRITES:
            mark = f"  {'ok' if ratio <= TARGET else 'OVER'} (target <= {TARGET:.2f}x)"
        lines.append(
            f"{call:<17} | {base[call]:>12.1f} µs | {now[call]:>6.1f} µs | {ratio:>6.2f}x{mark}"
        )
    return "\n".join(lines)


def measure(sides: dict[str, Worker], seed: int, block: int) -> dict[str, dict[str, float]]:
    """One round: both workers on a fresh store each, every call's median µs. Each phase goes
    ``block`` calls at a time, the workers taking turns (which goes first alternates), so that
    both meet the machine's load alike."""
    opened = [side.ask(op="open", seed=seed) for side in sides.values()]
    sizes = opened[0]["sizes"]
    spent: dict[str, dict[str, list[float]]] = {name: {} for name in sides}
    turn = 0
    for call in CALLS:
        for start in range(0, sizes[call], block):
            names = list(sides) if turn % 2 == 0 else list(sides)[::-1]
            turn += 1
            for name in names:
                answer = sides[name].ask(op="block", call=call, start=start, stop=start + block)
                spent[name].setdefault(call, []).extend(answer["spent"])
    for side in sides.values():
        side.ask(op="close")
    return {
        name: {call: statistics.median(times) for call, times in calls.items()}
        for name, calls in spent.items()
    }


def best(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each call's best (lowest) median over the rounds."""
    return {call: min(r[call] for r in rounds) for call in CALLS}


def drive(args: argparse.Namespace) -> int:
    with ExitStack() as stack:
        tree, commit = stack.enter_context(base_tree(args.base))
        if args.now is None:
            now_tree, head = ROOT, _git("rev-parse", "HEAD")
            dirty = bool(_git("status", "--porcelain", "--", "acti_store", "migrations"))
        else:
            (now_tree, head), dirty = stack.enter_context(base_tree(args.now)), False
        script = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "ab_worker.py"
        shutil.copyfile(__file__, script)
        sides = {
            "base": Worker(tree, script, args.agents),
            "now": Worker(now_tree, script, args.agents),
        }
        figures: dict[str, list[dict[str, float]]] = {"base": [], "now": []}
        try:
            for r in range(args.rounds):
                for side, figure in measure(sides, args.seed + r, args.block).items():
                    figures[side].append(figure)
                    print(f"round {r + 1} {side}: " + _brief(figure), flush=True)
        finally:
            for each in sides.values():
                each.close()
    base, now = best(figures["base"]), best(figures["now"])
    heading = (
        f"acti_store at {commit[:7]} (base) vs "
        f"{'the working tree at ' if args.now is None else ''}{head[:7]}"
        f"{' + uncommitted changes' if dirty else ''} (now): SQLite, {args.agents:,} agents, "
        f"best median of {args.rounds} rounds each, alternating every {args.block} calls, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs\ncommand: python -m benchmarks.ab --base {args.base} "
        f"{'' if args.now is None else f'--now {args.now} '}--agents {args.agents} "
        f"--rounds {args.rounds} --block {args.block}"
    )
    text = heading + "\n\n" + table(base, now, commit[:7]) + "\n"
    print("\n" + text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.txt").write_text(text)
    record = {
        "base": commit,
        "now": head,
        "uncommitted": dirty,
        "agents": args.agents,
        "rounds": figures,
        "best": {"base": base, "now": now},
        "ratios": {call: now[call] / base[call] for call in CALLS},
        "target": TARGET,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0 if all(now[c] <= TARGET * base[c] for c in WRITES) else 1


def _brief(figures: dict[str, float]) -> str:
    return ", ".join(f"{call} {figures[call]:.0f}" for call in CALLS) + " µs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("--base", default="dbb6849", help="the revision compared (dbb6849)")
    parser.add_argument(
        "--now", default=None, help="a revision measured instead of the working tree"
    )
    parser.add_argument("--agents", type=int, default=3_000, help="agents per store (3,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (3)")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--block", type=int, default=50, help="calls per turn (50)")
    parser.add_argument("--name", default="ab", help="results/NAME.txt and .json (ab)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.agents)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
