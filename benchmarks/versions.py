"""The speed targets of configuration versions (issue 15), on SQLite and, with ``--postgres-url``,
PostgreSQL:

* ``update`` with its snapshot costs at most 1.3x the update without it ("before": the same
  repository with the snapshot step switched off, the pre-versions update path), measured in the
  same run in alternating blocks so that both see the same machine load;
* ``get_version`` by number and by label reaches at least 50 % of raw ``sqlite3``'s ``get``
  (``benchmarks.backends.raw_sqlite``, the reference of ``benchmarks.run``);
* ``versions(name, limit=10)`` stays flat from 10 to 10,000 versions of one agent;
* ``diff`` of two 4 KB prompts takes under 5 ms;
* the upgrade to revision 0006 of a store of 10,000 agents (its backfill) takes seconds.

``python -m benchmarks.versions [--postgres-url URL] [--out benchmarks/results/versions.txt]``;
exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest import mock

import sqlalchemy as sa
from alembic import command

from acti_store import AgentConfig, SqlAgentRepository, open_repository
from acti_store.engine import alembic_config, make_engine
from acti_store.repository import sql as sql_module
from acti_store.schema import agents

from .backends import StoreSpec
from .backends.raw_sqlite import RawSqliteBackend

AGENTS = 1_000
UPDATE_BLOCK = 100
UPDATE_ROUNDS = 20
READS = 2_000
PROMPT_LINE = "Step {i}: check the lead's {what} and note it in the CRM before the next step.\n"


def _config(name: str, prompt: str | None = None) -> AgentConfig:
    return AgentConfig(
        name=name,
        description=f"Benchmark agent {name} for version timings",
        system_prompt=prompt or f"You are benchmark agent {name}. " * 4,
        tools=["crm"],
        tags=["bench"],
    )


def _prompt(what: str, lines: int = 52) -> str:
    """About 4 KB of prompt text, one line per step."""
    return "".join(
        PROMPT_LINE.format(i=i, what=what if i % 7 == 0 else "budget") for i in range(lines)
    )


def _median_ms(call: Callable[[], object], count: int) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


@contextmanager
def _store(postgres_url: str | None, workdir: Path) -> Iterator[str]:
    """The URL of an empty store: a SQLite file, or a fresh PostgreSQL schema (dropped after)."""
    if postgres_url is None:
        yield f"sqlite:///{workdir / f'{uuid.uuid4().hex}.db'}"
        return
    schema = f"bench_versions_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = sa.engine.make_url(postgres_url)
        yield url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
            hide_password=False
        )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def bench_updates(repo: SqlAgentRepository) -> tuple[float, float]:
    """Updates per second with the snapshot and without it (the update path before versions)."""
    names = [f"agent_{i:05d}" for i in range(AGENTS)]
    with_snapshot = without = 0.0
    counter = 0

    def block() -> float:
        nonlocal counter
        start = time.perf_counter()
        for _ in range(UPDATE_BLOCK):
            counter += 1
            repo.update(names[counter % AGENTS], {"description": f"Benchmark update {counter}"})
        return time.perf_counter() - start

    def before() -> float:
        with mock.patch.object(sql_module, "record_snapshot", lambda *args: None):
            return block()

    for round_ in range(UPDATE_ROUNDS):  # ABBA order: neither variant always goes first
        if round_ % 2:
            without += before()
            with_snapshot += block()
        else:
            with_snapshot += block()
            without += before()
    calls = UPDATE_BLOCK * UPDATE_ROUNDS
    return calls / with_snapshot, calls / without


def bench_reads(repo: SqlAgentRepository, workdir: Path) -> dict[str, float]:
    """Reads per second: raw sqlite3's get (a SQLite file of the same agents, the reference),
    acti_store's get, get_version by number and by label."""
    raw = RawSqliteBackend(
        StoreSpec("raw_sqlite", "raw", str(workdir / f"raw-{uuid.uuid4().hex}.db")), repo.now
    )
    names = [f"agent_{i:05d}" for i in range(AGENTS)]
    for name in names:
        raw.create(_config(name))
    for name in names[:100]:
        repo.set_label(name, "production", 1)

    def rate(call: Callable[[str], object], labelled: bool = False) -> float:
        pool = names[:100] if labelled else names
        start = time.perf_counter()
        for i in range(READS):
            call(pool[i * 7 % len(pool)])
        return READS / (time.perf_counter() - start)

    figures = {
        "raw sqlite3 get": rate(raw.get),
        "acti_store get": rate(repo.get),
        "get_version(name, 1)": rate(lambda n: repo.get_version(n, 1)),
        "get_version(name, label=)": rate(lambda n: repo.get_version(n, label="production"), True),
    }
    raw.close()
    return figures


