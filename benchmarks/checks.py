"""Cross-backend correctness checks: a benchmark of wrong answers is worthless.

Every backend's answers are normalised to the contract's documents (outside the timed region) and
compared with the reference backend's, call by call; exported folders are compared file by file,
byte for byte. Each mismatch is kept with enough context to find it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends import StoreSpec, open_backend
from .workload import BenchClock

MAX_REPORTED = 5


def digest(value: Any) -> str:
    """A short stable hash of a JSON-able value."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def first_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """Where two JSON-able values first differ, as ``path: expected != actual``; None if equal."""
    if type(expected) is not type(actual):
        return f"{path or '.'}: {expected!r:.120} != {actual!r:.120}"
    if isinstance(expected, dict):
        for key in expected.keys() | actual.keys():
            if key not in actual or key not in expected:
                return f"{path}.{key}: present in only one"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        if list(expected) != list(actual):
            return f"{path or '.'}: key order {list(expected)} != {list(actual)}"
        return None
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return f"{path or '.'}: {len(expected)} items != {len(actual)} items"
        for i, (a, b) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if expected == actual else f"{path or '.'}: {expected!r:.120} != {actual!r:.120}"


def folder_digest(directory: Path) -> dict[str, str]:
    """``{file: sha256}`` of the visible ``*.json`` files of an export folder."""
    result = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(".json") and not entry.name.startswith("."):
                with open(entry.path, "rb") as src:
                    result[entry.name] = hashlib.sha256(src.read()).hexdigest()
    return result


def file_difference(expected: Path, actual: Path) -> str:
    """How two files differ: the first differing JSON value, else the first differing byte."""
    a, b = expected.read_bytes(), actual.read_bytes()
    try:
        found = first_difference(json.loads(a), json.loads(b))
    except ValueError:
        found = None
    if found:
        return f"{expected.name}: {found}"
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return (
        f"{expected.name}: bytes differ at offset {at}: {a[at : at + 40]!r} != {b[at : at + 40]!r}"
    )


@dataclass
class Mismatch:
    op: str
    backend: str
    detail: str


@dataclass
class Checker:
    """Collects each backend's normalised answers per operation and compares them."""

    reference: str
    #: op -> backend -> {call index: normalised answer}
    answers: dict[str, dict[str, dict[int, Any]]] = field(default_factory=dict)
    #: op -> a description of call ``i`` (to say which call disagreed)
    labels: dict[str, list[str]] = field(default_factory=dict)
    mismatches: list[Mismatch] = field(default_factory=list)
    #: op -> backend -> number of calls compared with the reference
    compared: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, op: str, backend: str, answers: Mapping[int, Any]) -> None:
        self.answers.setdefault(op, {})[backend] = dict(answers)

    def fail(self, op: str, backend: str, detail: str) -> None:
        self.mismatches.append(Mismatch(op, backend, detail))

    def compare(self) -> None:
        """Compare every backend's answers with the reference's, call by call."""
        for op, by_backend in self.answers.items():
            expected = by_backend.get(self.reference)
            if expected is None:
                continue
            for backend, actual in by_backend.items():
                if backend == self.reference:
                    continue
                common = sorted(expected.keys() & actual.keys())
                self.compared.setdefault(op, {})[backend] = len(common)
                if len(common) < len(actual):
                    self.fail(op, backend, "answers for calls the reference did not make")
                bad = [i for i in common if expected[i] != actual[i]]
                for i in bad[:MAX_REPORTED]:
                    label = self.labels.get(op, [])
                    where = label[i] if i < len(label) else f"call {i}"
                    diff = first_difference(expected[i], actual[i]) or "hashes differ"
                    self.fail(op, backend, f"call {i} ({where}): {diff}")
                if len(bad) > MAX_REPORTED:
                    self.fail(op, backend, f"... and {len(bad) - MAX_REPORTED} more calls differ")

    def compare_folders(
        self,
        op: str,
        backend: str,
        expected: tuple[Path, dict[str, str]],
        actual: tuple[Path, dict[str, str]],
    ) -> None:
        """Two export folders (path, ``folder_digest``) must hold the same files, byte for byte."""
        (expected_dir, want), (actual_dir, got) = expected, actual
        self.compared.setdefault(op, {})[backend] = len(want)
        missing = sorted(want.keys() - got.keys())
        extra = sorted(got.keys() - want.keys())
        differ = sorted(f for f in want.keys() & got.keys() if want[f] != got[f])
        for kind, files in (("missing", missing), ("unexpected", extra), ("different", differ)):
            if files:
                shown = ", ".join(files[:MAX_REPORTED])
                more = f" (+{len(files) - MAX_REPORTED} more)" if len(files) > MAX_REPORTED else ""
                self.fail(op, backend, f"{len(files)} {kind} file(s): {shown}{more}")
        if differ:
            self.fail(
                op, backend, file_difference(expected_dir / differ[0], actual_dir / differ[0])
            )

    @property
    def ok(self) -> bool:
        return not self.mismatches


def check_import(
    checker: Checker, op: str, spec: StoreSpec, export_dir: Path, sample: int = 0
) -> None:
    """Imported agents read back (``get``, ``get_history``) must equal their exported files.

    Every agent, or an evenly spread ``sample`` of them when given.
    """
    files = sorted(f for f in folder_digest(export_dir) if not f.endswith("_history.json"))
    if sample:
        files = files[:: max(1, len(files) // sample)]
    backend = open_backend(spec, BenchClock())
    bad = 0
    try:
        for file in files:
            name = file.removesuffix(".json")
            history_file = export_dir / f"{name}_history.json"
            expected = {
                "agent": json.loads((export_dir / file).read_bytes()),
                "history": json.loads(history_file.read_bytes())
                if history_file.exists()
                else {"agent_name": name, "executions": [], "total_executions": 0},
            }
            actual = {
                "agent": backend.agent_document(backend.get(name)),
                "history": backend.history_document(backend.get_history(name, 50)),
            }
            diff = first_difference(expected, actual)
            if diff:
                bad += 1
                if bad <= MAX_REPORTED:
                    checker.fail(f"{op} (read back)", spec.label, f"{name}: {diff}")
    finally:
        backend.close()
    if bad > MAX_REPORTED:
        checker.fail(f"{op} (read back)", spec.label, f"... and {bad - MAX_REPORTED} more")
    checker.compared.setdefault(f"{op} (read back)", {})[spec.label] = len(files)
