"""One JSON format across engines: a store exported from one engine, imported into another and
exported again gives the same files byte for byte, histories and ``_versions.json`` included
(SQLite → MariaDB, PostgreSQL → MariaDB → PostgreSQL). Each pair runs when its servers' URLs
are set; without them it is skipped with the reason."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FakeClock, fresh_store, make_config

from acti_store import (
    ExecutionRecord,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)

pytestmark = pytest.mark.mysql


def _seed(repo: SqlAgentRepository, clock: FakeClock) -> None:
    """Agents with versions, labels and their log, messages, histories past the FIFO, runs of
    several versions, texts in many scripts and timestamps to the microsecond."""
    repo.create(make_config(), message="first cut")
    repo.update("lead_qualifier", {"description": "Qualifies leads — ünïcödé, 漢字, emoji 🚀"})
    repo.set_label("lead_qualifier", "production", 1, note="approved")
    for run in range(53):
        clock.advance(microseconds=1_234)
        repo.record_execution(
            "lead_qualifier",
            ExecutionRecord(
                timestamp=repo.now(),
                task=f"task {run} \u00e9\u4e2d",
                result_summary="ok" if run % 3 else "failed: timeout",
                success=bool(run % 3),
                duration_seconds=run * 0.1 + 1 / 3,
                tool_calls_count=run,
                error_type=None if run % 3 else "TimeoutError",
            ),
            version=1 if run % 2 else None,
        )
    repo.update("lead_qualifier", {"tools": ["crm"], "tags": []}, message="v3")
    repo.set_label("lead_qualifier", "production", 3, expected_version=1)
    repo.create(make_config("web_researcher", tools=["websearch"], stratum=None))
    clock.advance(days=400)
    repo.create(make_config("idle_agent", tags=["zeta", "alpha"], model="openai:gpt-4o"))


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _round_trip(engines: list[str], tmp_path: Path) -> None:
    """Seed a store on the first engine, then export and import along ``engines``; every
    export must be byte for byte the first."""
    clock = FakeClock(tick=timedelta(microseconds=7))
    exports: list[dict[str, bytes]] = []
    for step, engine in enumerate(engines):
        with fresh_store(engine, tmp_path / f"store_{step}") as url:
            repo = open_repository(url, clock=clock)
            try:
                if step == 0:
                    _seed(repo, clock)
                else:
                    report = import_json(repo, tmp_path / f"export_{step - 1}")
                    assert report.ok, report
                export_json(repo, tmp_path / f"export_{step}", versions=True)
            finally:
                repo.close()
        exports.append(_files(tmp_path / f"export_{step}"))
    first = exports[0]
    assert {"lead_qualifier_history.json", "lead_qualifier_versions.json"} <= set(first)
    for engine, files in zip(engines[1:], exports[1:], strict=True):
        assert sorted(files) == sorted(first), engine
        changed = [name for name in first if files[name] != first[name]]
        assert changed == [], f"{engine} wrote other bytes in {changed}"


def test_sqlite_to_mariadb_and_back_is_byte_identical(tmp_path: Path) -> None:
    _round_trip(["sqlite", "mysql", "sqlite"], tmp_path)


def test_postgresql_to_mariadb_and_back_is_byte_identical(tmp_path: Path) -> None:
    _round_trip(["postgresql", "mysql", "postgresql"], tmp_path)
