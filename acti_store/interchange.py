"""JSON interchange: export to and import from the ``outputs/agents`` format, and the file mirror.

A folder holds ``{name}.json`` per agent and ``{name}_history.json`` per agent that has a history,
exactly in the contract's format (``documents`` renders and parses them). Every file operation goes
through ``_Folder``: relative to one open directory, never following a symbolic link, each write
atomic (temporary file in the same directory, fsync, rename). Nothing outside the folder is read or
written.

* ``export_json`` streams the store into a folder (flat memory); ``prune`` removes the files of
  agents that no longer exist.
* ``import_json`` streams a folder into the store in one transaction (``bulk_put_stream``): v1
  documents upgraded, every document validated by the repository's models, each bad file reported
  with the reason; all or nothing unless told otherwise; a dry run writes nothing.
* ``rewrite_documents`` rewrites a folder's files in place as canonical v2, after a backup.
* ``JsonMirror`` keeps a folder in step with the store after each committed write.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import secrets
import stat
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final

from .documents import (
    DocumentError,
    agent_document,
    agent_from_document,
    dumps,
    history_document,
    history_from_document,
    is_history_document,
    is_v1_document,
    loads,
)
from .errors import AgentExistsError, AgentNotFoundError, AgentStoreError
from .models import HISTORY_MAX_RECORDS, Agent, ExecutionHistory, is_valid_name, utc_now
from .repository import AgentRepository, ConflictPolicy, ImportItem, ImportOutcome

log = logging.getLogger(__name__)

SUFFIX: Final = ".json"
HISTORY_SUFFIX: Final = "_history.json"
DEFAULT_DIRECTORY: Final = Path("outputs/agents")
#: Largest file import reads: far above any valid document (a 50-record history is ~100 KB).
MAX_FILE_BYTES: Final = 8 * 1024 * 1024
#: Agents per database page while exporting (a page holds up to 50 records per agent).
EXPORT_PAGE_SIZE: Final = 100
BACKUP_PREFIX: Final = ".backup-"
#: The temporary file of ``_Folder.write``: ``.{file}.{12 hex digits}.tmp``.
_TEMPORARY: Final = re.compile(r"\..+\.json\.[0-9a-f]{12}\.tmp")

#: ``progress(done, total)``: called as files (import) or agents (export) are processed.
Progress = Callable[[int, int], None]


def agent_file_name(name: str) -> str:
    return f"{name}{SUFFIX}"


def history_file_name(name: str) -> str:
    return f"{name}{HISTORY_SUFFIX}"


# --------------------------------------------------------------------------------------------------
# The folder: every file operation, confined to one directory
# --------------------------------------------------------------------------------------------------


def _read_up_to(fd: int, limit: int, size_hint: int) -> bytes:
    """Read ``fd`` until its end or ``limit`` bytes, whichever comes first.

    The first read asks for the size ``fstat`` reported (plus one byte, to see the end): a buffer
    of ``limit`` bytes would be allocated for every file otherwise. Reading goes on until a read
    returns nothing, so a file that grew since ``fstat`` (or reports no size) is still read whole.
    """
    data = os.read(fd, min(max(size_hint, 0) + 1, limit))
    if not data or len(data) >= limit:
        return data
    parts = [data]
    total = len(data)
    while total < limit:
        more = os.read(fd, limit - total)
        if not more:
            break
        parts.append(more)
        total += len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Folder:
    """A directory opened once. Names are single path components resolved against its descriptor,
    symbolic links are never followed, and writes replace files atomically."""

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = False, durable: bool = False
    ) -> None:
        self.path = Path(path)
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._durable = durable
        self._renamed = False

    def __enter__(self) -> _Folder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._renamed and kind is None:
                os.fsync(self._fd)  # make the renames durable
        finally:
            os.close(self._fd)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the folder's lock (``flock`` on the directory itself, no lock file): writers of
        one folder (export, rewrite, mirrors in any process) take turns."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def json_names(self) -> list[str]:
        """Sorted names of the entries ending in ``.json`` that are not directories (symbolic
        links included: ``read`` refuses them, so they are reported)."""
        with os.scandir(self._fd) as entries:
            return sorted(
                e.name
                for e in entries
                if e.name.endswith(SUFFIX) and not e.is_dir(follow_symlinks=False)
            )

    def regular_json_names(self) -> Iterator[str]:
        """Names of the regular files (not symbolic links) ending in ``.json``, unsorted."""
        with os.scandir(self._fd) as entries:
            for entry in entries:
                if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False):
                    yield entry.name

    def read(self, name: str) -> bytes:
        """The bytes of the regular file ``name``; ``DocumentError`` says why it cannot be read."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=self._fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise DocumentError("a symbolic link: not followed") from None
            raise DocumentError(f"cannot be read: {exc.strerror}") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):  # as ``open(fd, "rb")`` always reported a directory
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), fd)
            if not stat.S_ISREG(info.st_mode):
                raise DocumentError("not a regular file")
            data = _read_up_to(fd, MAX_FILE_BYTES + 1, info.st_size)
        finally:
            os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise DocumentError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        return data

    def holds(self, name: str, data: bytes) -> bool:
        """True when ``name`` is a regular file holding exactly ``data``."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self._fd)
        except OSError:
            return False
        with open(fd, "rb") as file:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
                return False
            return file.read() == data

    def write(self, name: str, data: bytes) -> bool:
        """Replace ``name`` atomically with ``data``; False (and no write) when it already holds it.

        The bytes go to a temporary file in this directory, then are renamed over ``name``: a
        crashed process leaves the old file or the new one, never a part of either. A ``durable``
        folder also fsyncs each file before its rename, so that holds after a power failure too.
        """
        if self.holds(name, data):
            return False
        temporary = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o666, dir_fd=self._fd)
        try:
            with open(fd, "wb") as file:
                file.write(data)
                if self._durable:
                    file.flush()
                    os.fsync(fd)
            os.replace(temporary, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=self._fd)
            raise
        self._renamed = True
        return True

    def remove_temporaries(self) -> list[str]:
        """Remove the temporary files of writes that never finished (their process was killed
        between creating and renaming one). Call with the lock held: then no write is under way."""
        with os.scandir(self._fd) as entries:
            stale = [
                e.name
                for e in entries
                if _TEMPORARY.fullmatch(e.name) and e.is_file(follow_symlinks=False)
            ]
        return [name for name in stale if self.remove(name)]

    def remove(self, name: str) -> bool:
        """Remove ``name`` (a symbolic link itself, never its target); False if it was absent."""
        try:
            os.unlink(name, dir_fd=self._fd)
        except FileNotFoundError:
            return False
        self._renamed = True
        return True

    def subfolder(self, name: str) -> _Folder:
        """Create the new directory ``name`` here and open it."""
        os.mkdir(name, 0o777, dir_fd=self._fd)
        return _Folder(self.path / name)


# --------------------------------------------------------------------------------------------------
# One agent's files, shared by export and the mirror
# --------------------------------------------------------------------------------------------------


def _has_history(history: ExecutionHistory | None) -> bool:
    return history is not None and bool(history.executions or history.total_executions)


def _shadowed_by_history(repo: AgentRepository, name: str) -> str | None:
    """The agent whose history file has the name of ``name``'s agent file, if that agent has a
    history: agents ``x`` and ``x_history`` both want ``x_history.json``, and the history wins."""
    owner = name.removesuffix("_history")
    if owner == name or not is_valid_name(owner):
        return None
    try:
        history = repo.get_history(owner, limit=1)
    except AgentNotFoundError:
        return None
    return owner if _has_history(history) else None


def _holds_own_document(folder: _Folder, file: str, *, agent: str, history: bool) -> bool:
    """True when ``file`` holds a document of ``agent`` (its history, if ``history``): only such
    files are ever removed, never someone else's that happens to share the name."""
    try:
        document = loads(folder.read(file))
    except DocumentError:
        return False
    if history:
        return is_history_document(document) and document.get("agent_name") == agent
    return isinstance(document, dict) and document.get("name") == agent


