"""The benchmark still runs end to end and every backend gives the same answers (no timing checks).

Runs ``python -m benchmarks.run`` (the real entry point) at a tiny size in a subprocess and reads
its results file. Export/import run in-process (``--inline-io``) and the stores go to a tmpfs when
there is one: starting a Python per export/import and fsyncing to disk would be most of the time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = {"raw_sqlite3", "acti_store[sqlite]", "json_files"}
OPERATIONS = {
    "create",
    "get",
    "update",
    "record_execution",
    "history_read",
    "search",
    "export",
    "import",
    "search_scale",
}


@pytest.mark.timeout(120)
def test_benchmark_backends_agree(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    workdir = shm if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path
    command = [
        sys.executable,
        "-m",
        "benchmarks.run",
        "--quick",
        "--agents=40",
        "--search-agents=120",
        "--gets=30",
        "--updates=15",
        "--searches=20",
        "--executions=240",
        "--history-reads=30",
        "--inline-io",
        "--no-chart",
        f"--out={tmp_path}",
        "--name=smoke",
        f"--workdir={workdir}",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    results = json.loads((tmp_path / "smoke.json").read_text("utf-8"))
    checks = results["checks"]
    assert checks["ok"], checks["mismatches"]
    measured = {(op["op"], op["backend"]) for op in results["operations"]}
    assert {op for op, _ in measured} == OPERATIONS
    assert {backend for _, backend in measured} == BACKENDS
    # The checks compared real answers: searches found agents, the FIFO trimmed, files matched.
    sanity = checks["sanity"]
    assert sanity["agents_past_50_records"] >= 1
    assert int(sanity["searches_with_results"].split("/")[0]) > 0
    assert checks["compared"]["export"]["acti_store[sqlite]"] > 40
    assert checks["compared"]["import (read back)"]["acti_store[sqlite]"] == 40


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_warm_runs_benchmark_runs_and_counts_server_starts(tmp_path: Path) -> None:
    """``benchmarks.warm_runs`` at a tiny size: every scenario runs, every phase is timed, and the
    server starts it counts are the ones the runner makes (warm: each server once)."""
    out = tmp_path / "warm_runs"
    command = [sys.executable, "-m", "benchmarks.warm_runs", "--repeat", "1"]
    command += ["--concurrent", "2", "--rounds", "2", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.with_suffix(".json").read_text())
    started = [(row["scenario"], row["servers"], row["processes_started"]) for row in rows]
    assert started == [
        ("cold, one run after another", 1, 1),
        ("warm, its first run", 1, 1),
        ("warm, one run after another", 1, 0),
        ("cold, one run after another", 3, 3),
        ("warm, its first run", 3, 3),
        ("warm, one run after another", 3, 0),
        ("warm, 2 concurrent runs of 5 agents", 3, 3),
        ("warm, 1 later burst(s) of 2", 3, 0),
        ("cold, 2 concurrent runs of 5 agents", 3, 6),
    ]
    for row in rows:
        assert row["overhead"]["median"] > 0 and row["connect"]["median"] > 0
