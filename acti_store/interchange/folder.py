"""The folder of an interchange: every file operation, confined to one directory.

A ``Folder`` works relative to one open directory descriptor: names are single path components,
symbolic links are never followed, each write is atomic (temporary file in the same directory,
optional fsync, rename), and a file read is bounded in size. Nothing outside the folder is read or
written. That needs POSIX (``O_DIRECTORY``, ``dir_fd``, ``flock``): elsewhere a folder refuses to
open with an ``AgentStoreError``, and ``import acti_store`` still works.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final

from ..documents import DocumentError
from ..errors import AgentStoreError

SUFFIX: Final = ".json"
#: Largest file import reads: far above any valid document (a 50-record history is ~100 KB).
MAX_FILE_BYTES: Final = 8 * 1024 * 1024
BACKUP_PREFIX: Final = ".backup-"
#: Written first and removed last by an export: a folder holding it is an export that did not
#: finish (``import_json`` refuses it). Not a ``.json`` name, so nothing reads it as a document.
INCOMPLETE_MARKER: Final = ".acti-export-incomplete"
#: The temporary file of ``Folder.write``: ``.{file}.{12 hex digits}.tmp``, for a document or the
#: export's mark.
_TEMPORARY: Final = re.compile(
    rf"\.(?:.+\.json|{re.escape(INCOMPLETE_MARKER)})\.[0-9a-f]{{12}}\.tmp"
)
NEEDS_POSIX: Final = (
    "JSON folders (export, import, rewrite, the mirror) need a POSIX system: "
    "files are opened relative to a directory descriptor and locked with flock"
)


def read_up_to(fd: int, limit: int, size_hint: int) -> bytes:
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


class Folder:
    """A directory opened once. Names are single path components resolved against its descriptor,
    symbolic links are never followed, and writes replace files atomically."""

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = False, durable: bool = False
    ) -> None:
        if os.open not in os.supports_dir_fd:  # Windows: no ``dir_fd``, no ``O_DIRECTORY``
            raise AgentStoreError(NEEDS_POSIX)
        self.path = Path(path)
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._durable = durable
        self._renamed = False

    def __enter__(self) -> Folder:
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
        try:
            import fcntl  # POSIX only: imported here so that ``import acti_store`` works anywhere
        except ImportError:
            raise AgentStoreError(NEEDS_POSIX) from None
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def json_names(self) -> list[str]:
        """Sorted names of the entries ending in ``.json`` that are not directories (symbolic
        links included: ``read`` refuses them, so they are reported)."""
        return sorted(self.json_entries())

    def json_entries(self) -> Iterator[str]:
        """``json_names`` as the directory lists them, unsorted: one name at a time, so a folder
        of any size is walked in constant memory."""
        with os.scandir(self._fd) as entries:
            for entry in entries:
                if entry.name.endswith(SUFFIX) and not entry.is_dir(follow_symlinks=False):
                    yield entry.name

    def has_json(self, name: str) -> bool:
        """Whether ``name`` is an entry ``json_entries`` lists: here, and not a directory."""
        try:
            info = os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except OSError:  # absent, or a name too long to be here
            return False
        return name.endswith(SUFFIX) and not stat.S_ISDIR(info.st_mode)

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
            data = read_up_to(fd, MAX_FILE_BYTES + 1, info.st_size)
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

    def has(self, name: str) -> bool:
        """Whether an entry ``name`` is here (a symbolic link is not followed)."""
        try:
            os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def sync(self) -> None:
        """Make the names created, renamed and removed so far durable (fsync the directory)."""
        os.fsync(self._fd)

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

    def subfolder(self, name: str) -> Folder:
        """Create the new directory ``name`` here and open it."""
        os.mkdir(name, 0o777, dir_fd=self._fd)
        return Folder(self.path / name)


def new_backup(folder: Folder, now: datetime) -> Folder:
    """A new directory ``.backup-<UTC time>`` (``-1``, ``-2``, ... when taken) in ``folder``."""
    stamp = BACKUP_PREFIX + now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(100):
        try:
            return folder.subfolder(stamp if attempt == 0 else f"{stamp}-{attempt}")
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free backup directory name", str(folder.path))
