"""The ``export``, ``import`` and ``migrate-agents`` commands of ``acti-store``.

Thin: each command opens the store, calls ``acti_store.interchange``, and prints a summary (stdout)
and, for long runs, a progress bar (stderr). When any file was invalid (or an agent could not be
exported) the summary, which lists them, is followed by one ``error: ...`` line and status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Final, TextIO

from ..interchange import (
    DEFAULT_DIRECTORY,
    ImportReport,
    JsonMirror,
    RewriteReport,
    export_json,
    import_json,
    rewrite_documents,
)
from ..repository import SqlAgentRepository
from .options import CommandFailed, add_store_options, open_from_args

#: Runs with fewer items than this show no progress bar unless it is forced.
PROGRESS_MIN_ITEMS: Final = 200
PROGRESS_WIDTH: Final = 30
#: Seconds between two redraws of the bar.
PROGRESS_INTERVAL: Final = 0.1


class ProgressBar:
    """``label [#########.........] 1200/4000  30%  850/s`` on one line, redrawn in place.

    Called as ``bar(done, total)``; draws nothing for runs shorter than ``min_items``.
    """

    def __init__(self, label: str, stream: TextIO, *, min_items: int = PROGRESS_MIN_ITEMS) -> None:
        self.label = label
        self.stream = stream
        self.min_items = min_items
        self._start = time.monotonic()
        self._drawn_at: float | None = None
        self._width = 0  # of the last line drawn, to blank what a shorter one leaves

    def __call__(self, done: int, total: int) -> None:
        if total < max(self.min_items, 1):
            return
        now = time.monotonic()
        if done < total and self._drawn_at is not None and now - self._drawn_at < PROGRESS_INTERVAL:
            return
        self._drawn_at = now
        filled = PROGRESS_WIDTH * done // total
        rate = done / max(now - self._start, 1e-9)
        line = (
            f"{self.label} [{'#' * filled}{'.' * (PROGRESS_WIDTH - filled)}] "
            f"{done}/{total} {100 * done // total:3d}% {rate:,.0f}/s"
        )
        self.stream.write(f"\r{line.ljust(self._width)}")
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self._drawn_at is not None:
            self.stream.write("\n")
            self.stream.flush()


def _progress(args: argparse.Namespace, label: str) -> ProgressBar | None:
    """The bar for this run: forced by ``--progress``, else only when stderr is a terminal."""
    if args.progress is False or (args.progress is None and not sys.stderr.isatty()):
        return None
    return ProgressBar(label, sys.stderr, min_items=0 if args.progress else PROGRESS_MIN_ITEMS)


def _open(args: argparse.Namespace) -> SqlAgentRepository:
    repo = open_from_args(args)
    # Importing a folder must not rewrite that same folder through the mirror.
    if isinstance(repo.mirror, JsonMirror) and repo.mirror.directory == args.directory.resolve():
        repo.mirror = None
    return repo


def _need_folder(directory: Path) -> None:
    if not directory.is_dir():
        raise CommandFailed(f"{directory} is not a directory")


def _check_import(report: ImportReport) -> int:
    """Status 0, or ``CommandFailed`` when the report (printed above) lists invalid files."""
    if report.ok:
        return 0
    done = (
        ("nothing would be imported", "the valid files would be imported")
        if report.dry_run
        else ("nothing was imported", "the valid files were imported")
    )[0 if report.aborted else 1]
    raise CommandFailed(f"{len(report.invalid)} invalid file(s), listed above: {done}")


# --------------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------------


def _cmd_export(args: argparse.Namespace) -> int:
    bar = _progress(args, "export")
    repo = _open(args)
    try:
        report = export_json(
            repo,
            args.directory,
            prune=args.prune,
            durable=args.fsync,
            progress=bar,
            versions=args.versions,
        )
    finally:
        repo.close()
        if bar is not None:
            bar.close()
    print(
        f"Exported {report.agents} agent(s)"
        + (
            f", {report.histories} history file(s) and {report.versions} versions file(s)"
            if args.versions
            else f" and {report.histories} history file(s)"
        )
        + " to "
        f"{report.directory}: {report.written} file(s) written, {report.unchanged} unchanged"
        + (f", {len(report.removed)} removed." if args.prune else ".")
    )
    for file in report.removed:
        print(f"  removed {file}")
    if report.not_exported:
        print(f"Not exported ({len(report.not_exported)}):")
        for name, reason in report.not_exported.items():
            print(f"  - {name}: {reason}")
    if report.not_exported:
        raise CommandFailed(f"{len(report.not_exported)} agent(s) not exported, listed above")
    return 0


def _import(args: argparse.Namespace, label: str) -> ImportReport:
    bar = _progress(args, label)
    repo = _open(args)
    try:
        return import_json(
            repo,
            args.directory,
            on_conflict=args.on_conflict,
            all_or_nothing=not args.partial,
            dry_run=args.dry_run,
            progress=bar,
            allow_incomplete=args.allow_incomplete,
            names=False,  # the counts are printed: memory stays flat however large the folder
            force=args.force,
            note=args.note,
        )
    finally:
        repo.close()
        if bar is not None:
            bar.close()


def _print_import(report: ImportReport) -> None:
    would = "would be " if report.dry_run else ""
    head = "Dry run: nothing written. " if report.dry_run else ""
    counts = report.counts
    print(
        f"{head}{report.files} file(s) in {report.directory}: "
        f"{counts['imported']} agent(s) {would}imported, {counts['replaced']} {would}replaced, "
        f"{counts['skipped']} {would}skipped (already in the store), "
        f"{len(report.invalid)} invalid file(s)."
    )
    if report.incomplete_export:
        print("Warning: an export into this folder did not finish; it may lack some agents.")
    if counts["upgraded"]:
        print(f"Upgraded from v1: {counts['upgraded']} agent(s).")
    if counts["configs"]:
        print(
            f"Written by hand (no _metadata): {counts['configs']} agent(s), "
            "given the store's metadata (version 1) where imported."
        )
    if report.invalid:
        print(f"Invalid files ({len(report.invalid)}):")
        for file, reason in report.invalid.items():
            print(f"  - {file}: {reason}")
    if report.aborted:
        print(
            "Nothing "
            + ("would be " if report.dry_run else "was ")
            + "imported: fix the files above, or use --partial to import the valid ones."
        )


def _cmd_import(args: argparse.Namespace) -> int:
    _need_folder(args.directory)
    report = _import(args, "import")
    _print_import(report)
    return _check_import(report)


def _print_rewrite(report: RewriteReport, *, dry_run: bool) -> None:
    if not report.rewritten:
        print("Every valid file is already in the v2 format: nothing to rewrite.")
        return
    if dry_run:
        print(f"Would rewrite {len(report.rewritten)} file(s) as v2 (after a backup):")
    else:
        print(f"Rewrote {len(report.rewritten)} file(s) as v2; originals in {report.backup}:")
    for file in report.rewritten:
        print(f"  - {file}")


def _cmd_migrate_agents(args: argparse.Namespace) -> int:
    _need_folder(args.directory)
    report = _import(args, "migrate")
    _print_import(report)
    if args.rewrite and not report.aborted:
        _print_rewrite(
            rewrite_documents(args.directory, dry_run=args.dry_run), dry_run=args.dry_run
        )
    return _check_import(report)


# --------------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, read_only: bool = False) -> None:
    parser.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=DEFAULT_DIRECTORY,
        help=f"folder of agent and history JSON files (default: {DEFAULT_DIRECTORY})",
    )
    add_store_options(parser, read_only=read_only)
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar on stderr (default: for long runs when stderr is a terminal)",
    )


def _import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--on-conflict",
        choices=("skip", "replace", "fail"),
        default="skip",
        help="agents already in the store: keep them (skip, the default), replace them with the "
        "file's, or fail without importing anything",
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="import the valid files and report the others (default: one invalid file imports "
        "nothing)",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="import a folder whose export did not finish (killed part way: it may hold only "
        "some of the agents); refused by default",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="report what would happen; write nothing"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --on-conflict replace: replace agents even where that moves a protected "
        "label or drops or loosens its gate (needs --note; the label log marks the moves forced)",
    )
    parser.add_argument(
        "--note", default=None, help="why the import is forced (kept in the label log)"
    )


def register(subparsers: Any) -> None:
    """Add export, import and migrate-agents to the command line."""
    export = subparsers.add_parser(
        "export", help="write every agent to JSON files in the outputs/agents format"
    )
    _common(export, read_only=True)
    export.add_argument(
        "--prune", action="store_true", help="remove the files of agents that no longer exist"
    )
    export.add_argument(
        "--fsync",
        action="store_true",
        help="fsync every file before it replaces the old one (safe across power failures)",
    )
    export.add_argument(
        "--versions",
        action="store_true",
        help="also write {name}_versions.json per agent: its versions, labels and label log",
    )
    export.set_defaults(func=_cmd_export)

    imports = subparsers.add_parser(
        "import", help="import a folder of v1/v2 agent JSON files (one transaction)"
    )
    _common(imports)
    _import_options(imports)
    imports.set_defaults(func=_cmd_import)

    migrate = subparsers.add_parser(
        "migrate-agents",
        help="bulk v1 -> v2 migration: import a folder of agent files, optionally rewrite them",
    )
    _common(migrate)
    _import_options(migrate)
    migrate.add_argument(
        "--rewrite",
        action="store_true",
        help="also rewrite the files in place as v2, after copying them to DIR/.backup-<time>/",
    )
    migrate.set_defaults(func=_cmd_migrate_agents)
