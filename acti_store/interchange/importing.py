"""Import: a folder streamed into the store in one transaction (``bulk_put_stream``).

v1 documents are upgraded, every document is validated by the repository's models, each bad file
is reported with the reason; all or nothing unless told otherwise; a dry run writes nothing.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..documents import DocumentError, is_v1_document, loads
from ..errors import AgentExistsError, IncompleteExportError
from ..models import Agent, ExecutionHistory, is_valid_name
from ..repository import AgentRepository, ConflictPolicy, ImportItem, ImportOutcome
from ..repository.arguments import checked_policy
from ..validation import flag, folder_path, optional_function
from ..versioning import VersionLog
from .files import (
    HISTORY_SUFFIX,
    Progress,
    agent_file_name,
    history_file_name,
    parse,
    parse_history,
)
from .folder import INCOMPLETE_MARKER, SUFFIX, Folder
from .versions_file import (
    VERSIONS_SUFFIX,
    is_versions_document,
    parse_versions,
    versions_file_name,
)


@dataclass
class ImportReport:
    """What ``import_json`` did (or, for a dry run, would do). Names are agent names."""

    directory: Path
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: File name -> why it was not imported.
    invalid: dict[str, str] = field(default_factory=dict)
    #: Agents whose document was v1 and was upgraded to v2.
    upgraded: list[str] = field(default_factory=list)
    files: int = 0
    dry_run: bool = False
    #: Invalid files stopped an all-or-nothing import: nothing was written.
    aborted: bool = False
    #: The folder is an export that did not finish, imported because ``allow_incomplete``.
    incomplete_export: bool = False

    @property
    def ok(self) -> bool:
        return not self.invalid


def _contains(files: list[str], file: str) -> bool:
    """Whether the sorted list ``files`` holds ``file``."""
    i = bisect_left(files, file)
    return i < len(files) and files[i] == file


class _Aborted(Exception):
    """Raised by the item source to roll an all-or-nothing import back."""


class _Reader:
    """Reads a folder into ``ImportItem``s, one agent (with its history) at a time, recording every
    invalid file. ``items()`` may be called again (a retried transaction): it starts over."""

    def __init__(
        self,
        folder: Folder,
        files: list[str],
        in_store: Mapping[str, bool],
        *,
        all_or_nothing: bool,
        progress: Progress | None,
    ) -> None:
        self.folder = folder
        self.files = files
        self.in_store = in_store
        self.all_or_nothing = all_or_nothing
        self.progress = progress
        self.invalid: dict[str, str] = {}
        self.upgraded: list[str] = []

    def items(self) -> Iterator[ImportItem]:
        self.invalid, self.upgraded = {}, []
        consumed: set[str] = set()  # history files already read with their agent's file
        for done, file in enumerate(self.files, 1):
            if file in consumed:
                consumed.discard(file)
            else:
                item = self._item(file, consumed)
                if item is not None and not (self.invalid and self.all_or_nothing):
                    yield item
            if self.progress is not None:
                self.progress(done, len(self.files))
        if self.invalid and self.all_or_nothing:
            raise _Aborted

    def _item(self, file: str, consumed: set[str]) -> ImportItem | None:
        if not is_valid_name(file.removesuffix(SUFFIX)):
            self.invalid[file] = "not an agent file name: the name before .json must be snake_case"
            return None
        try:
            document = loads(self.folder.read(file))
            if is_versions_document(document):  # not read with its agent's file
                self.invalid[file] = _lone_versions(self.files, file)
                return None
            parsed = parse(file, document)
        except DocumentError as exc:
            self.invalid[file] = str(exc)
            return None
        if isinstance(parsed, ExecutionHistory):  # not read with its agent's file
            agent_file = agent_file_name(parsed.agent_name)
            if _contains(self.files, agent_file):
                self.invalid[file] = f"not imported: its agent file {agent_file} is invalid"
                return None
            if not self.in_store.get(parsed.agent_name, False):
                self.invalid[file] = (
                    f"the history of agent {parsed.agent_name!r}, which is neither in this "
                    "folder nor in the store"
                )
                return None
            return ImportItem(parsed.agent_name, history=parsed)
        history_file = history_file_name(parsed.name)
        history = None
        if _contains(self.files, history_file):
            try:
                history = self._history(history_file, consumed)
            except DocumentError as exc:
                self.invalid[history_file] = str(exc)
                self.invalid[file] = f"not imported: its history file {history_file} is invalid"
                return None
        versions_file = versions_file_name(parsed.name)
        log = None
        if _contains(self.files, versions_file):
            try:
                log = self._versions(versions_file, consumed, parsed)
            except DocumentError as exc:
                self.invalid[versions_file] = str(exc)
                self.invalid[file] = f"not imported: its versions file {versions_file} is invalid"
                if history is not None:
                    self.invalid[history_file] = self.invalid[file]
                return None
        if is_v1_document(document):
            self.upgraded.append(parsed.name)
        return ImportItem(parsed.name, agent=parsed, history=history, versions=log)

    def _companion(self, file: str, consumed: set[str]) -> Any:
        """The document in ``file`` (an agent's ``_history`` or ``_versions`` file), read with
        its agent's file and marked consumed; None when ``file`` is the agent file of an agent
        called ``*_history`` or ``*_versions`` (then it is read in its turn)."""
        try:
            document = loads(self.folder.read(file))
        except DocumentError:
            consumed.add(file)
            raise
        if isinstance(document, dict) and "name" in document:
            return None
        consumed.add(file)
        return document

    def _versions(self, file: str, consumed: set[str], agent: Agent) -> VersionLog | None:
        document = self._companion(file, consumed)
        return None if document is None else parse_versions(file, document, agent)

    def _history(self, file: str, consumed: set[str]) -> ExecutionHistory | None:
        document = self._companion(file, consumed)
        return None if document is None else parse_history(file, document)


def _lone_versions(files: list[str], file: str) -> str:
    """Why a versions file not read with its agent's file is not imported."""
    agent_file = agent_file_name(file.removesuffix(VERSIONS_SUFFIX))
    if _contains(files, agent_file):
        return f"not imported: its agent file {agent_file} is invalid"
    return f"versions are imported with their agent: {agent_file} is not in this folder"


def import_json(
    repo: AgentRepository,
    directory: str | os.PathLike[str],
    *,
    on_conflict: ConflictPolicy = "skip",
    all_or_nothing: bool = True,
    dry_run: bool = False,
    progress: Progress | None = None,
    allow_incomplete: bool = False,
) -> ImportReport:
    """Import a folder of v1/v2 agent and history files into the store, in one transaction.

    ``on_conflict`` decides about agents (and histories) the store already has: ``skip`` them,
    ``replace`` them, or ``fail`` (``AgentExistsError``, nothing written); anything else (a
    misspelling: ``"Skip"``) is an ``InvalidInputError`` naming the three, raised before the
    folder is read. With ``all_or_nothing``
    one invalid file imports nothing; without it the valid files are imported and the others
    reported. ``dry_run`` reports what would happen and writes nothing. Files are read one agent
    at a time, so memory stays bounded however large the folder. An agent's
    ``{name}_versions.json``, when there, gives it those versions, labels (splits included),
    gates and label log (else one snapshot of its current version, message ``imported``).

    A folder an export did not finish writing (killed, or stopped by an error: it still holds
    the export's mark ``.acti-export-incomplete``) may hold only some of the agents: it raises
    ``IncompleteExportError`` (an ``InvalidInputError``) and nothing is imported, unless
    ``allow_incomplete`` (then ``report.incomplete_export`` is True). Folders without the mark
    (written by hand, by older versions, v1 folders) import as they are.
    """
    on_conflict = checked_policy(on_conflict)  # before anything is read or written
    flag(all_or_nothing, "all_or_nothing")
    flag(dry_run, "dry_run")
    flag(allow_incomplete, "allow_incomplete")
    folder_path(directory, "directory")
    optional_function(progress, "progress", "a function taking (done, total)")
    report = ImportReport(Path(directory), dry_run=dry_run)
    with Folder(report.directory) as folder:
        if folder.has(INCOMPLETE_MARKER):
            if not allow_incomplete:
                raise IncompleteExportError(str(report.directory))
            report.incomplete_export = True
        files = folder.json_names()
        in_store = _history_owners_in_store(repo, files)
        reader = _Reader(folder, files, in_store, all_or_nothing=all_or_nothing, progress=progress)
        try:
            if dry_run:
                outcomes = _predict(repo, reader.items(), on_conflict)
            else:
                outcomes = repo.bulk_put_stream(reader.items, on_conflict).outcomes
        except _Aborted:
            report.aborted = True
            outcomes = {}
    report.files = len(files)
    report.invalid = reader.invalid
    if not report.aborted:
        report.upgraded = reader.upgraded
    lists = {"imported": report.imported, "replaced": report.replaced, "skipped": report.skipped}
    for name, outcome in outcomes.items():
        lists[outcome].append(name)
    return report


def _history_owners_in_store(repo: AgentRepository, files: list[str]) -> dict[str, bool]:
    """For each history file whose agent file is not in the folder: is that agent in the store?

    Asked before the import's transaction, so the item source never queries the store itself.
    """
    owners = (
        file.removesuffix(HISTORY_SUFFIX)
        for file in files
        if file.endswith(HISTORY_SUFFIX)
        and not _contains(files, agent_file_name(file.removesuffix(HISTORY_SUFFIX)))
    )
    return {owner: repo.exists(owner) for owner in owners if is_valid_name(owner)}


def _predict(
    repo: AgentRepository, items: Iterable[ImportItem], on_conflict: ConflictPolicy
) -> dict[str, ImportOutcome]:
    """The outcome ``bulk_put`` would report for each item, read from the store."""
    outcomes: dict[str, ImportOutcome] = {}
    for item in items:
        if item.agent is not None:
            exists = repo.exists(item.name)
        else:
            exists = bool(repo.get_history(item.name, limit=1).executions)
        if not exists:
            outcomes[item.name] = "imported"
        elif on_conflict == "fail":
            raise AgentExistsError(item.name)
        else:
            outcomes[item.name] = "skipped" if on_conflict == "skip" else "replaced"
    return outcomes
