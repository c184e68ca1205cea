"""What ``acti-store doctor`` reports: one ``Finding`` per check, and how a set of them reads;
what an engine's checks are given (``Target``) and are (``EngineChecks``).

A finding is ``ok`` (nothing to do), a ``warning`` (the store works, but something an operator
should know or change) or an ``error`` (something is wrong: the doctor exits 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL

Status = Literal["ok", "warning", "error"]
"""How a check came out: nothing to do, something to know, something wrong."""

#: The statuses, mildest first (the width of the status column of ``Finding.line``).
STATUSES: Final[tuple[Status, ...]] = ("ok", "warning", "error")


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's result: what was checked (``check``, e.g. ``revision``), how it came out, what
    was found (``message``) and, when there is something to do, what (``advice``)."""

    check: str
    status: Status
    message: str
    advice: str | None = None

    def line(self) -> str:
        """The finding on one line: ``error   revision: ... -> run acti-store migrate``."""
        width = max(len(status) for status in STATUSES)
        text = f"{self.status:<{width}} {self.check}: {self.message}"
        return text if self.advice is None else f"{text} -> {self.advice}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON's object: ``check``, ``status``, ``message``, ``advice``."""
        return asdict(self)


def ok(check: str, message: str, advice: str | None = None) -> Finding:
    """A check that found nothing to do (``advice``: a note, if any)."""
    return Finding(check, "ok", message, advice)


def warning(check: str, message: str, advice: str) -> Finding:
    """A check that found something to know or change; the store works."""
    return Finding(check, "warning", message, advice)


def error(check: str, message: str, advice: str) -> Finding:
    """A check that found something wrong."""
    return Finding(check, "error", message, advice)


def healthy(findings: Sequence[Finding]) -> bool:
    """Whether no finding is an error (warnings do not count)."""
    return all(finding.status != "error" for finding in findings)


def report(findings: Sequence[Finding]) -> dict[str, Any]:
    """The findings as ``--json`` prints them: ``{"ok": bool, "findings": [...]}``."""
    return {"ok": healthy(findings), "findings": [f.as_dict() for f in findings]}


@dataclass(frozen=True, slots=True)
class Target:
    """The store under examination, as the engine's checks get it: its engine (read-only,
    made by ``make_engine``), its URL, what the options chose, and how a printed command names
    the store (``command``)."""

    engine: Engine
    url: URL
    schema: str | None
    #: Whether the store is configured for a pooler in transaction mode (``resolve_pooler``).
    pooled: bool
    replicas: tuple[str, ...]
    #: The ``--url`` and ``--schema`` options that chose the store (none: the environment did).
    options: tuple[str, ...]

    def command(self, *words: str) -> str:
        """``acti-store`` with the options that chose the store, then ``words``: a command a
        person can run as printed (a password stays hidden: ``***``)."""
        return " ".join(("acti-store", *self.options, *words))


Check = Callable[[Target], list[Finding]]
"""One of an engine's checks: its findings (a driver error it meets becomes one, by name)."""


@dataclass(frozen=True, slots=True)
class EngineChecks:
    """What the doctor knows of one engine: its name for people, how its server tells its
    version, and its own checks by name (run in order, each on its own)."""

    label: str
    version: Callable[[Connection], str]
    checks: tuple[tuple[str, Check], ...]