def _write_files(folder: _Folder, agent: Agent, history: ExecutionHistory | None) -> list[bool]:
    """Write an agent's files (and remove a stale history file); one ``written`` flag per file."""
    written = [folder.write(agent_file_name(agent.name), dumps(agent_document(agent)).encode())]
    history_file = history_file_name(agent.name)
    if history is not None and _has_history(history):
        written.append(folder.write(history_file, dumps(history_document(history)).encode()))
    elif _holds_own_document(folder, history_file, agent=agent.name, history=True):
        folder.remove(history_file)
    return written


# --------------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------------


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
    history, in the contract's format, each file atomically; streams the store page by page.

    ``prune`` also removes the ``*.json`` files named like an agent's whose agent is not exported.
    ``durable`` fsyncs every file before it replaces the old one (power-failure safe, and far
    slower); without it a killed process still never leaves a partly written file.
    """
    report = ExportReport(Path(directory))
    total = sum(repo.count_by_stratum().values()) if progress else 0
    kept: set[str] = set()
    with (
        _Folder(report.directory, create=True, durable=durable) as folder,
        folder.locked(),
    ):
        folder.remove_temporaries()  # left by an export that was killed
        for done, (agent, history) in enumerate(repo.iter_export(EXPORT_PAGE_SIZE), 1):
            owner = _shadowed_by_history(repo, agent.name)
            if owner is not None:
                report.not_exported[agent.name] = (
                    f"its file {agent_file_name(agent.name)} is the history file of agent {owner!r}"
                )
                kept.add(history_file_name(agent.name))
            else:
                written = _write_files(folder, agent, history)
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


# --------------------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------------------


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

    @property
    def ok(self) -> bool:
        return not self.invalid


def _contains(files: list[str], file: str) -> bool:
    """Whether the sorted list ``files`` holds ``file``."""
    i = bisect_left(files, file)
    return i < len(files) and files[i] == file


class _Aborted(Exception):
    """Raised by the item source to roll an all-or-nothing import back."""


def _parse_history(file: str, document: object) -> ExecutionHistory:
    """Validate a history document and check it against its file name."""
    history = history_from_document(document)
    if history_file_name(history.agent_name) != file:
        raise DocumentError(
            f"the history of agent {history.agent_name!r}: its file name must be "
            f"{history_file_name(history.agent_name)}"
        )
    return history


def _parse(file: str, document: object) -> Agent | ExecutionHistory:
    """Validate an agent or history document and check it against its file name."""
    if is_history_document(document):
        return _parse_history(file, document)
    agent = agent_from_document(document)
    if agent_file_name(agent.name) != file:
        raise DocumentError(
            f"the file name does not match the agent name {agent.name!r} "
            f"(expected {agent_file_name(agent.name)})"
        )
    return agent


class _Reader:
    """Reads a folder into ``ImportItem``s, one agent (with its history) at a time, recording every
    invalid file. ``items()`` may be called again (a retried transaction): it starts over."""

    def __init__(
        self,
        folder: _Folder,
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
            parsed = _parse(file, document)
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
        if is_v1_document(document):
            self.upgraded.append(parsed.name)
        return ImportItem(parsed.name, agent=parsed, history=history)

    def _history(self, file: str, consumed: set[str]) -> ExecutionHistory | None:
        """The history in ``file``, read with its agent's file; None when ``file`` is the agent
        file of an agent called ``*_history`` (then it is read in its turn)."""
        try:
            document = loads(self.folder.read(file))
        except DocumentError:
            consumed.add(file)
            raise
        if isinstance(document, dict) and "name" in document:
            return None
        consumed.add(file)
        return _parse_history(file, document)


def import_json(
    repo: AgentRepository,
    directory: str | os.PathLike[str],
    *,
    on_conflict: ConflictPolicy = "skip",
    all_or_nothing: bool = True,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a folder of v1/v2 agent and history files into the store, in one transaction.

    ``on_conflict`` decides about agents (and histories) the store already has: ``skip`` them,
    ``replace`` them, or ``fail`` (``AgentExistsError``, nothing written). With ``all_or_nothing``
    one invalid file imports nothing; without it the valid files are imported and the others
    reported. ``dry_run`` reports what would happen and writes nothing. Files are read one agent
    at a time, so memory stays bounded however large the folder.
    """
    report = ImportReport(Path(directory), dry_run=dry_run)
    with _Folder(report.directory) as folder:
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


