"""The mirror: a folder of JSON files kept in step with the store after each committed write."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import AgentNotFoundError, AgentStoreError
from ..models import is_valid_name
from ..repository import RepositoryPort
from .files import (
    agent_file_name,
    history_file_name,
    holds_own_document,
    shadowed_by_history,
    write_files,
)
from .folder import Folder

log = logging.getLogger(__name__)


class JsonMirror:
    """Keeps a folder of JSON files in step with the store: after each committed write the
    repository calls ``sync`` with the names it changed (the ``Mirror`` protocol).

    The store stays the source of truth: a file that cannot be written is logged, not raised (the
    write itself succeeded), and the next ``sync`` or ``export_json`` repairs it.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).resolve()

    def __repr__(self) -> str:
        return f"JsonMirror({str(self.directory)!r})"

    def files_for(self, name: str) -> tuple[Path, Path]:
        return self.directory / agent_file_name(name), self.directory / history_file_name(name)

    def sync(self, repo: RepositoryPort, names: Iterable[str]) -> None:
        try:
            with Folder(self.directory, create=True) as folder, folder.locked():
                for name in names:
                    self._sync_one(repo, folder, name)
        except (OSError, AgentStoreError) as exc:
            log.warning("acti_store mirror %s not updated: %s", self.directory, exc)

    @staticmethod
    def _sync_one(repo: RepositoryPort, folder: Folder, name: str) -> None:
        if not is_valid_name(name):
            return
        try:
            agent, history = repo.get_with_history(name)  # one snapshot: the two files agree
        except AgentNotFoundError:
            agent_file, history_file = agent_file_name(name), history_file_name(name)
            if holds_own_document(folder, agent_file, agent=name, history=False):
                folder.remove(agent_file)
            # A history kept on delete (``delete_history=False``) keeps its file too.
            kept = repo.archived_history(name).executions
            if not kept and holds_own_document(folder, history_file, agent=name, history=True):
                folder.remove(history_file)
            return
        owner = shadowed_by_history(repo, name)
        if owner is not None:
            log.warning(
                "acti_store mirror: agent %r not written: %s is the history file of agent %r",
                name,
                agent_file_name(name),
                owner,
            )
            return
        write_files(folder, agent, history)
