"""Configuration versions on both engines: a snapshot per write, immutable; get, diff, rollback;
labels and their log; per-version run statistics; retention; delete, clone and import rules."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from conftest import FakeClock, make_config

from acti_store import (
    AgentNotFoundError,
    AgentUpdate,
    ExecutionRecord,
    ImportItem,
    InvalidInputError,
    LabelNotFoundError,
    NoChangesError,
    SqlAgentRepository,
    VersionConflictError,
    VersionNotFoundError,
    open_repository,
)

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head

PROMPT_2 = "You are a lead qualification specialist.\nAssess budget first.\nThen authority."


def _three_versions(repo: SqlAgentRepository) -> None:
    repo.create(make_config(), message="first cut")
    repo.update("lead_qualifier", {"system_prompt": PROMPT_2, "tools": ["crm", "voice"]})
    repo.update("lead_qualifier", AgentUpdate(stratum="EEI", tags=["sales"]), message="third")


def _run(repo: SqlAgentRepository, success: bool = True, duration: float = 1.0) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(), task="t", result_summary="r", success=success,
        duration_seconds=duration,
    )  # fmt: skip


def _rows(repo: SqlAgentRepository, sql: str) -> list[tuple[object, ...]]:
    with repo.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def test_every_write_stores_a_snapshot_with_its_message(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    versions = repo.versions("lead_qualifier")
    assert [(v.version, v.message) for v in versions] == [(3, "third"), (2, None), (1, "first cut")]
    agent = repo.get("lead_qualifier")
    assert versions[0].config == agent.config
    assert versions[0].created_at == agent.metadata.updated_at
    assert versions[2].config == make_config()
    assert versions[1].config.system_prompt == PROMPT_2
    assert [v.version for v in repo.versions("lead_qualifier", limit=2)] == [3, 2]
    assert repo.get_version("lead_qualifier").version == 3  # the current one
    assert repo.get_version("lead_qualifier", 2) == versions[1]


def test_snapshots_are_never_rewritten(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    before = repo.get_version("lead_qualifier", 1)
    repo.update("lead_qualifier", {"description": "Something else entirely now"})
    repo.rollback("lead_qualifier", 2)
    assert repo.get_version("lead_qualifier", 1) == before
    assert [v.version for v in repo.versions("lead_qualifier")] == [5, 4, 3, 2, 1]


def test_a_refused_write_stores_no_snapshot(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    with pytest.raises(VersionConflictError):
        repo.update("lead_qualifier", {"model": "openai:gpt-4o"}, expected_version=1)
    with pytest.raises(InvalidInputError):
        repo.update("lead_qualifier", {"model": "openai:gpt-4o"}, message="x" * 501)
    assert [v.version for v in repo.versions("lead_qualifier")] == [3, 2, 1]


def test_lookups_raise_store_errors(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    with pytest.raises(AgentNotFoundError):
        repo.versions("nobody")
    with pytest.raises(AgentNotFoundError):
        repo.get_version("Not A Name!")
    with pytest.raises(VersionNotFoundError, match=r"no version 9 \(3 stored, versions 1 to 3\)"):
        repo.get_version("lead_qualifier", 9)
    with pytest.raises(LabelNotFoundError, match="has no label 'production'; it has no labels"):
        repo.get_version("lead_qualifier", label="production")
    with pytest.raises(InvalidInputError):
        repo.get_version("lead_qualifier", 1, label="production")
    with pytest.raises(InvalidInputError):
        repo.get_version("lead_qualifier", 0)


def test_diff_reports_each_changed_field(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    diff = repo.diff("lead_qualifier", 1, 3)
    by_field = {c.field: c for c in diff.changes}
    assert list(by_field) == ["system_prompt", "tools", "stratum", "tags"]
    prompt = by_field["system_prompt"]
    assert prompt.old == make_config().system_prompt and prompt.new == PROMPT_2
    assert prompt.unified is not None and prompt.unified[0] == "--- lead_qualifier v1 system_prompt"
    assert "+Then authority." in prompt.unified
    assert (by_field["tools"].added, by_field["tools"].removed) == (["voice"], ["communication"])
    assert (by_field["tags"].added, by_field["tags"].removed) == ([], ["qualification"])
    assert (by_field["stratum"].old, by_field["stratum"].new) == ("RAI", "EEI")
    text = str(diff)
    assert text.splitlines()[0] == "lead_qualifier: version 1 -> 3, 4 fields changed"
    assert "tools: added voice; removed communication" in text
    assert "stratum: 'RAI' -> 'EEI'" in text
    assert str(repo.diff("lead_qualifier", 2, 2)) == "lead_qualifier: version 2 -> 2: no changes"
    with pytest.raises(VersionNotFoundError):
        repo.diff("lead_qualifier", 1, 4)


def test_rollback_writes_a_new_version_equal_to_the_old_one(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    agent = repo.rollback("lead_qualifier", 1, expected_version=3)
    assert agent.metadata.version == 4 and agent.config == make_config()
    assert repo.get("lead_qualifier") == agent
    latest = repo.get_version("lead_qualifier")
    assert (latest.version, latest.message, latest.config) == (4, "rollback to v1", agent.config)
    assert len(repo.versions("lead_qualifier")) == 4  # the old versions stay
    with pytest.raises(NoChangesError):
        repo.rollback("lead_qualifier", 1)
    with pytest.raises(VersionConflictError):
        repo.rollback("lead_qualifier", 2, expected_version=3)
    with pytest.raises(VersionNotFoundError):
        repo.rollback("lead_qualifier", 7)
    assert repo.rollback("lead_qualifier", 2, message="prompt 2 was better").metadata.version == 5
    assert repo.get_version("lead_qualifier").message == "prompt 2 was better"


def test_labels_move_with_a_log(repo: SqlAgentRepository, clock: FakeClock) -> None:
    _three_versions(repo)
    repo.set_label("lead_qualifier", "production", 2, note="reviewed")
    repo.set_label("lead_qualifier", "staging", 3)
    repo.set_label("lead_qualifier", "production", 3, expected_version=2)
    repo.set_label("lead_qualifier", "production", 3)  # already there: nothing to log
    assert repo.labels("lead_qualifier") == {"production": 3, "staging": 3}
    assert repo.get_version("lead_qualifier", label="production").version == 3
    assert repo.get_version("lead_qualifier", 3).labels == ["production", "staging"]
    repo.remove_label("lead_qualifier", "staging", note="done")
    log = repo.label_history("lead_qualifier")
    assert [(m.label, m.from_version, m.to_version, m.note) for m in log] == [
        ("staging", 3, None, "done"),
        ("production", 2, 3, None),
        ("staging", None, 3, None),
        ("production", None, 2, "reviewed"),
    ]
    assert log[0].moved_at > log[-1].moved_at and log[0].moved_at.tzinfo is not None


def test_label_rules_and_conflicts(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    for bad in ("Production", "1st", "", "a" * 33, "prod label"):
        with pytest.raises(InvalidInputError):
            repo.set_label("lead_qualifier", bad, 1)
    repo.set_label("lead_qualifier", "a-b_" + "c" * 28, 1)  # 32 characters: the longest
    with pytest.raises(VersionNotFoundError):
        repo.set_label("lead_qualifier", "production", 4)
    with pytest.raises(VersionConflictError, match="'production' was expected at version 1, but"):
        repo.set_label("lead_qualifier", "production", 2, expected_version=1)  # not set yet
    repo.set_label("lead_qualifier", "production", 1)
    with pytest.raises(VersionConflictError) as info:
        repo.set_label("lead_qualifier", "production", 3, expected_version=2)
    assert (info.value.expected, info.value.actual, info.value.label) == (2, 1, "production")
    with pytest.raises(LabelNotFoundError):
        repo.remove_label("lead_qualifier", "staging")
    assert repo.labels("lead_qualifier")["production"] == 1
    assert len(repo.label_history("lead_qualifier")) == 2


def test_runs_are_counted_per_version(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    repo.record_execution("lead_qualifier", _run(repo, True, 1.0))
    repo.update("lead_qualifier", {"description": "Second version of this agent"})
    repo.record_execution("lead_qualifier", _run(repo, False, 3.0))
    repo.record_execution("lead_qualifier", _run(repo, True, 2.0))
    repo.record_execution("lead_qualifier", _run(repo, True, 4.0), version=1)  # pinned
    for pin in (3, 2**40):  # not a version of this agent
        with pytest.raises(VersionNotFoundError):
            repo.record_execution("lead_qualifier", _run(repo), version=pin)
    for pin in (0, -1, True, "2"):  # not a version number at all: the rule of every integer
        with pytest.raises(InvalidInputError):
            repo.record_execution("lead_qualifier", _run(repo), version=pin)  # type: ignore[arg-type]
    stats = repo.version_stats("lead_qualifier")
    assert sorted(stats) == [1, 2]
    one, two = stats[1], stats[2]
    assert (one.total_executions, one.success_count, one.error_count) == (2, 2, 0)
    assert (two.total_executions, two.success_count, two.error_count) == (2, 1, 1)
    assert (one.average_duration_seconds, two.average_duration_seconds) == (2.5, 2.5)
    assert (one.success_rate, two.success_rate, one.retained) == (1.0, 0.5, 2)
    assert repo.get("lead_qualifier").metadata.execution_count == 4  # the refused run: none


def test_version_stats_stay_exact_past_the_fifty_kept_records(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    for k in range(60):
        repo.record_execution("lead_qualifier", _run(repo, k % 3 != 0, 0.5))
    stats = repo.version_stats("lead_qualifier")[1]
    assert (stats.total_executions, stats.success_count, stats.retained) == (60, 40, 50)
    assert stats.average_duration_seconds == 0.5


def test_prune_keeps_current_and_labelled_versions(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    for k in range(2, 9):
        repo.update("lead_qualifier", {"description": f"Version number {k} of it"})
    repo.record_execution("lead_qualifier", _run(repo), version=2)
    repo.set_label("lead_qualifier", "production", 2)
    assert repo.prune_versions("lead_qualifier", 3) == 3  # 1, 3, 4 go; 5-7 kept; 2, 8 always
    assert [v.version for v in repo.versions("lead_qualifier")] == [8, 7, 6, 5, 2]
    assert repo.prune_versions("lead_qualifier", 0) == 3
    assert [v.version for v in repo.versions("lead_qualifier")] == [8, 2]
    assert repo.prune_versions("lead_qualifier", 0) == 0
    assert repo.version_stats("lead_qualifier")[2].total_executions == 1  # statistics stay
    with pytest.raises(VersionNotFoundError):
        repo.get_version("lead_qualifier", 5)
    with pytest.raises(InvalidInputError):
        repo.prune_versions("lead_qualifier", -1)


def test_keep_versions_prunes_on_every_write(store_url: str, clock: FakeClock) -> None:
    repo = open_repository(store_url, clock=clock, keep_versions=2)
    try:
        repo.create(make_config())
        repo.set_label("lead_qualifier", "production", 1)
        for k in range(2, 7):
            repo.update("lead_qualifier", {"description": f"Version number {k} of it"})
        assert [v.version for v in repo.versions("lead_qualifier")] == [6, 5, 4, 1]
        repo.rollback("lead_qualifier", 4)
        assert [v.version for v in repo.versions("lead_qualifier")] == [7, 6, 5, 1]
    finally:
        repo.close()
    with pytest.raises(InvalidInputError):
        open_repository(store_url, keep_versions=-1)


def test_delete_removes_versions_or_archives_them(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    repo.set_label("lead_qualifier", "production", 2)
    repo.record_execution("lead_qualifier", _run(repo))
    repo.delete("lead_qualifier")
    for table in ("agent_versions", "agent_labels", "agent_label_moves", "agent_version_stats"):
        assert _rows(repo, f"SELECT count(*) FROM {table}") == [(0,)]

    _three_versions(repo)  # the same name again: a new agent, its versions start over
    assert [v.version for v in repo.versions("lead_qualifier")] == [3, 2, 1]
    repo.set_label("lead_qualifier", "production", 2)
    repo.delete("lead_qualifier", delete_history=False)
    archive = "SELECT agent_name, version, message FROM agent_versions_archive ORDER BY id"
    assert [row[1:] for row in _rows(repo, archive)] == [(1, "first cut"), (2, None), (3, "third")]
    assert {row[0] for row in _rows(repo, archive)} == {"lead_qualifier"}
    moves = "SELECT agent_name, to_version FROM agent_label_moves WHERE agent_id IS NULL"
    assert _rows(repo, moves) == [("lead_qualifier", 2)]
    for table in ("agent_versions", "agent_labels"):
        assert _rows(repo, f"SELECT count(*) FROM {table}") == [(0,)]
    repo.create(make_config())
    assert [v.version for v in repo.versions("lead_qualifier")] == [1]  # archive not mixed in


def test_clone_starts_at_version_one_without_labels(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    repo.set_label("lead_qualifier", "production", 2)
    repo.clone("lead_qualifier", "lead_copy")
    (only,) = repo.versions("lead_copy")
    assert (only.version, only.message, only.labels) == (1, "cloned from lead_qualifier v3", [])
    assert only.config == repo.get("lead_copy").config
    assert repo.labels("lead_copy") == {} and repo.label_history("lead_copy") == []


def test_an_imported_agent_gets_one_snapshot_of_its_version(repo: SqlAgentRepository) -> None:
    _three_versions(repo)
    agent = repo.get("lead_qualifier")
    moved = agent.model_copy(update={"name": "imported_one"})
    repo.bulk_put([ImportItem("imported_one", agent=moved)])
    (only,) = repo.versions("imported_one")
    assert (only.version, only.message, only.config) == (3, "imported", moved.config)
    assert only.created_at == agent.metadata.updated_at
    # Replaced by an import: the old versions go with the old agent.
    repo.bulk_put([ImportItem("lead_qualifier", agent=agent)], on_conflict="replace")
    assert [v.version for v in repo.versions("lead_qualifier")] == [3]
