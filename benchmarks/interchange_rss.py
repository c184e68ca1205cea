"""Export and import throughput and peak RSS of the JSON interchange, on SQLite.

For each size: seed a store with N agents, each with a full 50-record history; then, each in a fresh
process, export it to a folder, export again (every file unchanged), and import the folder into an
empty store. Prints agents/s and the peak RSS of each process (``ru_maxrss``), next to the RSS of
the same process before the work (interpreter and imports).

    python benchmarks/interchange_rss.py --agents 10000 100000 [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from acti_store import Agent, AgentMetadata, ExecutionHistory, ExecutionRecord, open_repository
from acti_store.interchange import export_json, import_json
from acti_store.models import HISTORY_MAX_RECORDS
from acti_store.repository import ImportItem

PROMPT = "You are a benchmark agent. " * 4
START = datetime(2025, 1, 9, tzinfo=UTC)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _items(count: int, records: int) -> Iterator[ImportItem]:
    for i in range(count):
        name = f"agent_{i:07d}"
        meta = AgentMetadata.model_construct(
            created_at=START,
            updated_at=START,
            last_executed_at=START + timedelta(seconds=records),
            version=1,
            builder="acti-agent-builder",
            execution_count=records + 7,
            success_count=records,
            error_count=7,
        )
        agent = Agent.model_construct(
            name=name,
            description=f"Benchmark agent number {i}",
            system_prompt=PROMPT,
            tools=["communication", "crm"],
            model="anthropic:claude-opus-4-5-20251101",
            stratum="RAI",
            tags=["bench", "sales"],
            metadata=meta,
        )
        history = ExecutionHistory.model_construct(
            agent_name=name,
            executions=[
                ExecutionRecord.model_construct(
                    execution_id=f"{i:07d}-{r:04d}-0000-0000-000000000000",
                    timestamp=START + timedelta(seconds=records - r),
                    task=f"Qualify lead number {r} for agent {i}: budget, authority, need",
                    result_summary="Lead qualified as HIGH priority - meets BANT criteria",
                    success=r % 9 != 0,
                    duration_seconds=1.25 + r / 100,
                    tool_calls_count=r % 4,
                    error_type=None if r % 9 else "TimeoutError",
                )
                for r in range(records)
            ],
            total_executions=records + 7,
        )
        yield ImportItem(name, agent=agent, history=history)


def child(phase: str, url: str, directory: str, count: int) -> None:
    """One measured phase, in this (fresh) process; prints a JSON line."""
    repo = open_repository(url)
    baseline = _rss_mb()
    start = time.perf_counter()
    if phase == "seed":
        repo.bulk_put_stream(lambda: _items(count, HISTORY_MAX_RECORDS))
    elif phase.startswith("export"):
        report = export_json(repo, directory)
        assert report.agents == count, report
    elif phase == "import":
        result = import_json(repo, directory)
        assert len(result.imported) == count and result.ok, result.invalid
    seconds = time.perf_counter() - start
    repo.close()
    print(json.dumps({"seconds": seconds, "baseline_mb": baseline, "peak_mb": _rss_mb()}))


def measure(phase: str, url: str, directory: Path, count: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", phase, url, str(directory), str(count)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the stores and folders")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        phase, url, directory, count = args.child
        child(phase, url, directory, int(count))
        return

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="acti-interchange-"))
    print(
        f"{'agents':>8} {'phase':<15} {'seconds':>8} {'agents/s':>9} {'base MB':>8} {'peak MB':>8}"
    )
    for count in args.agents:
        base = workdir / str(count)
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        source, target = f"sqlite:///{base / 'source.db'}", f"sqlite:///{base / 'target.db'}"
        folder = base / "agents"
        for phase, url in (
            ("seed", source),
            ("export", source),
            ("export-again", source),
            ("import", target),
        ):
            figures = measure(phase, url, folder, count)
            rate = count / figures["seconds"]
            print(
                f"{count:>8} {phase:<15} {figures['seconds']:>8.1f} {rate:>9,.0f} "
                f"{figures['baseline_mb']:>8.0f} {figures['peak_mb']:>8.0f}",
                flush=True,
            )
        size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
        print(f"{count:>8} folder: {len(list(folder.iterdir()))} files, {size:,.0f} MiB")
        if not args.keep:
            shutil.rmtree(base)
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
