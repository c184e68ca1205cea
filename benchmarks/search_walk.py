"""SQLite's text search with and without its walk first, the same searches in turn.

    python -m benchmarks.search_walk [--agents 100000] [--reps 5] [--workdir DIR]

Builds a SQLite store of ``--agents`` agents as ``benchmarks.run`` builds its scale store
(``workload.bulk_agents``, not timed), then runs the workload's 200 searches (20 of each kind)
``--reps`` times, each one twice in a row: probing the trigram index first
(``FtsTrigramIndex.walks_first`` off) and as shipped (a search of one word and at most two other
filters walks its sort's order first, for up to ``WALK_SECONDS``). Every statement shape is
compiled before the timing starts. Prints the median ms per kind of search, both ways, and the
median ms of ``count`` (what ``search_agents`` adds to a full page) for the one-word searches.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from acti_store import SearchQuery, open_repository
from acti_store.engines.sqlite.statements import FtsTrigramIndex
from acti_store.repository import ImportItem, SqlAgentRepository

from .run_config import DEFAULT_SEED
from .workload import bulk_agents, bulk_span, make_searches, search_kind

WAYS = {"probe first": False, "as shipped": True}


def timed(repo: SqlAgentRepository, query: SearchQuery, walks: bool) -> float:
    FtsTrigramIndex.walks_first = walks
    start = time.perf_counter()
    repo.search(query)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        repo = open_repository(f"sqlite:///{Path(folder) / 'store.db'}")
        try:
            for chunk in bulk_agents(args.agents, DEFAULT_SEED + 1, histories=False):
                repo.bulk_put([ImportItem(a.name, agent=a, history=h) for a, h in chunk])
            span = bulk_span(args.agents)
            searches = make_searches(random.Random(DEFAULT_SEED + 2), 200, span)
            for query in searches:  # every shape compiled, both ways
                for walks in WAYS.values():
                    timed(repo, query, walks)
            times: dict[str, dict[str, list[float]]] = {way: defaultdict(list) for way in WAYS}
            for _ in range(args.reps):
                for i, query in enumerate(searches):
                    for way, walks in WAYS.items():
                        times[way][search_kind(i)].append(timed(repo, query, walks))
            FtsTrigramIndex.walks_first = True
            counts = []
            for i, query in enumerate(searches):
                if search_kind(i) == "word":
                    start = time.perf_counter()
                    repo.count(query)
                    counts.append((time.perf_counter() - start) * 1e3)
        finally:
            repo.close()
    print(f"median ms per kind of search, {args.agents:,} agents, {args.reps} runs of each")
    for way, by_kind in times.items():
        cells = " ".join(f"{kind}={statistics.median(ms):.2f}" for kind, ms in by_kind.items())
        print(f"{way:<12} {cells}")
    print(f"count of a one-word search: median {statistics.median(counts):.1f} ms")


if __name__ == "__main__":
    main()