# --------------------------------------------------------------------------------------------------
# Rewriting a folder in place as v2
# --------------------------------------------------------------------------------------------------


@dataclass
class RewriteReport:
    """What ``rewrite_documents`` did (or would do)."""

    directory: Path
    rewritten: list[str] = field(default_factory=list)
    #: Where the original bytes of the rewritten files were copied (None when nothing was).
    backup: Path | None = None


def rewrite_documents(
    directory: str | os.PathLike[str],
    *,
    dry_run: bool = False,
    now: Callable[[], datetime] = utc_now,
) -> RewriteReport:
    """Rewrite every valid document of a folder whose text is not its canonical v2 text (v1
    documents above all), after copying the original into ``.backup-<UTC time>/``.

    Invalid files are left as they are (``import_json`` reports them).
    """
    report = RewriteReport(Path(directory))
    backup: _Folder | None = None
    with ExitStack() as stack:
        folder = stack.enter_context(_Folder(report.directory))
        stack.enter_context(folder.locked())
        for file in folder.json_names():
            try:
                data = folder.read(file)
                parsed = _parse(file, loads(data))
            except DocumentError:
                continue
            document = (
                history_document(parsed)
                if isinstance(parsed, ExecutionHistory)
                else agent_document(parsed)
            )
            text = dumps(document).encode()
            if text == data:
                continue
            report.rewritten.append(file)
            if dry_run:
                continue
            if backup is None:
                backup = stack.enter_context(_new_backup(folder, now()))
                report.backup = backup.path
            backup.write(file, data)
            folder.write(file, text)
    return report


