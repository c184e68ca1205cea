"""The doctor's SQLite checks: the journal mode, the free disk of the file's folder, and
whether the file can be written.

Read from a read-only connection: the journal mode is the file's own (a write-ahead log is
recorded in the file), never switched by looking.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Final

from sqlalchemy import Connection, text

from ...doctor.findings import EngineChecks, Finding, Target, ok, warning
from ...engine import store_file

#: Free disk below this many bytes, or below ``FREE_DISK_SHARE`` of the disk, is a warning.
FREE_DISK_MIN: Final = 2**30
#: The share of the disk below which free disk is a warning (as ``FREE_DISK_MIN`` is).
FREE_DISK_SHARE: Final = 0.10


def _version(_conn: Connection) -> str:
    """The SQLite library this Python runs (SQLite has no server: it is the library)."""
    return sqlite3.sqlite_version


def _path(target: Target) -> Path:
    path = store_file(target.url)
    assert path is not None, "diagnose checks a SQLite store only in its file"
    return path.expanduser().absolute()


def journal_mode(target: Target) -> list[Finding]:
    """WAL lets readers go on while one process writes; the rollback journal makes them wait."""
    with target.engine.connect() as conn:
        mode = str(conn.execute(text("PRAGMA journal_mode")).scalar_one()).lower()
    if mode == "wal":
        return [ok("journal mode", "wal (readers never wait for the writer)")]
    return [
        warning(
            "journal mode",
            f"{mode}, not wal: every read waits while a process writes, and a write waits for "
            "every read",
            f"open the store once with write access, which switches it to wal: "
            f"{target.command('migrate')}",
        )
    ]


def free_disk(target: Target) -> list[Finding]:
    """A full disk fails every write (and a checkpoint of the write-ahead log)."""
    folder = _path(target).parent
    usage = shutil.disk_usage(folder)
    share = usage.free / usage.total if usage.total else 0.0
    found = f"{_size(usage.free)} free of {_size(usage.total)} ({share:.0%}) in {folder}"
    if usage.free < FREE_DISK_MIN or share < FREE_DISK_SHARE:
        return [
            warning(
                "free disk",
                found,
                f"free space on the disk, or move the store to a larger one (under "
                f"{_size(FREE_DISK_MIN)} or {FREE_DISK_SHARE:.0%} free, writes may soon fail)",
            )
        ]
    return [ok("free disk", found)]


def writable(target: Target) -> list[Finding]:
    """A writer needs the file and its folder (where SQLite makes the ``-wal`` and ``-shm``
    files and the rollback journal)."""
    path = _path(target)
    blocked = [str(p) for p in (path, path.parent) if not os.access(p, os.W_OK)]
    if blocked:
        return [
            warning(
                "writable",
                f"this user cannot write {' nor '.join(blocked)}: only read-only opens work",
                "give the application's user write access to the file and its folder, or open "
                "the store with --read-only (open_repository(read_only=True))",
            )
        ]
    return [ok("writable", f"{path} and its folder can be written")]


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


CHECKS: Final = EngineChecks(
    label="SQLite",
    version=_version,
    checks=(("journal mode", journal_mode), ("free disk", free_disk), ("writable", writable)),
)
