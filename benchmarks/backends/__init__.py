"""The stores under test, behind one small interface the benchmark drives.

Each backend takes the same inputs (the domain types of ``acti_store.models``) and returns results
in its own native form: ``acti_store`` returns its models, the hand-written stores return plain
dicts in the contract's document shape. ``agent_document``/``history_document`` turn a result
into the contract's document so that the checks can compare backends (outside the timed region).
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from acti_store.models import AgentConfig, AgentUpdate, ExecutionRecord, SearchQuery

from ..workload import BulkItem

Clock = Callable[[], datetime]
Document = dict[str, Any]

#: Backend kind -> module implementing it (each module defines ``BACKEND``).
KINDS: Final = {
    "acti_store": "benchmarks.backends.acti",
    "raw_sqlite": "benchmarks.backends.raw_sqlite",
    "json_files": "benchmarks.backends.json_files",
    "raw_psycopg": "benchmarks.backends.raw_psycopg",
    "langgraph_pg": "benchmarks.backends.langgraph_pg",
    "raw_pymysql": "benchmarks.backends.raw_pymysql",
}


@dataclass(frozen=True)
class StoreSpec:
    """Where one store lives: enough to open it again, in this process or in a subprocess."""

    kind: str  #: a key of ``KINDS``
    label: str  #: as printed, e.g. ``acti_store[sqlite]``
    location: str  #: a database URL, a SQLite file or a directory, depending on ``kind``
    pooler: str | None = None  #: acti_store: ``open_repository``'s ``pooler`` (None: its default)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        return cls(**json.loads(text))


class Backend(ABC):
    """One store under test. Every method is one call of the tool layer's workload."""

    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        self.spec = spec
        self.clock = clock

    @abstractmethod
    def create(self, config: AgentConfig) -> object: ...

    @abstractmethod
    def get(self, name: str) -> object: ...

    @abstractmethod
    def update(self, name: str, changes: AgentUpdate) -> object: ...

    @abstractmethod
    def search(self, query: SearchQuery) -> Sequence[object]: ...

    @abstractmethod
    def record_execution(self, name: str, record: ExecutionRecord) -> None: ...

    @abstractmethod
    def get_history(self, name: str, limit: int) -> object: ...

    @abstractmethod
    def export_all(self, directory: Path) -> str:
        """Write every agent (and history) as contract-format files; returns the path used."""

    @abstractmethod
    def import_all(self, directory: Path) -> str:
        """Import every file of ``directory`` into this (empty) store; returns the path used."""

    @abstractmethod
    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        """Put stored agents with their metadata and histories, by the fastest path (untimed)."""

    @abstractmethod
    def agent_document(self, result: object) -> Document: ...

    @abstractmethod
    def history_document(self, result: object) -> Document: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and files."""


def open_backend(spec: StoreSpec, clock: Clock) -> Backend:
    """Open the store ``spec`` names (creating an empty one if needed)."""
    module = importlib.import_module(KINDS[spec.kind])
    backend: Backend = module.BACKEND(spec, clock)
    return backend