def _new_backup(folder: _Folder, now: datetime) -> _Folder:
    stamp = BACKUP_PREFIX + now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(100):
        try:
            return folder.subfolder(stamp if attempt == 0 else f"{stamp}-{attempt}")
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free backup directory name", str(folder.path))


# --------------------------------------------------------------------------------------------------
# The mirror
# --------------------------------------------------------------------------------------------------


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

    def sync(self, repo: AgentRepository, names: Iterable[str]) -> None:
        try:
            with _Folder(self.directory, create=True) as folder, folder.locked():
                for name in names:
                    self._sync_one(repo, folder, name)
        except (OSError, AgentStoreError) as exc:
            log.warning("acti_store mirror %s not updated: %s", self.directory, exc)

    @staticmethod
    def _sync_one(repo: AgentRepository, folder: _Folder, name: str) -> None:
        if not is_valid_name(name):
            return
        try:
            agent = repo.get(name)
            history = repo.get_history(name, limit=HISTORY_MAX_RECORDS)
        except AgentNotFoundError:
            agent_file, history_file = agent_file_name(name), history_file_name(name)
            if _holds_own_document(folder, agent_file, agent=name, history=False):
                folder.remove(agent_file)
            # A history kept on delete (``delete_history=False``) keeps its file too.
            kept = repo.archived_history(name).executions
            if not kept and _holds_own_document(folder, history_file, agent=name, history=True):
                folder.remove(history_file)
            return
        owner = _shadowed_by_history(repo, name)
        if owner is not None:
            log.warning(
                "acti_store mirror: agent %r not written: %s is the history file of agent %r",
                name,
                agent_file_name(name),
                owner,
            )
            return
        _write_files(folder, agent, history)


__all__ = [
    "DEFAULT_DIRECTORY",
    "ExportReport",
    "ImportReport",
    "JsonMirror",
    "RewriteReport",
    "export_json",
    "import_json",
    "rewrite_documents",
]
