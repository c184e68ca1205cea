"""What an ``acti-store`` call spends importing, module by module: CPU self time, fresh processes.

Each of ``--runs`` processes runs the command in-process (``acti_store.cli.main``) with every
module's own execution timed (the time of the modules it imports subtracted), and prints them;
the fastest of the runs is kept per module, then summed per package (``acti_store``'s per
subpackage or module). ``PYTHONPATH`` picks the tree measured, so two trees compare side by
side::

    python -m benchmarks.import_cost [--runs 5] [--top 20] -- --url URL show NAME

CPU time, not wall time: on a loaded machine it varies less. ``python -X importtime`` gives the
same split in wall time.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from typing import Final

#: Run in each process: time every module's execution, run the command, print the times (JSON).
_PROBE: Final = r"""
import contextlib, io, json, sys, time
import importlib._bootstrap as bootstrap
costs, stack = {}, []
load = bootstrap._load_unlocked
def timed(spec):
    start = time.process_time()
    stack.append(0.0)
    try:
        return load(spec)
    finally:
        inner, total = stack.pop(), time.process_time() - start
        costs[spec.name] = costs.get(spec.name, 0.0) + total - inner
        if stack:
            stack[-1] += total
bootstrap._load_unlocked = timed
from acti_store.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(json.dumps(costs))
"""


def group(module: str) -> str:
    """The package a module counts for: ``acti_store.X`` for acti_store's, else its top level."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "acti_store" else parts[0]


def fastest(runs: int, argv: list[str]) -> dict[str, float]:
    """Each module's least self time (seconds) over ``runs`` fresh processes."""
    best: dict[str, float] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True
        )
        for module, seconds in json.loads(done.stdout.splitlines()[-1]).items():
            best[module] = min(best.get(module, seconds), seconds)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.import_cost", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="processes (default 5)")
    parser.add_argument("--top", type=int, default=20, help="packages shown (default 20)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the acti-store arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    best = fastest(args.runs, command)
    packages: collections.Counter[str] = collections.Counter()
    for module, seconds in best.items():
        packages[group(module)] += seconds
    print(f"all imports {sum(best.values()) * 1000:7.1f} ms")
    for package, seconds in packages.most_common(args.top):
        print(f"{seconds * 1000:11.1f} ms  {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
