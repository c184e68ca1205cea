"""acti_store as it is: ``open_repository(url)`` with its default settings and an injected clock
(and ``pooler="transaction"`` when the store is reached through a pooler: ``StoreSpec.pooler``).

Export and import use ``acti_store.interchange.export_json``/``import_json`` when that module
provides them; otherwise a minimal fallback on the repository interface (``iter_export`` +
``acti_store.documents`` to export, ``bulk_put`` of ``ImportItem``s to import). The switch is
automatic (``interchange_functions``), and every result records which path ran.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from acti_store import open_repository
from acti_store.documents import agent_document, dumps, history_document
from acti_store.models import (
    Agent,
    AgentConfig,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    SearchQuery,
)
from acti_store.repository import AgentRepository, ImportItem

from ..workload import BulkItem
from . import Backend, Clock, Document, StoreSpec

IMPORT_CHUNK: Final = 500
#: Set to any value to ignore ``acti_store.interchange`` and use the fallback paths.
FORCE_FALLBACK_ENV: Final = "ACTI_BENCH_INTERCHANGE_FALLBACK"

Interchange = Callable[..., Any]


def interchange_functions() -> tuple[Interchange | None, Interchange | None, str]:
    """``(export_json, import_json, why)`` from ``acti_store.interchange``; ``None`` if missing."""
    if os.environ.get(FORCE_FALLBACK_ENV):
        return None, None, f"fallback forced by ${FORCE_FALLBACK_ENV}"
    try:
        module = importlib.import_module("acti_store.interchange")
    except ModuleNotFoundError as exc:
        if exc.name != "acti_store.interchange":
            raise
        return None, None, "acti_store.interchange does not exist yet"
    export_json = getattr(module, "export_json", None)
    import_json = getattr(module, "import_json", None)
    return export_json, import_json, "acti_store.interchange"


def fallback_export(repo: AgentRepository, directory: Path) -> None:
    for agent, history in repo.iter_export():
        with open(directory / f"{agent.name}.json", "w", encoding="utf-8") as out:
            out.write(dumps(agent_document(agent)))
        if history is not None:
            with open(directory / f"{agent.name}_history.json", "w", encoding="utf-8") as out:
                out.write(dumps(history_document(history)))


def _agent_from(document: dict[str, Any]) -> Agent:
    fields = {k: v for k, v in document.items() if k != "_metadata"}
    return Agent.model_validate(fields | {"metadata": document["_metadata"]})


def fallback_import(repo: AgentRepository, directory: Path) -> None:
    files = set(os.listdir(directory))
    batch: list[ImportItem] = []
    for file in sorted(files):
        if not file.endswith(".json") or file.endswith("_history.json"):
            continue
        agent = _agent_from(json.loads((directory / file).read_bytes()))
        history = None
        if (history_file := f"{file[:-5]}_history.json") in files:
            history = ExecutionHistory.model_validate_json((directory / history_file).read_bytes())
        batch.append(ImportItem(agent.name, agent=agent, history=history))
        if len(batch) == IMPORT_CHUNK:
            repo.bulk_put(batch, on_conflict="fail")
            batch = []
    if batch:
        repo.bulk_put(batch, on_conflict="fail")


class ActiStoreBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        self.repo = open_repository(spec.location, clock=clock, pooler=spec.pooler)
        if self.repo.mirror is not None:
            raise RuntimeError(
                "acti_store opened with a JSON mirror (ACTI_STORE_EXPORT_DIR?): the benchmark "
                "measures the store alone; unset it"
            )

    def create(self, config: AgentConfig) -> Agent:
        return self.repo.create(config)

    def get(self, name: str) -> Agent:
        return self.repo.get(name)

    def update(self, name: str, changes: AgentUpdate) -> Agent:
        return self.repo.update(name, changes)

    def search(self, query: SearchQuery) -> list[Agent]:
        return self.repo.search(query)

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        self.repo.record_execution(name, record)

    def get_history(self, name: str, limit: int) -> ExecutionHistory:
        return self.repo.get_history(name, limit=limit)

    def export_all(self, directory: Path) -> str:
        export_json, _, why = interchange_functions()
        if export_json is None:
            fallback_export(self.repo, directory)
            return f"fallback: iter_export + documents ({why})"
        export_json(self.repo, directory)
        return "acti_store.interchange.export_json"

    def import_all(self, directory: Path) -> str:
        _, import_json, why = interchange_functions()
        if import_json is None:
            fallback_import(self.repo, directory)
            return f"fallback: bulk_put of {IMPORT_CHUNK} ImportItems at a time ({why})"
        # As ``acti-store import`` does: counts, not every name (where this version can).
        quiet = {"names": False} if "names" in inspect.signature(import_json).parameters else {}
        report = import_json(self.repo, directory, **quiet)
        invalid = getattr(report, "invalid", None)
        if invalid:
            raise RuntimeError(f"import_json rejected files: {dict(list(invalid.items())[:3])}")
        return "acti_store.interchange.import_json"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        self.repo.bulk_put([ImportItem(a.name, agent=a, history=h) for a, h in items])

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, Agent)
        return agent_document(result)

    def history_document(self, result: object) -> Document:
        assert isinstance(result, ExecutionHistory)
        return history_document(result)

    def close(self) -> None:
        self.repo.close()


BACKEND = ActiStoreBackend
