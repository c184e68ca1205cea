"""The benchmark still runs end to end and every backend gives the same answers (no timing checks).

Runs ``python -m benchmarks.run`` (the real entry point) at a tiny size in a subprocess and reads
its results file. Export/import run in-process (``--inline-io``) and the stores go to a tmpfs when
there is one: starting a Python per export/import and fsyncing to disk would be most of the time.
With ``ACTI_STORE_TEST_POSTGRES_URL`` set, the same on PostgreSQL too: acti_store, the
hand-written ``raw_psycopg`` and LangGraph's ``PostgresStore`` beside the others, and a tiny
client-scaling probe. With ``ACTI_STORE_TEST_MYSQL_URL`` set, the same on MariaDB:
acti_store[mysql] beside the hand-written ``raw_pymysql``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ENV = "ACTI_STORE_TEST_POSTGRES_URL"
POSTGRES_URL = os.environ.get(POSTGRES_ENV)
BACKENDS = {"raw_sqlite3", "acti_store[sqlite]", "json_files"}
POSTGRES_BACKENDS = {"acti_store[postgresql]", "raw_psycopg", "langgraph_pg"}
MYSQL_ENV = "ACTI_STORE_TEST_MYSQL_URL"
MYSQL_URL = os.environ.get(MYSQL_ENV)
MYSQL_BACKENDS = {"acti_store[mysql]", "raw_pymysql"}
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


def _run_tiny(tmp_path: Path, *extra: str) -> dict[str, Any]:
    """``benchmarks.run`` at a tiny size (plus ``extra`` arguments); its results document."""
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
        *extra,
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    results: dict[str, Any] = json.loads((tmp_path / "smoke.json").read_text("utf-8"))
    return results


def _check_agreement(results: dict[str, Any], backends: set[str]) -> None:
    checks = results["checks"]
    assert checks["ok"], checks["mismatches"]
    measured = {(op["op"], op["backend"]) for op in results["operations"]}
    assert {op for op, _ in measured} == OPERATIONS
    assert {backend for _, backend in measured} == backends
    # The checks compared real answers: searches found agents, the FIFO trimmed, files matched.
    sanity = checks["sanity"]
    assert sanity["agents_past_50_records"] >= 1
    assert int(sanity["searches_with_results"].split("/")[0]) > 0
    for backend in backends - {"raw_sqlite3"}:
        assert checks["compared"]["export"][backend] > 40
        assert checks["compared"]["import (read back)"][backend] == 40
        assert checks["compared"]["search"][backend] > 0


@pytest.mark.timeout(120)
def test_benchmark_backends_agree(tmp_path: Path) -> None:
    results = _run_tiny(tmp_path)
    _check_agreement(results, BACKENDS)
    assert results["client_scaling"] == []


@pytest.mark.postgresql
@pytest.mark.skipif(not POSTGRES_URL, reason=f"{POSTGRES_ENV} is not set: PostgreSQL skipped")
@pytest.mark.timeout(300)
def test_benchmark_backends_agree_on_postgresql(tmp_path: Path) -> None:
    """raw_psycopg and langgraph_pg beside acti_store[postgresql]: every phase, every answer
    compared with raw sqlite3's; the client-scaling probe runs every cell, and acti_store and
    raw_psycopg lose no count (the peer's losses are only reported)."""
    assert POSTGRES_URL is not None
    scaling = ("--scaling-clients", "1", "2", "--scaling-calls=5")
    results = _run_tiny(tmp_path, f"--postgres-url={POSTGRES_URL}", *scaling)
    _check_agreement(results, BACKENDS | POSTGRES_BACKENDS)
    cells = results["client_scaling"]
    assert {(c["backend"], c["mode"], c["clients"]) for c in cells} == {
        (backend, mode, clients)
        for backend in POSTGRES_BACKENDS
        for mode in ("distinct", "shared")
        for clients in (1, 2)
    }
    for cell in cells:
        assert cell["runs"] == 5 * cell["clients"]
        assert cell["runs_per_s"] > 0 and cell["p99_ms"] >= cell["p50_ms"] > 0
        if cell["backend"] != "langgraph_pg":
            assert cell["lost"] == 0, cell


@pytest.mark.mysql
@pytest.mark.skipif(not MYSQL_URL, reason=f"{MYSQL_ENV} is not set: MariaDB skipped")
@pytest.mark.timeout(300)
def test_benchmark_backends_agree_on_mariadb(tmp_path: Path) -> None:
    """raw_pymysql beside acti_store[mysql]: every phase, every answer compared with raw
    sqlite3's, and the MariaDB table printed."""
    assert MYSQL_URL is not None
    results = _run_tiny(tmp_path, f"--mysql-url={MYSQL_URL}")
    _check_agreement(results, BACKENDS | MYSQL_BACKENDS)
    assert results["client_scaling"] == []
    assert set(results["meta"]["mysql_versions"]) & {"MariaDB", "MySQL"}
    text = (tmp_path / "smoke.txt").read_text("utf-8")
    assert "MariaDB (ratios: ops/s relative to raw_pymysql" in text
    assert "vs pymysql" in text


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


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_turn_benchmark_times_the_store_per_turn(tmp_path: Path) -> None:
    """``benchmarks.turn`` at a tiny size on SQLite: one turn after another and 2 at once, each
    turn's store time measured (positive, a share of the turn) and its repository calls listed,
    the run's record among them."""
    out = tmp_path / "turn"
    command = [sys.executable, "-m", "benchmarks.turn", "--turns", "5", "--concurrent", "2"]
    command += ["--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.with_suffix(".json").read_text())["results"]
    assert [(row["engine"], row["concurrent"]) for row in rows] == [
        ("acti_store[sqlite]", 1),
        ("acti_store[sqlite]", 2),
    ]
    for row in rows:
        assert row["store_ms"]["median"] > 0 and row["store_ms"]["p90"] > 0
        assert 0 < row["store_percent"]["median"] < 100
        assert row["store_calls_per_turn"] >= 1
        assert any(call.endswith("record_execution") for call in row["calls_of_a_turn"])
    assert out.with_suffix(".txt").exists() and out.with_suffix(".png").exists()
