"""Every operation on a store opened for a tenant against the same operation without one.

The issue's target: each operation with a tenant within 10 % of the same operation without, on
every engine. Two stores per engine, built alike: ``none`` is opened with no tenant (the default
tenant, as every store before tenants), ``acme`` with ``tenant="acme"``; each also holds as many
agents again (with their histories) of a third tenant, ``globex``, loaded first, so that every
statement's tenant condition has rows to skip. Then the seeded workload of ``benchmarks.run``
(``workload.py``) runs on both, call by call in turn (the first store alternates, so a burst of
load elsewhere hits both alike): create N, get, update, record_execution, history read, list
(``list_agents``), search (each of the ten kinds; every search once untimed, since a query
shape's first use compiles it for both stores), export of the N agents and import of them into a
fresh pair of stores (each with its ``globex`` agents); search, export and import ``--repeat``
times.

Both stores must give the same answers (the agents' documents, histories, search names): a
difference is printed and the exit status is 1.

    python -m benchmarks.tenants [--agents 1000] [--repeat 4] [--postgres-url URL] \
        [--mysql-url URL] [--no-sqlite] [--out benchmarks/results/tenants.txt]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from acti_store import open_repository
from acti_store.documents import agent_document, history_document
from acti_store.interchange import export_json, import_json
from acti_store.repository import ImportItem, SqlAgentRepository
from acti_store.tenancy import DEFAULT_TENANT

from .code_state import code_fingerprint
from .measure import git_state
from .report import ACTI_MYSQL, ACTI_POSTGRES, ACTI_SQLITE
from .stores import Stores
from .workload import (
    BenchClock,
    WorkloadSize,
    bulk_agents,
    make_workload,
    search_kind,
)

#: The two ways a store is opened: no tenant (the default one) and a named tenant.
VARIANTS: Final = ("none", "acme")
OTHER_TENANT: Final = "globex"
TARGET: Final = 1.10
perf = time.perf_counter_ns


@dataclass
class Pair:
    """The two stores of one comparison, with their clocks."""

    repos: dict[str, SqlAgentRepository]
    clocks: dict[str, BenchClock]

    def close(self) -> None:
        for repo in self.repos.values():
            repo.close()


@dataclass
class Timings:
    """Latencies (ns) per operation per variant, and answers that differ between the two."""

    latencies: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)

    def add(self, op: str, variant: str, ns: int) -> None:
        self.latencies.setdefault(op, {v: [] for v in VARIANTS})[variant].append(ns)


def open_pair(stores: Stores, label: str, tag: str, agents: int, seed: int) -> Pair:
    """Two stores at ``label``'s engine: ``globex``'s agents loaded, then opened as each variant."""
    repos, clocks = {}, {}
    for variant in VARIANTS:
        url = stores.spec(label, f"{tag}_{variant}").location
        with open_repository(url, tenant=OTHER_TENANT) as other:
            for chunk in bulk_agents(agents, seed + 1):
                other.bulk_put([ImportItem(a.name, agent=a, history=h) for a, h in chunk])
        clocks[variant] = BenchClock()
        tenant = None if variant == "none" else variant
        repos[variant] = open_repository(url, tenant=tenant, clock=clocks[variant])
        if repos[variant].mirror is not None:
            raise SystemExit("unset ACTI_STORE_EXPORT_DIR: the benchmark measures the store alone")
    return Pair(repos, clocks)


def paired(
    timings: Timings,
    op: str,
    items: Sequence[Any],
    call: Callable[[SqlAgentRepository, Any], Any],
    pair: Pair,
    *,
    at: Callable[[Any], Any] | None = None,
    answer: Callable[[Any], Any] | None = None,
    offset: int = 0,
) -> None:
    """``call(repo, item)`` for each item on both stores in turn, the first alternating (with
    ``index + offset``: a statement's first use compiles it, for both stores at once)."""
    gc.collect()
    for index, item in enumerate(items):
        order = VARIANTS if (index + offset) % 2 == 0 else VARIANTS[::-1]
        answers = {}
        for variant in order:
            repo = pair.repos[variant]
            if at is not None:
                pair.clocks[variant].set(at(item))
            start = perf()
            result = call(repo, item)
            timings.add(op, variant, perf() - start)
            if answer is not None:
                answers[variant] = answer(result)
        differ = answer is not None and answers["none"] != answers["acme"]
        if differ and len(timings.mismatches) < 20:
            timings.mismatches.append(f"{op} #{index}: the two stores answered differently")


def variant_of(repo: SqlAgentRepository) -> str:
    return "none" if repo.tenant == DEFAULT_TENANT else repo.tenant


def search_names(result: Sequence[Any]) -> list[str]:
    return [agent.name for agent in result]


def run_engine(stores: Stores, label: str, size: WorkloadSize, seed: int, repeat: int) -> Timings:
    timings = Timings()
    workload = make_workload(size, seed)
    pair = open_pair(stores, label, "live", size.agents, seed)
    try:
        paired(
            timings,
            "create",
            workload.creates,
            lambda r, c: r.create(c.config),
            pair,
            at=lambda c: c.at,
            answer=agent_document,
        )
        paired(timings, "get", workload.gets, lambda r, n: r.get(n), pair, answer=agent_document)
        paired(
            timings,
            "update",
            workload.updates,
            lambda r, u: r.update(u.name, u.changes),
            pair,
            at=lambda u: u.at,
            answer=agent_document,
        )
        paired(
            timings,
            "record_execution",
            workload.executions,
            lambda r, e: r.record_execution(e.name, e.record),
            pair,
            at=lambda e: e.record.timestamp,
        )
        paired(
            timings,
            "history read",
            workload.history_reads,
            lambda r, n: r.get_history(n, limit=workload.history_limit),
            pair,
            answer=history_document,
        )
        paired(
            timings,
            "list_agents",
            range(20),
            lambda r, _: r.list_agents(),
            pair,
            answer=search_names,
        )
        # Every search once untimed (each query shape is compiled on its first use, for both
        # stores), then ``repeat`` (even) timed rounds: the store that runs a query second runs
        # it faster, on every engine, so each store goes first in half the rounds. (Running a
        # query twice in a row on one store favours that store as much.)
        for round_ in range(repeat + 1):
            for index, query in enumerate(workload.searches):
                paired(
                    timings if round_ else Timings(),
                    f"search: {search_kind(index)}",
                    [query],
                    lambda r, q: r.search(q),
                    pair,
                    answer=search_names,
                    offset=index + round_,
                )
        workdir = Path(tempfile.mkdtemp(prefix="tenants-io-", dir=stores.workdir))
        for round_ in range(repeat):
            folders = {v: workdir / f"{round_}-{v}" for v in VARIANTS}
            for folder in folders.values():
                folder.mkdir()
            paired(
                timings,
                f"export of {size.agents}",
                [folders],
                lambda r, to: export_json(r, to[variant_of(r)]),
                pair,
                offset=round_,
            )
            target = open_pair(stores, label, f"imp{round_}", size.agents, seed)
            try:
                paired(
                    timings,
                    f"import of {size.agents}",
                    [folders],
                    lambda r, of: import_json(r, of[variant_of(r)]),
                    target,
                    offset=round_,
                )
                for variant, repo in target.repos.items():
                    if repo.count({}) != size.agents:
                        timings.mismatches.append(f"import into {variant}: not every agent")
            finally:
                target.close()
        shutil.rmtree(workdir, ignore_errors=True)
    finally:
        pair.close()
    return timings


def table(label: str, timings: Timings) -> list[str]:
    """Per operation: the medians, their ratio, and the median of the per-call ratios (each
    call of ``acme`` over the same call of ``none``: the same agent, query or folder), which
    the flag reads: a search's medians mix ten different queries."""
    width = max(len(op) for op in timings.latencies) + 2
    lines = [
        f"{label}: median ms per call, the store opened with no tenant vs tenant='acme' "
        f"(each with as many '{OTHER_TENANT}' agents besides); paired = median of per-call "
        "ratios",
        f"{'operation':<{width}}{'calls':>7}{'no tenant':>12}{'acme':>12}{'ratio':>8}{'paired':>9}",
        "-" * (width + 48),
    ]
    for op, by_variant in timings.latencies.items():
        none, acme = by_variant["none"], by_variant["acme"]
        m_none, m_acme = statistics.median(none) / 1e6, statistics.median(acme) / 1e6
        paired_ratio = statistics.median(a / n for n, a in zip(none, acme, strict=True))
        flag = "" if paired_ratio <= TARGET else "  over 10 %"
        lines.append(
            f"{op:<{width}}{len(none):>7}{m_none:>12.3f}{m_acme:>12.3f}"
            f"{m_acme / m_none:>7.2f}x{paired_ratio:>8.2f}x{flag}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=1_000, help="N (default 1,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat",
        type=int,
        default=4,
        help="rounds of search, export and import (4; even: each store goes first as often)",
    )
    parser.add_argument("--postgres-url", help="also on PostgreSQL (a database for the run)")
    parser.add_argument("--mysql-url", help="also on MariaDB (databases for the run)")
    parser.add_argument("--no-sqlite", action="store_true", help="skip SQLite")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, help="also append the tables to this file")
    args = parser.parse_args(argv)
    if args.repeat < 2 or args.repeat % 2:
        parser.error("--repeat must be even: each store goes first in half the rounds")
    if os.environ.get("ACTI_STORE_TENANT"):
        parser.error("unset ACTI_STORE_TENANT: 'no tenant' must mean the default tenant")
    n = args.agents
    size = WorkloadSize(
        agents=n,
        gets=n,
        updates=max(1, n // 4),
        searches=200,
        executions=2 * n,
        history_reads=n,
    )
    labels = [] if args.no_sqlite else [ACTI_SQLITE]
    labels += [ACTI_POSTGRES] if args.postgres_url else []
    labels += [ACTI_MYSQL] if args.mysql_url else []
    workdir = Path(tempfile.mkdtemp(prefix="acti-tenants-", dir=args.workdir))
    stores = Stores(workdir, args.postgres_url, args.mysql_url)
    state = git_state()
    started = time.monotonic()
    lines = [
        f"benchmarks.tenants, commit {state['commit']}"
        f"{' (acti_store modified)' if state['acti_store_dirty'] else ''}, code "
        f"{code_fingerprint()}, N={n}, load average at start "
        f"{os.getloadavg()[0]:.1f}",
        "",
    ]
    print("\n".join(lines), flush=True)
    failed = False
    try:
        for label in labels:
            timings = run_engine(stores, label, size, args.seed, args.repeat)
            block = [*table(label, timings), ""]
            if timings.mismatches:
                failed = True
                block[-1:-1] = ["MISMATCH: " + m for m in timings.mismatches]
            print("\n".join(block), flush=True)
            lines += block
    finally:
        stores.close()
        shutil.rmtree(workdir, ignore_errors=True)
    end = (
        f"runtime {time.monotonic() - started:.0f} s, load average at the end "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(end)
    lines.append(end)
    if args.out:
        with args.out.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
