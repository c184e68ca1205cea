"""Import: a folder streamed into the store in one transaction (``bulk_put_stream``).

v1 documents are upgraded, configurations written by hand (no ``_metadata``) become new agents
with the store's metadata, every document is validated by the repository's models, each bad file
is reported with the reason; all or nothing unless told otherwise; a dry run writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ..documents import DocumentError, is_config_document, is_v1_document, loads
from ..errors import AgentExistsError, IncompleteExportError
from ..models import Agent, ExecutionHistory, is_valid_name
from ..repository import (
    AgentRepository,
    BulkPutResult,
    ConflictPolicy,
    ImportItem,
    ImportOutcome,
)
from ..repository.arguments import checked_policy
from ..repository.import_gates import protected_moves
from ..validation import flag, folder_path, forced_note, optional_function
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

_COUNTED: Final = ("imported", "replaced", "skipped", "upgraded", "configs")


@dataclass
class ImportReport:
    """What ``import_json`` did (or, for a dry run, would do). Names are agent names, sorted;
    with ``names=False`` the five name lists stay empty and ``counts`` alone says how many."""

    directory: Path
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: File name -> why it was not imported.
    invalid: dict[str, str] = field(default_factory=dict)
    #: Agents whose document was v1 and was upgraded to v2.
    upgraded: list[str] = field(default_factory=list)
    #: Agents whose file was a configuration written by hand (no ``_metadata``): new agents at
    #: version 1 with the store's metadata (when imported; one already in the store follows
    #: ``on_conflict``).
    configs: list[str] = field(default_factory=list)
    files: int = 0
    dry_run: bool = False
    #: Invalid files stopped an all-or-nothing import: nothing was written.
    aborted: bool = False
    #: The folder is an export that did not finish, imported because ``allow_incomplete``.
    incomplete_export: bool = False
    #: How many agents were imported, replaced, skipped, upgraded and written by hand (names
    #: kept or not).
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))

    @property
    def ok(self) -> bool:
        return not self.invalid


#: The files read with an agent's file ``{name}.json``: its history and its versions.
_COMPANIONS: Final = (HISTORY_SUFFIX, VERSIONS_SUFFIX)


def _owner_file(file: str) -> str | None:
    """The agent file that ``file`` would be read with, by its name (``a_history.json`` and
    ``a_versions.json``: ``a.json``), if any."""
    for suffix in _COMPANIONS:
        owner = file.removesuffix(suffix)
        if owner != file:
            return agent_file_name(owner) if is_valid_name(owner) else None
    return None


class _Aborted(Exception):
    """Raised by the item source to roll an all-or-nothing import back."""


class _Reader:
    """Reads a folder into ``ImportItem``s, one agent (with its history) at a time, recording every
    invalid file. ``items()`` may be called again (a retried transaction): it starts over.

    The folder is walked as the directory lists it, holding no list of its files: a file that
    has an agent file of its name (``a_history.json``, ``a_versions.json`` beside ``a.json``) is
    read with that file, every other file in its turn. Memory stays the same however many files
    the folder holds.
    """

    def __init__(
        self,
        folder: Folder,
        files: int,
        in_store: frozenset[str],
        now: datetime,
        *,
        all_or_nothing: bool,
        keep_names: bool,
        progress: Progress | None,
    ) -> None:
        self.folder = folder
        self.files = files
        self.in_store = in_store
        self.now = now
        self.all_or_nothing = all_or_nothing
        self.keep_names = keep_names
        self.progress = progress
        self.invalid: dict[str, str] = {}
        self.upgraded: list[str] = []
        self.upgrades = 0
        self.configs: list[str] = []
        self.by_hand = 0
        self.done = 0

    def items(self) -> Iterator[ImportItem]:
        self.invalid, self.upgraded, self.upgrades, self.done = {}, [], 0, 0
        self.configs, self.by_hand = [], 0
        for file in self.folder.json_entries():
            owner = _owner_file(file)
            if owner is None or not self.folder.has_json(owner):
                yield from self._read(file)
        if self.invalid and self.all_or_nothing:
            raise _Aborted

    def _tick(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.files, self.done))

    def _read(self, file: str) -> Iterator[ImportItem]:
        """The item of ``file``, if valid, then those of the files read with it."""
        self._tick()
        present = self._present(file)
        consumed: list[str] = []
        item = self._item(file, present, consumed)
        if item is not None and not (self.invalid and self.all_or_nothing):
            yield item
        yield from self._companions(present, consumed)

    def _present(self, file: str) -> tuple[str, ...]:
        """The companion files of ``file`` that are in the folder (looked up once)."""
        stem = file.removesuffix(SUFFIX)
        if not is_valid_name(stem):
            return ()
        return tuple(stem + s for s in _COMPANIONS if self.folder.has_json(stem + s))

    def _companions(self, present: tuple[str, ...], consumed: list[str]) -> Iterator[ImportItem]:
        """The files read with a file (``present``, its companions in the folder): those it
        read (``consumed``) pass on their own companions; the others (it was invalid, or they
        hold agents) are read in their own right."""
        for companion in present:
            if companion in consumed:
                self._tick()
                yield from self._companions(self._present(companion), [])
            else:
                yield from self._read(companion)

    def _item(self, file: str, present: tuple[str, ...], consumed: list[str]) -> ImportItem | None:
        """``file``'s item, or None (the reason in ``invalid``); ``present``: its companions
        in the folder, whose names are the agent's own (``parse`` checks the file name)."""
        if not is_valid_name(file.removesuffix(SUFFIX)):
            self.invalid[file] = "not an agent file name: the name before .json must be snake_case"
            return None
        try:
            document = loads(self.folder.read(file))
            if is_versions_document(document):  # not read with its agent's file
                self.invalid[file] = self._lone_versions(file)
                return None
            parsed = parse(file, document, new_at=self.now)
        except DocumentError as exc:
            self.invalid[file] = str(exc)
            return None
        if isinstance(parsed, ExecutionHistory):  # not read with its agent's file
            agent_file = agent_file_name(parsed.agent_name)
            if self.folder.has_json(agent_file):
                self.invalid[file] = f"not imported: its agent file {agent_file} is invalid"
                return None
            if parsed.agent_name not in self.in_store:
                self.invalid[file] = (
                    f"the history of agent {parsed.agent_name!r}, which is neither in this "
                    "folder nor in the store"
                )
                return None
            return ImportItem(parsed.agent_name, history=parsed)
        history_file = history_file_name(parsed.name)
        history = None
        if history_file in present:
            try:
                history = self._history(history_file, consumed)
            except DocumentError as exc:
                self.invalid[history_file] = str(exc)
                self.invalid[file] = f"not imported: its history file {history_file} is invalid"
                return None
        versions_file = versions_file_name(parsed.name)
        log = None
        if versions_file in present:
            try:
                log = self._versions(versions_file, consumed, parsed)
            except DocumentError as exc:
                self.invalid[versions_file] = str(exc)
                self.invalid[file] = f"not imported: its versions file {versions_file} is invalid"
                if history is not None:
                    self.invalid[history_file] = self.invalid[file]
                return None
        if is_config_document(document):
            self.by_hand += 1
            if self.keep_names:
                self.configs.append(parsed.name)
        elif is_v1_document(document):
            self.upgrades += 1
            if self.keep_names:
                self.upgraded.append(parsed.name)
        return ImportItem(parsed.name, agent=parsed, history=history, versions=log)

    def _companion(self, file: str, consumed: list[str]) -> Any:
        """The document in ``file`` (an agent's ``_history`` or ``_versions`` file), read with
        its agent's file and marked consumed; None when ``file`` is the agent file of an agent
        called ``*_history`` or ``*_versions`` (then it is read in its own right)."""
        try:
            document = loads(self.folder.read(file))
        except DocumentError:
            consumed.append(file)
            raise
        if isinstance(document, dict) and "name" in document:
            return None
        consumed.append(file)
        return document

    def _versions(self, file: str, consumed: list[str], agent: Agent) -> VersionLog | None:
        document = self._companion(file, consumed)
        return None if document is None else parse_versions(file, document, agent)

    def _history(self, file: str, consumed: list[str]) -> ExecutionHistory | None:
        document = self._companion(file, consumed)
        return None if document is None else parse_history(file, document)

    def _lone_versions(self, file: str) -> str:
        """Why a versions file not read with its agent's file is not imported."""
        agent_file = agent_file_name(file.removesuffix(VERSIONS_SUFFIX))
        if self.folder.has_json(agent_file):
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
    names: bool = True,
    force: bool = False,
    note: str | None = None,
) -> ImportReport:
    """Import a folder of v1/v2 agent and history files into the store, in one transaction.

    ``on_conflict`` decides about agents (and histories) the store already has: ``skip`` them,
    ``replace`` them, or ``fail`` (``AgentExistsError``, nothing written); anything else (a
    misspelling: ``"Skip"``) is an ``InvalidInputError`` naming the three, raised before the
    folder is read. With ``all_or_nothing``
    one invalid file imports nothing; without it the valid files are imported and the others
    reported. ``dry_run`` reports what would happen and writes nothing. Files are read one agent
    at a time, so memory stays bounded however large the folder; ``names=False`` keeps only the
    counts of the report (``report.counts``), not the name of every agent, and then the memory
    of an import does not grow with the number of agents at all. An agent's
    ``{name}_versions.json``, when there, gives it those versions, labels (splits included),
    gates and label log (else one snapshot of its current version, message ``imported``); its
    label log is history, each entry read strictly and marked ``imported``. An agent replaced
    keeps its protected labels where they point and its gates at least as strict: an import
    that would move one, or drop or loosen a gate, raises ``ProtectedImportError`` naming the
    label and its gate, and imports nothing (a dry run too), unless ``force=True`` with a
    ``note`` saying why; each such move is then logged forced, with that note.

    A folder an export did not finish writing (killed, or stopped by an error: it still holds
    the export's mark ``.acti-export-incomplete``) may hold only some of the agents: it raises
    ``IncompleteExportError`` (an ``InvalidInputError``) and nothing is imported, unless
    ``allow_incomplete`` (then ``report.incomplete_export`` is True). Folders without the mark
    (written by hand, by older versions, v1 folders) import as they are.

    A file holding only a configuration (``name``, ``description``, ``system_prompt``, ``tools``,
    ..., no ``_metadata``: written by hand) is a new agent at version 1 with the store's metadata
    (created and updated at the store's time when the import starts, no runs), listed in
    ``report.configs``; every field is checked as a create checks it.
    """
    on_conflict = checked_policy(on_conflict)  # before anything is read or written
    flag(all_or_nothing, "all_or_nothing")
    flag(dry_run, "dry_run")
    flag(allow_incomplete, "allow_incomplete")
    flag(names, "names")
    note = forced_note(note, flag(force, "force"))
    folder_path(directory, "directory")
    optional_function(progress, "progress", "a function taking (done, total)")
    report = ImportReport(Path(directory), dry_run=dry_run)
    with Folder(report.directory) as folder:
        if folder.has(INCOMPLETE_MARKER):
            if not allow_incomplete:
                raise IncompleteExportError(str(report.directory))
            report.incomplete_export = True
        report.files, in_store = _survey(repo, folder)
        reader = _Reader(
            folder,
            report.files,
            in_store,
            repo.now(),
            all_or_nothing=all_or_nothing,
            keep_names=names,
            progress=progress,
        )
        try:
            if dry_run:
                result = _predict(repo, reader.items(), on_conflict, names, force)
            else:
                result = repo.bulk_put_stream(
                    reader.items, on_conflict, keep_names=names, force=force, note=note
                )
        except _Aborted:
            report.aborted = True
            result = BulkPutResult()
    report.invalid = dict(sorted(reader.invalid.items()))
    if not report.aborted:
        report.upgraded = sorted(reader.upgraded)
        report.counts["upgraded"] = reader.upgrades
        report.configs = sorted(reader.configs)
        report.counts["configs"] = reader.by_hand
    lists: dict[ImportOutcome, list[str]] = {
        "imported": report.imported,
        "replaced": report.replaced,
        "skipped": report.skipped,
    }
    for name, outcome in result.outcomes.items():
        lists[outcome].append(name)
    for outcome, listed in lists.items():
        listed.sort()
        report.counts[outcome] = result.count(outcome)
    return report


