"""Export: the store streamed into a folder, one agent's files at a time, each written atomically.

``prune`` removes the files of agents that no longer exist.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..models import is_valid_name
from ..repository import AgentRepository
from .files import (
    Progress,
    agent_file_name,
    has_history,
    history_file_name,
    write_files,
)
from .folder import SUFFIX, Folder

#: Agents per database page while exporting (a page holds up to 50 records per agent).
EXPORT_PAGE_SIZE: Final = 100


@dataclass
class ExportReport:
    """What ``export_json`` did."""

    directory: Path
    agents: int = 0
    histories: int = 0
    #: Files whose bytes changed (the others already held exactly the new text).
    written: int = 0
    unchanged: int = 0
    #: Files of agents that no longer exist, removed by ``prune``.
    removed: list[str] = field(default_factory=list)
    #: Agents not exported, with the reason.
    not_exported: dict[str, str] = field(default_factory=dict)


def export_json(
    repo: AgentRepository,
    directory: str | os.PathLike[str],
    *,
    prune: bool = False,
    durable: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write ``{name}.json`` for every agent and ``{name}_history.json`` for every agent with a
    history, in the contract's format, each file atomically; streams the store page by page, all
    pages from one snapshot (``iter_export``), so every agent agrees with its history and the
    folder is the store as it was at one moment, whatever is written meanwhile.

    ``prune`` also removes the ``*.json`` files named like an agent's whose agent is not exported.
    ``durable`` fsyncs every file before it replaces the old one (power-failure safe, and far
    slower); without it a killed process still never leaves a partly written file.
    """
    report = ExportReport(Path(directory))
    total = sum(repo.count_by_stratum().values()) if progress else 0
    kept: set[str] = set()
    # Agents with a history so far. Names come in order and ``x`` sorts before ``x_history``, so
    # when ``x_history`` comes, this says whether ``x``'s history file takes its file name
    # (``shadowed_by_history``), as of the export's snapshot.
    with_history: set[str] = set()
    with (
        Folder(report.directory, create=True, durable=durable) as folder,
        folder.locked(),
    ):
        folder.remove_temporaries()  # left by an export that was killed
        for done, (agent, history) in enumerate(repo.iter_export(EXPORT_PAGE_SIZE), 1):
            owner = agent.name.removesuffix("_history")
            if has_history(history):
                with_history.add(agent.name)
            if owner != agent.name and owner in with_history:
                report.not_exported[agent.name] = (
                    f"its file {agent_file_name(agent.name)} is the history file of agent {owner!r}"
                )
                kept.add(history_file_name(agent.name))
            else:
                written = write_files(folder, agent, history)
                report.agents += 1
                report.histories += len(written) - 1
                report.written += sum(written)
                report.unchanged += len(written) - sum(written)
                if prune:
                    kept.add(agent_file_name(agent.name))
                    if len(written) == 2:
                        kept.add(history_file_name(agent.name))
            if progress is not None:
                progress(done, total)
        if prune:
            for file in sorted(folder.regular_json_names()):
                if is_valid_name(file.removesuffix(SUFFIX)) and file not in kept:
                    folder.remove(file)
                    report.removed.append(file)
    return report
