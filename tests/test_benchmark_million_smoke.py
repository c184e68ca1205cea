"""``benchmarks.million`` still runs end to end at tiny sizes and its figures add up (no timing
checks).

Runs ``python -m benchmarks.million`` (the real entry point) at 200 and 400 agents in a subprocess,
with few calls, export/import in-process (``--inline-io``) and the stores on a tmpfs when there is
one, and reads its results file. With ``ACTI_STORE_TEST_POSTGRES_URL`` set, the PostgreSQL lane
too (a database created for the run and dropped at the end).
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
SIZES = (200, 400)
CALLS = 50
SEARCHES_PER_KIND = 2
KINDS = {
    "word",
    "two_words",
    "stratum",
    "tools",
    "tags",
    "created",
    "min_executions",
    "literal",
    "combo",
    "everything",
}


def _run_tiny(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """``benchmarks.million`` at 200 and 400 agents; its results document and text."""
    shm = Path("/dev/shm")
    workdir = shm if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path
    command = [
        sys.executable,
        "-m",
        "benchmarks.million",
        "--sizes",
        *map(str, SIZES),
        f"--gets={CALLS}",
        f"--records={CALLS}",
        f"--searches-per-kind={SEARCHES_PER_KIND}",
        "--inline-io",
        "--no-chart",
        f"--out={tmp_path}",
        "--name=million_smoke",
        f"--workdir={workdir}",
        *extra,
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    results: dict[str, Any] = json.loads((tmp_path / "million_smoke.json").read_text("utf-8"))
    return results, (tmp_path / "million_smoke.txt").read_text("utf-8")


def _check(results: dict[str, Any], text: str, engines: set[str]) -> None:
    assert results["problems"] == []
    rows = results["results"]
    assert {(r["engine"], r["agents"]) for r in rows} == {(e, n) for e in engines for n in SIZES}
    for row in rows:
        agents = row["agents"]
        assert row["get"]["calls"] == row["record_execution"]["calls"] == CALLS
        assert set(row["search"]) == KINDS
        for figures in (row["get"], row["record_execution"], *row["search"].values()):
            assert figures["calls"] in (CALLS, SEARCHES_PER_KIND)
            assert 0 < figures["median_ms"] <= figures["p90_ms"]
        assert row["searches_with_results"] > 0
        # The listing counts every agent; its text and artifact stay within the tools' bounds.
        assert row["list"]["total"] == agents
        assert 0 < row["list"]["text_chars"] < 32_000
        assert 0 < row["list"]["artifact_bytes"] < 64 * 1024
        # The export wrote a file per agent and one per agent that ran; the import took them all.
        checks = row["checks"]
        assert checks["agent_files"] == checks["imported_agents"] == agents
        assert 0 < checks["history_files"] == checks["agents_that_ran"] < agents
        assert checks["read_back"] == 200
        for op in ("export", "import"):
            assert row[op]["seconds"] > 0
            assert row[op]["agents_per_s"] == pytest.approx(agents / row[op]["seconds"])
            assert row[op]["peak_rss_mb"] > 0
        assert row["database_bytes"]["total"] > 0
        assert row["phases_s"]["build"] > 0
    # In-process export/import measure no memory figure: the targets say so.
    assert {t["met"] for t in results["targets"]} == {None}
    assert len(results["targets"]) == 2 * len(engines)
    assert "record_execution median / p90 ms" in text
    assert "checks: all passed" in text


@pytest.mark.timeout(120)
def test_million_benchmark_runs_and_its_figures_add_up(tmp_path: Path) -> None:
    results, text = _run_tiny(tmp_path)
    _check(results, text, {"sqlite"})


@pytest.mark.postgresql
@pytest.mark.skipif(not POSTGRES_URL, reason=f"{POSTGRES_ENV} is not set: PostgreSQL skipped")
@pytest.mark.timeout(300)
def test_million_benchmark_runs_on_postgresql(tmp_path: Path) -> None:
    assert POSTGRES_URL is not None
    results, text = _run_tiny(tmp_path, f"--postgres-url={POSTGRES_URL}")
    _check(results, text, {"sqlite", "postgresql"})
    assert results["meta"]["postgres_versions"]["PostgreSQL"]
