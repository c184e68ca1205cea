"""Versions and lifetime counters are 64-bit on both engines: they pass 2,147,483,647 (the largest
32-bit integer), survive an export -> import round trip, and the models accept up to 2**63 - 1."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import make_config
from pydantic import ValidationError

from acti_store import (
    AgentMetadata,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    InvalidInputError,
    SearchQuery,
    SqlAgentRepository,
    VersionNotFoundError,
    export_json,
    import_json,
)
from acti_store.models import COUNTER_MAX, INTEGER_MAX

INT32_MAX = 2**31 - 1
NAME = "lead_qualifier"


def _run(repo: SqlAgentRepository, task: str, *, success: bool = True) -> None:
    repo.record_execution(
        NAME,
        ExecutionRecord(
            timestamp=repo.now(),
            task=task,
            result_summary="done",
            success=success,
            duration_seconds=1.5,
            tool_calls_count=INTEGER_MAX,
        ),
    )


def _set_counters(folder: Path, value: int) -> None:
    """Put every counter and the version of the exported agent at ``value``."""
    agent_file = folder / f"{NAME}.json"
    document = json.loads(agent_file.read_text())
    document["_metadata"].update(
        version=value, execution_count=value, success_count=value - 1, error_count=1
    )
    agent_file.write_text(json.dumps(document))
    history_file = folder / f"{NAME}_history.json"
    history = json.loads(history_file.read_text())
    history["total_executions"] = value
    history_file.write_text(json.dumps(history))


def test_counters_pass_the_32_bit_limit_and_round_trip(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    repo.create(make_config(NAME))
    _run(repo, "first run")
    export_json(repo, tmp_path / "before")
    _set_counters(tmp_path / "before", INT32_MAX)
    report = import_json(repo, tmp_path / "before", on_conflict="replace")
    assert report.ok and report.replaced == [NAME], report.invalid

    _run(repo, "one more run")  # every counter passes 2**31 - 1 here
    repo.update(NAME, AgentUpdate(tags=["sales"]), expected_version=INT32_MAX)

    meta = repo.get(NAME).metadata
    assert (meta.version, meta.execution_count) == (INT32_MAX + 1, INT32_MAX + 1)
    assert (meta.success_count, meta.error_count) == (INT32_MAX, 1)
    assert repo.get_history(NAME).total_executions == INT32_MAX + 1
    assert [a.name for a in repo.search(SearchQuery(min_executions=INT32_MAX + 1))] == [NAME]
    assert repo.search(SearchQuery(min_executions=INT32_MAX + 2)) == []

    export_json(repo, tmp_path / "after")
    exported = json.loads((tmp_path / "after" / f"{NAME}.json").read_text())["_metadata"]
    assert exported["version"] == exported["execution_count"] == INT32_MAX + 1
    repo.delete(NAME)
    report = import_json(repo, tmp_path / "after")
    assert report.ok and report.imported == [NAME], report.invalid

    back = repo.get(NAME)
    assert back.metadata == meta and back.tags == ["sales"]
    assert repo.get_history(NAME).total_executions == INT32_MAX + 1
    repo.update(NAME, AgentUpdate(tags=["crm-sync"]), expected_version=INT32_MAX + 1)
    _run(repo, "after the round trip", success=False)
    meta = repo.get(NAME).metadata
    assert (meta.version, meta.execution_count, meta.error_count) == (INT32_MAX + 2,) * 2 + (2,)

    # search_page's cursor holds a 64-bit count: the page after it is found.
    repo.create(make_config("never_ran"))
    query = SearchQuery(sort_by="execution_count", limit=1)
    first = repo.search_page(query)
    assert [a.name for a in first.agents] == [NAME] and first.next_cursor is not None
    after = repo.search_page(query, first.next_cursor)
    assert [a.name for a in after.agents] == ["never_ran"] and after.total == 2


def test_the_models_take_64_bit_counters_and_32_bit_tool_calls() -> None:
    at = datetime(2025, 1, 9, tzinfo=UTC)
    biggest = AgentMetadata(
        created_at=at,
        updated_at=at,
        version=COUNTER_MAX,
        execution_count=COUNTER_MAX,
        success_count=COUNTER_MAX,
        error_count=COUNTER_MAX,
    )
    assert biggest.version == COUNTER_MAX == 2**63 - 1
    assert ExecutionHistory(agent_name=NAME, total_executions=COUNTER_MAX).total_executions
    assert SearchQuery(min_executions=COUNTER_MAX).min_executions == COUNTER_MAX
    for field in ("version", "execution_count", "success_count", "error_count"):
        with pytest.raises(ValidationError, match=field):
            AgentMetadata(created_at=at, updated_at=at, **{field: COUNTER_MAX + 1})
    with pytest.raises(ValidationError, match="total_executions"):
        ExecutionHistory(agent_name=NAME, total_executions=COUNTER_MAX + 1)
    # One run's tool calls are stored in a 32-bit column on PostgreSQL: its bound stays.
    with pytest.raises(ValidationError, match="tool_calls_count"):
        ExecutionRecord(
            timestamp=at,
            task="t",
            result_summary="r",
            success=True,
            duration_seconds=0,
            tool_calls_count=INTEGER_MAX + 1,
        )


@pytest.mark.timeout(60)
def test_a_run_pinned_to_a_version_past_32_bits_is_recorded_at_once(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    """An import accepts any 64-bit version; a run pinned to one past 2**31 - 1 (and no later
    than the current one) is recorded for it, not retried for ever (issue 25: PostgreSQL looped
    re-reading the agent, past ``lock_timeout``); one past the current version is refused."""
    current = 3_000_000_000
    repo.create(make_config(NAME))
    _run(repo, "first run")
    export_json(repo, tmp_path / "before")
    _set_counters(tmp_path / "before", current)
    assert import_json(repo, tmp_path / "before", on_conflict="replace").ok

    def run(pinned: int) -> None:
        record = ExecutionRecord(
            timestamp=repo.now(), task="t", result_summary="r", success=True, duration_seconds=1
        )
        repo.record_execution(NAME, record, version=pinned)

    for pinned in (current, INT32_MAX + 1, INT32_MAX):
        run(pinned)
    for pinned in (current + 1, COUNTER_MAX):
        with pytest.raises(VersionNotFoundError):
            run(pinned)
    for pinned in (COUNTER_MAX + 1, 0, -1):  # no version can have these numbers
        with pytest.raises(InvalidInputError):
            run(pinned)
    assert repo.get(NAME).metadata.execution_count == current + 3
    runs = {version: stats.total_executions for version, stats in repo.version_stats(NAME).items()}
    assert {v: runs[v] for v in (current, INT32_MAX + 1, INT32_MAX)} == dict.fromkeys(
        (current, INT32_MAX + 1, INT32_MAX), 1
    )


def test_an_import_leaves_room_for_the_next_write(repo: SqlAgentRepository, tmp_path: Path) -> None:
    """A version or counter at 2**63 - 1 is refused at import on every engine (issue 42, item
    6): SQLite's driver raised a raw ``OverflowError`` at the next update, and stored the next
    run's count as a REAL; PostgreSQL and MariaDB refused the write, not the import."""
    repo.create(make_config(NAME))
    _run(repo, "first run")
    export_json(repo, tmp_path)
    agent_file, history_file = tmp_path / f"{NAME}.json", tmp_path / f"{NAME}_history.json"
    agent, history = agent_file.read_text(), history_file.read_text()
    for field in ("version", "execution_count", "success_count", "error_count"):
        _set_counters(tmp_path, COUNTER_MAX - 1)
        document = json.loads(agent_file.read_text())
        document["_metadata"][field] = COUNTER_MAX
        agent_file.write_text(json.dumps(document))
        report = import_json(repo, tmp_path, on_conflict="replace")
        assert report.aborted and report.invalid[f"{NAME}.json"] == (
            f"_metadata.{field}: {COUNTER_MAX} leaves no room for the next write "
            f"(at most {COUNTER_MAX - 1})"
        )
    _set_counters(tmp_path, COUNTER_MAX)
    agent_file.write_text(agent)  # the history's total alone
    assert "total_executions: 9223372036854775807 leaves no room" in " ".join(
        import_json(repo, tmp_path, on_conflict="replace").invalid.values()
    )
    assert repo.get(NAME).metadata.version == 1
    history_file.write_text(history)
    _set_counters(tmp_path, COUNTER_MAX - 1)  # the largest an import takes: one more write fits
    assert import_json(repo, tmp_path, on_conflict="replace").ok
    repo.update(NAME, {"description": "The last version this agent can have"})
    _run(repo, "the last run")
    got = repo.get(NAME).metadata
    assert (got.version, got.execution_count) == (COUNTER_MAX, COUNTER_MAX)
