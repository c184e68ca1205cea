"""The cost of a call at a glance: one chart from two committed results, no measuring.

Left, ``results/ab.json`` (``python -m benchmarks.ab``): each SQLite call's median now over the
base revision's, against the 1.15x line. Right, a ``benchmarks.run`` result (``results/quick.json``
by default): acti_store's ops/s over its engine's raw driver doing the same job (raw_sqlite3,
raw_psycopg, raw_pymysql), per operation and engine, against the 0.5x line.

Usage: ``python -m benchmarks.cost_chart [--ab results/ab.json] [--run results/quick.json]
[--out results/cost_of_a_call.png]``; docs/img/cost_of_a_call.png is written too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Final

RESULTS: Final = Path(__file__).parent / "results"
#: The copy docs/performance.md shows.
DOCS_IMAGE: Final = Path(__file__).parent.parent / "docs" / "img" / "cost_of_a_call.png"
#: acti_store's backend name in a run's result -> the raw driver it is compared with.
RAW: Final = {
    "acti_store[sqlite]": "raw_sqlite3",
    "acti_store[postgresql]": "raw_psycopg",
    "acti_store[mysql]": "raw_pymysql",
}
OPERATIONS: Final = ("create", "get", "update", "record_execution", "history_read", "search")
AB_TARGET, RAW_TARGET = 1.15, 0.5


def raw_ratios(run: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{backend: {operation: acti_store ops/s / raw ops/s}}`` of a run's operations."""
    rate = {(o["backend"], o["op"]): o["ops_per_s"] for o in run["operations"]}
    found = {backend: raw for backend, raw in RAW.items() if (backend, OPERATIONS[0]) in rate}
    return {
        backend: {op: rate[backend, op] / rate[raw, op] for op in OPERATIONS}
        for backend, raw in found.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ab", type=Path, default=RESULTS / "ab.json")
    parser.add_argument("--run", type=Path, default=RESULTS / "quick.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "cost_of_a_call.png")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ab = json.loads(args.ab.read_text())
    ratios = raw_ratios(json.loads(args.run.read_text()))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    calls = list(ab["best"]["now"])
    left.bar(calls, [ab["best"]["now"][c] / ab["best"]["base"][c] for c in calls])
    left.axhline(AB_TARGET, color="red", linestyle="--", label=f"target {AB_TARGET}x")
    left.set_title(f"SQLite, now / {ab['base'][:7]} (median µs per call; lower is better)")
    left.tick_params(axis="x", rotation=30)
    left.legend()
    width = 0.8 / max(len(ratios), 1)
    for index, (backend, by_op) in enumerate(ratios.items()):
        places = [i + index * width for i in range(len(OPERATIONS))]
        right.bar(places, [by_op.get(op, 0.0) for op in OPERATIONS], width, label=backend)
    right.axhline(RAW_TARGET, color="red", linestyle="--", label=f"target {RAW_TARGET}x")
    right.set_xticks([i + 0.4 - width / 2 for i in range(len(OPERATIONS))], OPERATIONS)
    right.tick_params(axis="x", rotation=30)
    right.set_title("acti_store / its engine's raw driver (ops/s; higher is better)")
    right.legend(fontsize="small")
    figure.tight_layout()
    for path in (args.out, DOCS_IMAGE):
        figure.savefig(path, dpi=100)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