def _survey(repo: AgentRepository, folder: Folder) -> tuple[int, frozenset[str]]:
    """How many files the folder holds, and the agents in the store among those whose history
    file is here without their agent file: asked before the import's transaction, so the item
    source never queries the store itself."""
    files = 0
    owners: list[str] = []
    for file in folder.json_entries():
        files += 1
        owner = file.removesuffix(HISTORY_SUFFIX)
        if owner != file and is_valid_name(owner) and not folder.has_json(agent_file_name(owner)):
            owners.append(owner)
    return files, frozenset(owner for owner in owners if repo.exists(owner))


def _predict(
    repo: AgentRepository,
    items: Iterable[ImportItem],
    on_conflict: ConflictPolicy,
    keep_names: bool,
    force: bool,
) -> BulkPutResult:
    """The outcomes ``bulk_put`` would report for the items, read from the store (a protected
    label a replace would move refused as it would be)."""
    result = BulkPutResult(keep_names=keep_names)
    for item in items:
        if item.agent is not None:
            exists = repo.exists(item.name)
        else:
            exists = bool(repo.get_history(item.name, limit=1).executions)
        if not exists:
            result.add(item.name, "imported")
        elif on_conflict == "fail":
            raise AgentExistsError(item.name)
        elif on_conflict == "skip":
            result.add(item.name, "skipped")
        else:
            if item.agent is not None:
                targets, gates = repo.label_weights(item.name), repo.label_gates(item.name)
                protected_moves(
                    item.name, gates, targets, item.versions, note=None, force=force, now=repo.now()
                )
            result.add(item.name, "replaced")
    return result
