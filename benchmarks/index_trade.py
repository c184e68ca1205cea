"""What each SQLite index on ``agents`` that a write pays for gives the searches back.

    python -m benchmarks.index_trade [--agents 100000] [--reps 2] [--workdir DIR]

Builds one SQLite store of ``--agents`` agents as ``benchmarks.search_walk`` builds it
(``workload.bulk_agents``, not timed), then for each variant (``VARIANTS``: the store as
migrated, and with indexes dropped or replaced) copies it, changes its indexes, and times
``benchmarks.workload``'s 200 searches, the ``count`` of each (what ``search_agents`` adds to a
full page), ``count_by_stratum`` and ``first_by_stratum(10)`` (what ``list_agents`` runs),
``--reps`` times after one untimed pass. Prints the median ms of each per variant.
(``benchmarks.write_cost`` counts what the same indexes cost a write.)
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Final

from acti_store import open_repository
from acti_store.repository import ImportItem

from .run import DEFAULT_SEED
from .workload import bulk_agents, bulk_span, make_searches, search_kind

_DROP_TOOLS: Final = "DROP INDEX ix_agents_tenant_tools_mask"
_DROP_STRATUM: Final = "DROP INDEX ix_agents_tenant_stratum"
_DROP_NAME: Final = "DROP INDEX ix_agents_sort_name"
#: Each variant's statements, run on the store's copy before it is timed.
VARIANTS: Final = {
    "as migrated": (),
    "no tools_mask": (_DROP_TOOLS,),
    "no tools_mask, stratum": (_DROP_TOOLS, _DROP_STRATUM),
    "(tenant, stratum, tools_mask)": (
        _DROP_TOOLS,
        _DROP_STRATUM,
        "CREATE INDEX ix_agents_tenant_filters ON agents (tenant, stratum, tools_mask)",
    ),
    "no sort_name": (_DROP_NAME,),
}


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1e3


def measure(store: Path, agents: int, reps: int) -> dict[str, float]:
    """Median ms of each kind of search and count, and of the two ``list_agents`` reads."""
    repo = open_repository(f"sqlite:///{store}")
    times: dict[str, list[float]] = defaultdict(list)
    try:
        searches = make_searches(random.Random(DEFAULT_SEED + 2), 200, bulk_span(agents))
        for query in searches:  # every shape compiled, the pages read once
            repo.search(query)
            repo.count(query)
        for _ in range(reps):
            for i, query in enumerate(searches):
                kind = search_kind(i)
                times[kind].append(_ms(lambda q=query: repo.search(q)))  # type: ignore[misc]
                times[f"count {kind}"].append(_ms(lambda q=query: repo.count(q)))  # type: ignore[misc]
            times["count_by_stratum"].append(_ms(repo.count_by_stratum))
            times["first_by_stratum"].append(_ms(lambda: repo.first_by_stratum(10)))
    finally:
        repo.close()
    return {kind: statistics.median(ms) for kind, ms in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        built = Path(folder) / "built.db"
        repo = open_repository(f"sqlite:///{built}")
        try:
            for chunk in bulk_agents(args.agents, DEFAULT_SEED + 1, histories=False):
                repo.bulk_put([ImportItem(a.name, agent=a, history=h) for a, h in chunk])
        finally:
            repo.close()
        with sqlite3.connect(built) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        print(f"median ms, {args.agents:,} agents, {args.reps} runs of each")
        for variant, statements in VARIANTS.items():
            store = Path(folder) / "variant.db"
            shutil.copyfile(built, store)
            with sqlite3.connect(store) as conn:
                for statement in statements:
                    conn.execute(statement)
            figures = measure(store, args.agents, args.reps)
            print(f"{variant}: " + " ".join(f"{k}={v:.2f}" for k, v in figures.items()))
            for stale in Path(folder).glob("variant.db*"):
                stale.unlink()


if __name__ == "__main__":
    main()
