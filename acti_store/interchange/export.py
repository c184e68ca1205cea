"""Export: the store streamed into a folder, one agent's files at a time, each written atomically.

``prune`` removes the files of agents that no longer exist.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

from ..documents import dumps
from ..errors import ExportError
from ..models import Agent, ExecutionHistory, is_valid_name
from ..repository import AgentRepository
from ..validation import flag, folder_path, optional_function
from ..versioning import VersionLog
from .files import (
    Progress,
    agent_file_name,
    has_history,
    history_file_name,
    shadowed_by_history,
    write_files,
)
from .folder import INCOMPLETE_MARKER, SUFFIX, Folder
from .versions_file import VERSIONS_SUFFIX, versions_document, versions_file_name

#: What an agent's name ends with when its file is another agent's versions file.
VERSIONS_NAME: Final = VERSIONS_SUFFIX.removesuffix(SUFFIX)

#: What the mark of an export under way says to a person who opens it.
INCOMPLETE_NOTE: Final = (
    "An acti-store export is writing this folder, or was stopped before it finished: the folder "
    "may hold only some of the store's agents, so import refuses it (acti-store import "
    "--allow-incomplete, or import_json(..., allow_incomplete=True), imports it anyway). The "
    "export removes this file once every file is written.\n"
)

#: Agents per database page while exporting (a page holds up to 50 records per agent).
EXPORT_PAGE_SIZE: Final = 100
T = TypeVar("T")


@dataclass
class ExportReport:
    """What ``export_json`` did."""

    directory: Path
    agents: int = 0
    histories: int = 0
    #: ``{name}_versions.json`` files (``versions=True``).
    versions: int = 0
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
    versions: bool = False,
) -> ExportReport:
    """Write ``{name}.json`` for every agent and ``{name}_history.json`` for every agent with a
    history, in the contract's format, each file atomically; streams the store page by page, all
    pages from one snapshot (``iter_export``), so every agent agrees with its history and the
    folder is the store as it was at one moment, whatever is written meanwhile.

    ``prune`` also removes the ``*.json`` files named like an agent's whose agent is not exported.
    ``durable`` fsyncs every file before it replaces the old one (power-failure safe, and far
    slower); without it a killed process still never leaves a partly written file.

    Raises ``ExportError`` (an ``AgentStoreError`` and an ``OSError``) naming the folder and the
    reason when it cannot be created or written (a file in its place, no permission, a full
    disk); every file already there is then whole, the old version or the new one.

    While it writes, the folder holds the mark ``.acti-export-incomplete`` (written first,
    removed last): an export killed or stopped by an error leaves it, and ``import_json``
    refuses such a folder unless told ``allow_incomplete=True``.

    ``versions`` also writes ``{name}_versions.json`` for every agent (``versions_file``): its
    snapshots, labels and label log, read from the export's snapshot with its agent
    (``iter_export_versions``), so the file holds the agent file's own version whatever is
    updated or pruned meanwhile; an agent called ``x_versions`` is then not exported when ``x``
    is (its file name is ``x``'s versions file).
    """
    prune, durable, versions = (
        flag(prune, "prune"),
        flag(durable, "durable"),
        flag(versions, "versions"),
    )
    folder_path(directory, "directory")
    optional_function(progress, "progress", "a function taking (done, total)")
    report = ExportReport(Path(directory))
    total = sum(repo.count_by_stratum().values()) if progress else 0
    try:
        _export(
            repo, report, prune=prune, durable=durable, progress=progress, total=total,
            versions=versions,
        )  # fmt: skip
    except BrokenPipeError:  # the progress bar's reader went away: not the folder's fault
        raise
    except OSError as exc:
        raise ExportError(str(report.directory), _reason(exc, report.directory)) from exc
    return report


def _reason(exc: OSError, directory: Path) -> str:
    """Why the folder could not be written, in words a person can act on."""
    if exc.errno == errno.EEXIST and exc.filename == str(directory):
        return "it is a file, not a folder"
    if exc.errno == errno.ENOTDIR:
        return "a part of its path is a file, not a folder"
    reason = exc.strerror or str(exc)
    if exc.filename != str(directory) and directory.is_dir():
        return f"{reason}; every file there is whole (replaced whole or left as it was)"
    return f"cannot create or open the folder: {reason}"


def _export(
    repo: AgentRepository,
    report: ExportReport,
    *,
    prune: bool,
    durable: bool,
    progress: Progress | None,
    total: int,
    versions: bool,
) -> None:
    kept: set[str] = set()  # with ``prune``: the files to keep
    earlier = _Earlier(repo, versions=versions)
    with (
        Folder(report.directory, create=True, durable=durable) as folder,
        folder.locked(),
        _closing(_entries(repo, versions=versions)) as stream,
    ):
        folder.remove_temporaries()  # left by an export that was killed
        _mark_incomplete(folder, durable=durable)
        for done, (agent, history, log) in enumerate(stream, 1):
            history_owner, versions_owner = earlier.owners(agent.name, has_history(history))
            if history_owner is not None:
                report.not_exported[agent.name] = (
                    f"its file {agent_file_name(agent.name)} is the history file of agent "
                    f"{history_owner!r}"
                )
                kept.add(history_file_name(agent.name))
            elif versions_owner is not None:
                report.not_exported[agent.name] = (
                    f"its file {agent_file_name(agent.name)} is the versions file of agent "
                    f"{versions_owner!r}"
                )
                kept.update((history_file_name(agent.name), versions_file_name(agent.name)))
            else:
                written = write_files(folder, agent, history)
                if log is not None:
                    _write_versions(folder, agent, log, report)
                report.agents += 1
                report.histories += len(written) - 1
                report.written += sum(written)
                report.unchanged += len(written) - sum(written)
                if prune:
                    kept.update((agent_file_name(agent.name), versions_file_name(agent.name)))
                    if len(written) == 2:
                        kept.add(history_file_name(agent.name))
            if progress is not None:
                progress(done, total)
        if prune:
            for file in sorted(folder.regular_json_names()):
                if is_valid_name(file.removesuffix(SUFFIX)) and file not in kept:
                    folder.remove(file)
                    report.removed.append(file)
        folder.remove(INCOMPLETE_MARKER)  # the last change: the folder is whole now


def _mark_incomplete(folder: Folder, *, durable: bool) -> None:
    """Mark the folder as an export under way before any agent's file changes (``durable``:
    the mark is on disk first), so that an export stopped part way is never taken for a whole
    one: ``import_json`` refuses a folder with the mark, and the export removes it last."""
    folder.write(INCOMPLETE_MARKER, INCOMPLETE_NOTE.encode())
    if durable:
        folder.sync()


class _Earlier:
    """Which earlier agent of the export's stream takes the file name of an agent's file: ``x``,
    whose history file is ``x_history.json``, if ``x`` has a history; with ``versions``, ``x``,
    whose versions file is ``x_versions.json``, if ``x`` was exported. As of the export's
    snapshot, in constant memory.

    Names come in the store's order, ``x`` before ``x_history``. Where that order compares
    names a character at a time (SQLite's bytes, PostgreSQL's "C" collation, MariaDB's), every
    name between them starts with ``x``, so only the agents whose names begin the current one
    are kept. In byte order an owner not kept is not in the snapshot. Once a name sorts
    (bytewise) before the one before it, the order may be a collation that skips underscores
    (PostgreSQL's "en_US", say), which can put other names between; from then on an owner not
    kept is asked of the store.
    """

    def __init__(self, repo: AgentRepository, *, versions: bool) -> None:
        self.repo = repo
        self.versions = versions
        #: The agents seen whose names begin the current one: (name, has a history, exported).
        self.prefixes: list[tuple[str, bool, bool]] = []
        self.last = ""
        self.bytewise = True

    def owners(self, name: str, history: bool) -> tuple[str | None, str | None]:
        """The agent whose history file, and the one whose versions file, is ``name``'s file
        (None, None: ``name`` is exported). ``history``: whether ``name`` has one."""
        self.bytewise = self.bytewise and name > self.last
        self.last = name
        if self.prefixes:  # most names begin no other: nothing to drop
            self.prefixes = [seen for seen in self.prefixes if name.startswith(seen[0])]
        history_owner = self._history_owner(name)
        versions_owner = None if history_owner else self._versions_owner(name)
        self.prefixes.append((name, history, history_owner is None and versions_owner is None))
        return history_owner, versions_owner

    def _seen(self, owner: str) -> tuple[str, bool, bool] | None:
        return next((seen for seen in self.prefixes if seen[0] == owner), None)

    def _history_owner(self, name: str) -> str | None:
        owner = name.removesuffix("_history")
        if owner == name:
            return None
        seen = self._seen(owner)
        if seen is not None:
            return owner if seen[1] else None
        return None if self.bytewise else shadowed_by_history(self.repo, name)

    def _versions_owner(self, name: str) -> str | None:
        owner = name.removesuffix(VERSIONS_NAME)
        if owner == name or not self.versions:
            return None
        seen = self._seen(owner)
        if seen is not None:
            return owner if seen[2] else None
        if self.bytewise or not is_valid_name(owner) or not self.repo.exists(owner):
            return None
        return owner if shadowed_by_history(self.repo, owner) is None else None


def _entries(
    repo: AgentRepository, *, versions: bool
) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog | None]]:
    """Every agent with its history and (``versions``) its version log, from one snapshot."""
    if versions:
        return repo.iter_export_versions(EXPORT_PAGE_SIZE)
    return _without_versions(repo.iter_export(EXPORT_PAGE_SIZE))


def _without_versions(
    stream: Iterator[tuple[Agent, ExecutionHistory | None]],
) -> Generator[tuple[Agent, ExecutionHistory | None, None], None, None]:
    try:
        for agent, history in stream:
            yield agent, history, None
    finally:  # closed with this generator: the snapshot ends now
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def _write_versions(folder: Folder, agent: Agent, log: VersionLog, report: ExportReport) -> None:
    """Write ``agent``'s versions file (unless its text is already there)."""
    text = dumps(versions_document(agent, log)).encode()
    if folder.write(versions_file_name(agent.name), text):
        report.written += 1
    else:
        report.unchanged += 1
    report.versions += 1


@contextmanager
def _closing(stream: Iterator[T]) -> Generator[Iterator[T], None, None]:
    """``stream``, closed when the block ends: however the export stops, its snapshot ends then,
    not when the error that stopped it (which holds the stream's frame) is freed."""
    try:
        yield stream
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
