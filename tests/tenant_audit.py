"""A pytest plugin: every statement the repository sends to a driver during the test session
carries the tenant (issue 28, §3), checked at the session's end.

``sqlexec.Cursor`` is the one way the repository's statements reach a driver: while the session
runs, each ``Cursor`` holds its DBAPI cursor through ``_Recording``, which keeps the distinct SQL
texts sent (``execute``, ``executemany``, psycopg's ``copy``; the cursors ``Cursor`` opens on
the same connection too), and ``sqlexec.Compiled`` the names of each compiled statement's
parameters (``NAMES``: a positional ``agents.tenant = ?`` carries the tenant only if that
parameter is ``tenant``; a ``text()`` is held to it as any statement is). At the end they are
checked by ``tenant_sql.problems`` (which shares no code with ``acti_store.tenancy``); a
statement that breaks the rule fails the session (exit status 1) and is printed. Statements of
child processes (the multi-process tests) are not seen.

Under pytest-xdist each worker checks its own statements and writes what it found to a file in
the directory the controller names in ``AUDIT_DIR_ENV`` (set in ``pytest_configure``, before the
workers start); the controller reads them all in ``pytest_sessionfinish``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tenant_sql

from acti_store import sqlexec
from acti_store.schema import Base

#: The directory workers write their findings to (set by the controller).
AUDIT_DIR_ENV = "ACTI_STORE_TENANT_AUDIT_DIR"

#: The distinct SQL texts sent through ``sqlexec.Cursor`` in this process.
SEEN: set[str] = set()
#: The parameter names, in order, of each SQL text ``sqlexec`` compiled in this process.
NAMES: dict[str, tuple[str, ...]] = {}


class _Recording:
    """A DBAPI cursor (or connection) that keeps the SQL it is sent, else the same."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(sql, str):
            SEEN.add(sql)
        return self._inner.execute(sql, *args, **kwargs)

    def executemany(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(sql, str):
            SEEN.add(sql)
        return self._inner.executemany(sql, *args, **kwargs)

    def copy(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(sql, str):
            SEEN.add(sql)
        return self._inner.copy(sql, *args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> _Recording:
        return _Recording(self._inner.cursor(*args, **kwargs))

    @property
    def connection(self) -> _Recording:
        return _Recording(self._inner.connection)

    def __enter__(self) -> _Recording:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._inner.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_inner":
            object.__setattr__(self, name, value)
        else:
            setattr(self._inner, name, value)


_original_init = sqlexec.Cursor.__init__
_original_post_init = sqlexec.Compiled.__post_init__


def _naming_post_init(self: sqlexec.Compiled) -> None:
    _original_post_init(self)
    NAMES[self.sql] = self.names


def _recording_init(self: sqlexec.Cursor, cursor: Any, *args: Any, **kwargs: Any) -> None:
    _original_init(self, _Recording(cursor), *args, **kwargs)


def violations(statements: set[str]) -> dict[str, list[str]]:
    """Each of ``statements`` that breaks the rule, with what breaks it."""
    tables = tenant_sql.tenant_tables(Base.metadata)
    found = {}
    for sql in sorted(statements):
        try:
            problems = tenant_sql.problems(sql, tables, NAMES.get(sql))
        except ValueError as exc:  # SQL the check cannot read: a finding too
            problems = [f"unreadable: {exc}"]
        if problems:
            found[sql] = problems
    return found


def pytest_configure(config: pytest.Config) -> None:
    sqlexec.Cursor.__init__ = _recording_init  # type: ignore[method-assign]
    sqlexec.Compiled.__post_init__ = _naming_post_init  # type: ignore[method-assign]
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        folder = tempfile.mkdtemp(prefix="tenant-audit-")
        os.environ[AUDIT_DIR_ENV] = folder
        config.stash[_FOLDER] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    sqlexec.Cursor.__init__ = _original_init  # type: ignore[method-assign]
    sqlexec.Compiled.__post_init__ = _original_post_init  # type: ignore[method-assign]
    if (folder := config.stash.get(_FOLDER, None)) is not None:
        shutil.rmtree(folder, ignore_errors=True)


_FOLDER = pytest.StashKey[str]()
_FINDINGS = pytest.StashKey[tuple[int, dict[str, list[str]]]]()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    found = violations(SEEN)
    if hasattr(config, "workerinput"):
        folder = os.environ.get(AUDIT_DIR_ENV)
        if folder:
            worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
            report = {"statements": len(SEEN), "violations": found}
            Path(folder, f"{worker}.json").write_text(json.dumps(report))
        return
    statements = len(SEEN)
    folder = config.stash.get(_FOLDER, None)
    for report_file in sorted(Path(folder).glob("*.json")) if folder else []:
        report = json.loads(report_file.read_text())
        statements += report["statements"]
        found.update(report["violations"])
    config.stash[_FINDINGS] = (statements, found)
    if found:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if (findings := config.stash.get(_FINDINGS, None)) is None:
        return
    statements, found = findings
    if not found:
        if statements:
            terminalreporter.write_line(
                f"tenant audit: {statements} distinct statements checked, each carries the tenant"
            )
        return
    terminalreporter.section("tenant audit: statements without the tenant", red=True)
    for sql, problems in found.items():
        terminalreporter.write_line(f"{sql}\n    -> {'; '.join(problems)}")
    terminalreporter.write_line(f"tenant audit: {len(found)} of {statements} statements FAILED")
