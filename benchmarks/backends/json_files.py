"""The contract's original design: one JSON file per agent, one history file per run agent.

``{name}.json`` and ``{name}_history.json`` in ``<root>/agents`` (the ``outputs/agents`` layout);
every write replaces a whole file atomically (write a temporary file, ``os.replace``) while holding
an exclusive ``fcntl.flock`` on ``<root>/locks/{name}.lock``, so concurrent writers of one agent
queue. A run rewrites the history file (newest 50 records) and the agent file (counters). Search
reads and filters every agent file. No ``fsync``: like ``synchronous=NORMAL``, a power cut may lose
the last writes but never leaves a torn file.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from acti_store.documents import agent_document as acti_agent_document
from acti_store.documents import history_document as acti_history_document
from acti_store.models import AgentConfig, AgentUpdate, ExecutionRecord, SearchQuery

from ..workload import BulkItem
from . import Backend, Clock, Document, StoreSpec
from .plain import HISTORY_MAX, dumps, iso, new_agent_document, record_document

HISTORY_SUFFIX = "_history.json"


def _is_agent_file(file: str) -> bool:
    return file.endswith(".json") and not file.endswith(HISTORY_SUFFIX) and file[0] != "."


def _read(path: Path | str) -> Any:
    with open(path, "rb") as src:
        return json.loads(src.read())


class JsonFilesBackend(Backend):
    def __init__(self, spec: StoreSpec, clock: Clock) -> None:
        super().__init__(spec, clock)
        root = Path(spec.location)
        self.agents = root / "agents"
        self.locks = root / "locks"
        self.agents.mkdir(parents=True, exist_ok=True)
        self.locks.mkdir(parents=True, exist_ok=True)

    def _agent_path(self, name: str) -> Path:
        return self.agents / f"{name}.json"

    def _history_path(self, name: str) -> Path:
        return self.agents / f"{name}{HISTORY_SUFFIX}"

    @contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        fd = os.open(self.locks / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    @staticmethod
    def _write(path: Path, document: Document) -> None:
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(dumps(document))
        os.replace(temporary, path)

    # -- operations --------------------------------------------------------------------------------

    def create(self, config: AgentConfig) -> Document:
        doc = new_agent_document(config, iso(self.clock()))
        path = self._agent_path(config.name)
        with self._locked(config.name):
            if path.exists():
                raise FileExistsError(path)
            self._write(path, doc)
        return doc

    def get(self, name: str) -> Document:
        doc: Document = _read(self._agent_path(name))
        return doc

    def update(self, name: str, changes: AgentUpdate) -> Document:
        fields = changes.changes()
        now = iso(self.clock())
        path = self._agent_path(name)
        with self._locked(name):
            doc: Document = _read(path)
            for field, value in fields.items():
                doc[field] = list(value) if isinstance(value, list) else value
            doc["_metadata"]["updated_at"] = now
            doc["_metadata"]["version"] += 1
            self._write(path, doc)
        return doc

    def search(self, query: SearchQuery) -> list[Document]:
        words = query.query.lower().split() if query.query else []
        tools = set(query.tools or ())
        tags = set(query.tags or ())
        after = iso(query.created_after) if query.created_after else None
        before = iso(query.created_before) if query.created_before else None
        matches: list[Document] = []
        with os.scandir(self.agents) as entries:
            for entry in entries:
                if not _is_agent_file(entry.name):
                    continue
                doc = _read(entry.path)
                meta = doc["_metadata"]
                if words:
                    name, description = doc["name"].lower(), doc["description"].lower()
                    if not all(w in name or w in description for w in words):
                        continue
                if query.stratum is not None and doc["stratum"] != query.stratum:
                    continue
                if not tools <= set(doc["tools"]) or not tags <= set(doc["tags"]):
                    continue
                if after is not None and meta["created_at"] < after:
                    continue
                if before is not None and meta["created_at"] > before:
                    continue
                if (
                    query.min_executions is not None
                    and meta["execution_count"] < query.min_executions
                ):
                    continue
                matches.append(doc)
        matches.sort(key=lambda d: d["name"])
        if query.sort_by != "name":  # newest/most first; the stable sort keeps names ascending
            field = query.sort_by
            matches.sort(key=lambda d: d["_metadata"][field], reverse=True)
        return matches[: query.limit]

    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        ts = iso(record.timestamp)
        path, history_path = self._agent_path(name), self._history_path(name)
        with self._locked(name):
            doc: Document = _read(path)
            try:
                history: Document = _read(history_path)
            except FileNotFoundError:
                history = {"agent_name": name, "executions": [], "total_executions": 0}
            history["executions"].insert(0, record_document(record))
            del history["executions"][HISTORY_MAX:]
            history["total_executions"] += 1
            self._write(history_path, history)
            meta = doc["_metadata"]
            meta["execution_count"] += 1
            meta["success_count" if record.success else "error_count"] += 1
            if meta["last_executed_at"] is None or meta["last_executed_at"] < ts:
                meta["last_executed_at"] = ts
            self._write(path, doc)

    def get_history(self, name: str, limit: int) -> Document:
        try:
            history: Document = _read(self._history_path(name))
        except FileNotFoundError:
            if not self._agent_path(name).exists():
                raise KeyError(name) from None
            return {"agent_name": name, "executions": [], "total_executions": 0}
        del history["executions"][limit:]
        return history

    # -- interchange -------------------------------------------------------------------------------

    def export_all(self, directory: Path) -> str:
        for file in os.listdir(self.agents):
            if file.endswith(".json") and file[0] != ".":
                shutil.copyfile(self.agents / file, directory / file)
        return "file copy (the store is already in the export format)"

    def import_all(self, directory: Path) -> str:
        for file in sorted(os.listdir(directory)):
            if not _is_agent_file(file):
                continue
            doc = _read(directory / file)
            name = doc["name"]
            history_file = directory / f"{name}{HISTORY_SUFFIX}"
            history = _read(history_file) if history_file.exists() else None
            with self._locked(name):
                if history is not None:
                    self._write(self._history_path(name), history)
                self._write(self._agent_path(name), doc)
        return "json.loads + atomic locked rewrite of each file"

    def bulk_load(self, items: Sequence[BulkItem]) -> None:
        for agent, history in items:
            with open(self._agent_path(agent.name), "w", encoding="utf-8") as out:
                out.write(dumps(acti_agent_document(agent)))
            if history is not None:
                with open(self._history_path(agent.name), "w", encoding="utf-8") as out:
                    out.write(dumps(acti_history_document(history)))

    def agent_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result

    def history_document(self, result: object) -> Document:
        assert isinstance(result, dict)
        return result


BACKEND = JsonFilesBackend
