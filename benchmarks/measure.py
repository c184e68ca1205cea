"""Latency statistics, and the subprocess that measures export/import time and peak memory.

Peak RSS is measured in a fresh subprocess per (backend, operation): the child imports everything,
opens the store, records its RSS (the baseline), runs the one operation, and reports its ``VmHWM``
(the kernel's high-water mark of the process's memory, restarted just before the operation; see
``probe``). So the peak is the whole process while the operation ran (interpreter, SQLAlchemy,
pydantic included) and ``delta`` = peak - baseline is what the operation itself added; neither is
polluted by the parent's memory.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .backends import StoreSpec

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class OpStats:
    """One operation on one backend."""

    op: str
    backend: str
    calls: int
    total_s: float
    median_ms: float | None = None
    p90_ms: float | None = None
    #: Free-form figures: export/import RSS, record_execution first/last 1,000, the code path.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ops_per_s(self) -> float:
        return self.calls / self.total_s if self.total_s > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"ops_per_s": self.ops_per_s}


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def summarize(op: str, backend: str, latencies_ns: Sequence[int]) -> OpStats:
    ms = sorted(ns / 1e6 for ns in latencies_ns)
    return OpStats(
        op=op,
        backend=backend,
        calls=len(ms),
        total_s=sum(ms) / 1e3,
        median_ms=statistics.median(ms) if ms else None,
        p90_ms=percentile(ms, 0.9) if ms else None,
    )


def first_last(latencies_ns: Sequence[int], window: int = 1_000) -> dict[str, float]:
    """Latency of the first and the last ``window`` calls: is the cost flat as data grows?

    Compared on medians: a write now and then pays for a WAL checkpoint (tens of ms, on every
    backend), and a few of those in a window swing its mean far more than any growth would.
    The means are kept too.
    """
    window = max(1, min(window, len(latencies_ns) // 2))
    first, last = latencies_ns[:window], latencies_ns[-window:]
    first_ms, last_ms = statistics.median(first) / 1e6, statistics.median(last) / 1e6
    return {
        "window": window,
        "first_ms": first_ms,
        "last_ms": last_ms,
        "last_over_first": last_ms / first_ms,
        "first_mean_ms": statistics.fmean(first) / 1e6,
        "last_mean_ms": statistics.fmean(last) / 1e6,
    }


def git_state() -> dict[str, Any]:
    """The commit measured and whether acti_store has uncommitted changes (read-only git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
            )
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", "acti_store", "migrations")
    return {"commit": git("rev-parse", "--short", "HEAD"), "acti_store_dirty": bool(status)}


def run_probe(
    spec: StoreSpec, op: str, directory: Path, fingerprint: str, *, inline: bool = False
) -> dict[str, Any]:
    """Run ``export``/``import`` of ``spec`` in a fresh subprocess (or in this process when
    ``inline``: faster to start, but the peak then includes this process's memory)."""
    if inline:
        from .probe import measure

        return measure(spec, op, directory) | {"inline": True}
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    }
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.probe", spec.to_json(), op, str(directory)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"{op} of {spec.label} failed in its subprocess:\n{completed.stderr.strip()}"
        )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    if result["code"] != fingerprint:
        raise RuntimeError(
            "acti_store's code changed on disk during the run: the subprocess measured other code "
            "than this process. Run the benchmark again on a tree nobody is editing."
        )
    return result