def bench_versions_list(repo: SqlAgentRepository) -> dict[int, float]:
    """Median ms of ``versions(name, limit=10)`` at 10, 100, 1,000 and 10,000 versions."""
    repo.create(_config("many_versions"))
    found: dict[int, float] = {}
    version = 1
    for size in (10, 100, 1_000, 10_000):
        while version < size:
            version += 1
            repo.update("many_versions", {"description": f"Version {version} of this agent"})
        found[size] = _median_ms(lambda: repo.versions("many_versions", limit=10), 500)
    return found


def bench_diff(repo: SqlAgentRepository) -> float:
    """Median ms of ``diff`` between two 4 KB prompts (every seventh line differs)."""
    repo.create(_config("long_prompt", _prompt("authority")))
    repo.update("long_prompt", {"system_prompt": _prompt("timeline")})
    return _median_ms(lambda: repo.diff("long_prompt", 1, 2), 200)


def bench_upgrade(url: str, agents_count: int = 10_000) -> float:
    """Seconds the upgrade to head takes on a store made at 0005 with ``agents_count`` agents."""
    engine = make_engine(url)
    cfg = alembic_config(engine.url)
    command.upgrade(cfg, "0005_counters_64bit")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rows = [
        {
            "name": f"old_{i:05d}",
            "description": "An agent made before versions existed",
            "system_prompt": f"You are agent {i}, made before versions existed. " * 3,
            "tools": ["crm"],
            "tools_mask": 16,
            "model": "anthropic:claude-opus-4-5-20251101",
            "stratum": "RAI",
            "tags": ["legacy"],
            "created_at": start,
            "updated_at": start + timedelta(seconds=i),
            "last_executed_at": None,
            "version": 1 + i % 9,
            "builder": "acti-agent-builder",
            "execution_count": 0,
            "success_count": 0,
            "error_count": 0,
            "total_executions": 0,
        }
        for i in range(agents_count)
    ]
    with engine.begin() as conn:
        conn.execute(agents.insert(), rows)
    began = time.perf_counter()
    command.upgrade(cfg, "head")
    elapsed = time.perf_counter() - began
    with engine.connect() as conn:
        count = conn.execute(sa.text("SELECT count(*) FROM agent_versions")).scalar_one()
    engine.dispose()
    if count != agents_count:
        raise AssertionError(f"the backfill wrote {count} snapshots for {agents_count} agents")
    return elapsed


def run_engine(label: str, postgres_url: str | None, workdir: Path) -> tuple[list[str], bool]:
    lines = [f"== {label} =="]
    ok = True
    with _store(postgres_url, workdir) as url:
        repo = open_repository(url)
        try:
            for i in range(AGENTS):
                repo.create(_config(f"agent_{i:05d}"))
            after, before = bench_updates(repo)
            ratio = before / after
            ok &= ratio <= 1.3
            lines.append(
                f"update: {after:,.0f}/s with its snapshot, {before:,.0f}/s without (before): "
                f"{ratio:.2f}x the time (target <= 1.30x)"
            )
            reads = bench_reads(repo, workdir)
            reference = reads["raw sqlite3 get"]
            for op, rate in reads.items():
                lines.append(f"{op}: {rate:,.0f}/s ({rate / reference:.2f}x raw get)")
            worst = min(reads["get_version(name, 1)"], reads["get_version(name, label=)"])
            if postgres_url is None:  # the target is SQLite's: a server round trip is not local
                ok &= worst / reference >= 0.5
            listed = bench_versions_list(repo)
            flat = listed[10_000] / listed[10]
            ok &= flat <= 1.5
            lines.append(
                "versions(limit=10), median: "
                + ", ".join(f"{size:,} versions {ms:.3f} ms" for size, ms in listed.items())
                + f" (10,000 / 10: {flat:.2f}x)"
            )
            diff_ms = bench_diff(repo)
            ok &= diff_ms < 5
            lines.append(f"diff of two 4 KB prompts, median: {diff_ms:.2f} ms (target < 5 ms)")
        finally:
            repo.close()
    with _store(postgres_url, workdir) as url:
        seconds = bench_upgrade(url)
        lines.append(f"upgrade 0005 -> 0006 of 10,000 agents (backfill included): {seconds:.2f} s")
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres-url", default=None, help="also measure on PostgreSQL")
    parser.add_argument("--out", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    report: list[str] = []
    ok = True
    with tempfile.TemporaryDirectory() as workdir:
        engines = [("SQLite", None)]
        if args.postgres_url:
            engines.append(("PostgreSQL", args.postgres_url))
        for label, url in engines:
            lines, passed = run_engine(label, url, Path(workdir))
            report += lines
            ok &= passed
    report.append("every target met" if ok else "TARGET MISSED")
    text = "\n".join(report)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
