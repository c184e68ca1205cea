"""Rewriting a folder's files in place as canonical v2 documents, after a backup."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..documents import DocumentError, agent_document, dumps, history_document, loads
from ..models import ExecutionHistory, utc_now
from ..validation import flag, folder_path
from .files import parse
from .folder import Folder, new_backup


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
    dry_run = flag(dry_run, "dry_run")
    folder_path(directory, "directory")
    report = RewriteReport(Path(directory))
    backup: Folder | None = None
    with ExitStack() as stack:
        folder = stack.enter_context(Folder(report.directory))
        stack.enter_context(folder.locked())
        for file in folder.json_names():
            try:
                data = folder.read(file)
                parsed = parse(file, loads(data))
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
                backup = stack.enter_context(new_backup(folder, now()))
                report.backup = backup.path
            backup.write(file, data)
            folder.write(file, text)
    return report
