"""What a run of ``benchmarks.run`` is given (``BenchConfig``) and what it carries along
(``Run``): apart from the run itself, so that its results document (``benchmarks.results``)
and the million-agent run read them without importing the run that imports both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from . import client_scaling
from .checks import Checker
from .measure import OpStats
from .report import JSON_FILES, LANGGRAPH_PG
from .stores import Stores
from .workload import WorkloadSize

DEFAULT_SEED: Final = 20250109


@dataclass(frozen=True)
class BenchConfig:
    size: WorkloadSize
    search_agents: int
    seed: int = DEFAULT_SEED
    postgres_url: str | None = None
    postgres_scale: bool = True
    #: The same server through a pooler in transaction mode: acti_store[pg+pooler] too.
    postgres_pooler_url: str | None = None
    #: MariaDB/MySQL: acti_store[mysql] and raw_pymysql (``--mysql-url``), and their search at M.
    mysql_url: str | None = None
    mysql_scale: bool = True
    out: Path = Path("benchmarks/results")
    name: str = "latest"
    #: The JSON store reads every file per search: it runs only the first K searches (all kinds
    #: and sorts are among the first 10) at N, and at M.
    json_search_sample: int = 20
    json_search_sample_scale: int = 5
    scale_io: bool = False
    #: Export/import in this process instead of a subprocess each (smoke tests: no memory figure).
    inline_io: bool = False
    chart: bool = True
    workdir: Path | None = None
    #: Run phases 1-2 (the N-agent workload); off: only the M-agent search (and --scale-io).
    live: bool = True
    #: The peer (LangGraph's PostgresStore) lists every agent per search and filters in Python:
    #: all searches at N (None), only the first K at M.
    peer_search_sample: int | None = None
    peer_search_sample_scale: int = 20
    #: With PostgreSQL: the client-scaling probe (``client_scaling``), C processes x K runs each.
    scaling_probe: bool = True
    scaling_clients: tuple[int, ...] = client_scaling.DEFAULT_CLIENTS
    scaling_calls: int = client_scaling.DEFAULT_CALLS

    def search_sample(self, label: str, *, scale: bool) -> int | None:
        """How many of the searches ``label`` runs (None: all)."""
        if label == JSON_FILES:
            return self.json_search_sample_scale if scale else self.json_search_sample
        if label == LANGGRAPH_PG:
            return self.peer_search_sample_scale if scale else self.peer_search_sample
        return None


@dataclass
class Run:
    config: BenchConfig
    stores: Stores
    checker: Checker
    stats: list[OpStats] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)
