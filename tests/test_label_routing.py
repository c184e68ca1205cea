"""Labels that route and protect, on every engine: weighted splits, sticky resolution, version
comparison, gated and forced moves, and one-step rollbacks of a label; the races of movers and
of runs against a gate with several processes (``workers.routing``)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage
from test_execution import scripted
from workers import routing

from acti_store import (
    AgentUpdate,
    ConfigCache,
    ExecutionRecord,
    GateRefusedError,
    InvalidInputError,
    LabelNotFoundError,
    SqlAgentRepository,
    VersionConflictError,
    VersionNotFoundError,
)
from acti_store.engine import make_engine
from acti_store.execution.runner import AgentRunner
from acti_store.revisions import upgrade_schema
from acti_store.routing import difference_interval, pick, wilson

NAME = "support_bot"
KEYS = [f"user-{i}" for i in range(10_000)]


def _with_versions(repo: SqlAgentRepository, count: int) -> None:
    repo.create(make_config(NAME))
    for k in range(2, count + 1):
        repo.update(NAME, AgentUpdate(description=f"Version {k} of the support bot"))


def _runs(repo: SqlAgentRepository, version: int, successes: int, failures: int) -> None:
    for i in range(successes + failures):
        repo.record_execution(
            NAME,
            ExecutionRecord(
                timestamp=repo.now(),
                task=f"task {i}",
                result_summary="ok" if i < successes else "failed",
                success=i < successes,
                duration_seconds=2.0 if i < successes else 4.0,
            ),
            version=version,
        )


# -- 1. weighted labels ---------------------------------------------------------------------------


def test_a_split_is_stored_read_logged_and_kept_from_pruning(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 5)
    repo.set_label(NAME, "production", 3)
    repo.set_label(NAME, "production", {3: 90, 4: 10}, expected_version=3, note="canary")
    repo.set_label(NAME, "staging", 5)

    assert repo.label_weights(NAME) == {"production": {3: 90, 4: 10}, "staging": {5: 100}}
    assert repo.labels(NAME) == {"production": 3, "staging": 5}  # a split's main version
    assert repo.get_version(NAME, label="production").version == 3
    move = repo.label_history(NAME)[1]
    assert (move.from_version, move.to_version, move.from_weights, move.to_weights) == (
        3,
        3,
        None,
        {3: 90, 4: 10},
    )
    assert move.before == {3: 100} and move.after == {3: 90, 4: 10} and move.note == "canary"
    assert repo.prune_versions(NAME, keep=0) == 2  # 1 and 2: 4 has a share
    assert [v.version for v in repo.versions(NAME)] == [5, 4, 3]
    assert [c.kind for c in repo.changes()][-3:] == ["label_set", "label_set", "versions_pruned"]


def test_a_split_move_checks_the_expected_split(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", {3: 90, 4: 10})
    with pytest.raises(VersionConflictError) as raised:
        repo.set_label(NAME, "production", {3: 50, 4: 50}, expected_version=3)
    assert "was expected at version 3, but it points at the split 3: 90 %, 4: 10 %" in str(
        raised.value
    )
    repo.set_label(NAME, "production", 4, expected_version={4: 10, 3: 90})
    assert repo.label_weights(NAME) == {"production": {4: 100}}
    with pytest.raises(InvalidInputError, match="these sum to 110"):
        repo.set_label(NAME, "production", {3: 90, 4: 20})
    assert len(repo.label_history(NAME)) == 2


# -- 2. sticky resolution -------------------------------------------------------------------------


def test_shares_over_10000_keys_are_within_2_percent_of_the_weights() -> None:
    for weights in ({3: 90, 4: 10}, {3: 50, 4: 50}, {1: 20, 2: 30, 3: 50}):
        shares = Counter(pick(weights, NAME, "production", key) for key in KEYS)
        for version, weight in weights.items():
            assert abs(shares[version] / len(KEYS) * 100 - weight) <= 2, (weights, shares)


def test_moving_90_10_to_80_20_moves_only_the_keys_that_must_move() -> None:
    before = {key: pick({3: 90, 4: 10}, NAME, "production", key) for key in KEYS}
    after = {key: pick({3: 80, 4: 20}, NAME, "production", key) for key in KEYS}
    moved = [key for key in KEYS if before[key] != after[key]]
    assert all(before[key] == 3 and after[key] == 4 for key in moved)  # none moves back
    assert abs(len(moved) / len(KEYS) - 0.10) <= 0.02
    # another label or agent spreads the same keys differently
    other = {key: pick({3: 90, 4: 10}, NAME, "staging", key) for key in KEYS}
    assert other != before


def test_resolve_is_sticky_per_key_random_without_and_current_without_label(
    repo: SqlAgentRepository,
) -> None:
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", {3: 90, 4: 10})
    for key in KEYS[:200]:
        assert repo.resolve(NAME, "production", key).version == pick(
            {3: 90, 4: 10}, NAME, "production", key
        )
        assert repo.resolve(NAME, "production", key) == repo.resolve(NAME, "production", key)
    random.seed(7)
    drawn = Counter(repo.resolve(NAME, "production").version for _ in range(1_000))
    assert set(drawn) == {3, 4} and 40 <= drawn[4] <= 160
    assert repo.resolve(NAME).version == 4  # no label: the current version
    resolved = repo.resolve(NAME, "production", "user-1")
    assert resolved.labels == (["production"] if resolved.version == 3 else [])
    with pytest.raises(LabelNotFoundError, match="no label 'canary'; its labels: production"):
        repo.resolve(NAME, "canary", "user-1")


async def test_a_run_by_label_and_key_runs_and_counts_the_resolved_version(
    repo: SqlAgentRepository,
) -> None:
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", {3: 50, 4: 50})
    key = next(k for k in KEYS if pick({3: 50, 4: 50}, NAME, "production", k) == 4)
    runner = AgentRunner(repo, model=lambda _model: scripted(AIMessage("Qualified.")))
    report = await runner.run(NAME, "Qualify this lead", label="production", key=key)
    assert report.success, report
    stats = repo.version_stats(NAME)
    assert set(stats) == {4} and stats[4].total_executions == 1


async def test_a_run_of_the_version_a_cache_resolved_reads_nothing_and_counts_it(
    repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app resolves the label once (``ConfigCache.get``) and runs what it got: the runner
    reads nothing more, runs that version's configuration and counts the run for it."""
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", 3)
    fifth = "You are version five of the support bot; answer every ticket."
    repo.update(NAME, AgentUpdate(system_prompt=fifth))
    with ConfigCache(repo) as cache:
        production = cache.get(NAME, label="production")
    for read in ("get", "get_version", "resolve"):
        monkeypatch.setattr(repo, read, lambda *args, **kwargs: pytest.fail("read the store"))
    model = scripted(AIMessage("Qualified."))
    runner = AgentRunner(repo, model=lambda _model: model)
    report = await runner.run(production, "Qualify this lead")
    assert report.success, report
    shown = " ".join(str(message.content) for message in model.calls[0])
    assert make_config(NAME).system_prompt in shown and "version five" not in shown
    with pytest.raises(InvalidInputError, match="already pinned"):
        await runner.run(production, "Qualify this lead", label="production")
    monkeypatch.undo()
    stats = repo.version_stats(NAME)
    assert set(stats) == {3} and stats[3].total_executions == 1


# -- 3. comparing two versions --------------------------------------------------------------------


def test_compare_counts_every_run_with_wilson_intervals(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 4)
    _runs(repo, 3, successes=48, failures=12)  # 60 runs: more than the 50 kept
    _runs(repo, 4, successes=57, failures=3)
    result = repo.compare_versions(NAME, 3, 4)
    assert (result.a.runs, result.a.successes, result.b.runs, result.b.successes) == (
        60,
        48,
        60,
        57,
    )
    assert result.a.success_rate == 0.8 and result.b.success_rate == 0.95
    assert result.a.interval == pytest.approx((0.6822, 0.8818), abs=1e-4)
    assert result.a.mean_duration == pytest.approx((48 * 2 + 12 * 4) / 60)
    assert result.difference == pytest.approx(0.15)
    low, high = result.difference_interval or (0, 0)
    assert low < 0.15 < high and low > 0.0  # 4 is better, and the interval says so
    assert (low, high) == difference_interval((48, 60), (57, 60))
    empty = repo.compare_versions(NAME, 1, 3)
    assert empty.a.runs == 0 and empty.a.interval == (0.0, 1.0) and empty.difference is None
    with pytest.raises(VersionNotFoundError, match="no version 5"):
        repo.compare_versions(NAME, 3, 5)


def test_wilson_matches_the_published_figures() -> None:
    # Newcombe (1998), table I: 81 of 263 -> 0.2553 to 0.3662; 0 of 10 -> 0 to 0.2775
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    # Newcombe (1998b), example (a): 56/70 - 48/80 -> 0.0524 to 0.3339 (method 10)
    assert difference_interval((48, 80), (56, 70)) == pytest.approx((0.0524, 0.3339), abs=1e-4)


# -- 4. gates -------------------------------------------------------------------------------------


def test_a_gate_refuses_a_version_short_of_it_and_moves_nothing(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 4)
    _runs(repo, 3, successes=60, failures=0)
    _runs(repo, 4, successes=8, failures=2)
    repo.set_label(NAME, "production", 3)
    repo.protect_label(NAME, "production", min_runs=50, min_success_rate=0.95)
    log = repo.label_history(NAME)
    with pytest.raises(GateRefusedError) as raised:
        repo.set_label(NAME, "production", {3: 90, 4: 10})
    error = raised.value
    assert (error.name, error.label, [c.version for c in error.checks]) == (
        NAME,
        "production",
        [4],
    )
    assert "version 4 has 10 runs (at least 50 wanted), a success rate of 80.0%" in str(error)
    assert "force=True" in str(error)
    assert repo.label_weights(NAME) == {"production": {3: 100}} and repo.label_history(NAME) == log
    for blank in (None, "", "   ", "\t\n"):  # a note of only white space is no note
        with pytest.raises(InvalidInputError, match="a forced move must say why"):
            repo.set_label(NAME, "production", 4, force=True, note=blank)
        with pytest.raises(InvalidInputError, match="a forced move must say why"):
            repo.rollback_label(NAME, "production", force=True, note=blank)
    assert repo.label_weights(NAME) == {"production": {3: 100}} and repo.label_history(NAME) == log

    repo.set_label(NAME, "production", {3: 90, 4: 10}, force=True, note="hotfix for a customer")
    forced = repo.label_history(NAME)[0]
    assert forced.forced and forced.note == "hotfix for a customer"
    assert forced.checks is not None and [c.passed for c in forced.checks] == [True, False]
    _runs(repo, 4, successes=60, failures=0)  # now 68 of 70
    repo.set_label(NAME, "production", 4)
    passed = repo.label_history(NAME)[0]
    assert not passed.forced and passed.checks is not None and passed.checks[0].passed
    assert (passed.checks[0].runs, passed.checks[0].successes) == (70, 68)


def test_gates_are_kept_replaced_and_removed(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 2)
    repo.protect_label(NAME, "production", max_mean_duration=3.0)  # before the label exists
    with pytest.raises(GateRefusedError, match="no duration yet"):
        repo.set_label(NAME, "production", 2)
    _runs(repo, 2, successes=3, failures=1)  # mean (3*2 + 4) / 4 = 2.5 s
    repo.set_label(NAME, "production", 2)
    repo.protect_label(NAME, "production", max_mean_duration=2.0)  # replaces the gate
    assert repo.label_gates(NAME)["production"].max_mean_duration == 2.0
    with pytest.raises(
        GateRefusedError, match=r"needs a mean duration of at most 2 s\): version 1"
    ):
        repo.set_label(NAME, "production", 1)
    repo.protect_label(NAME, "canary", max_mean_duration=2.0)
    with pytest.raises(GateRefusedError, match=r"a mean duration of 2\.50 s \(at most 2 s"):
        repo.set_label(NAME, "canary", 2)
    assert repo.unprotect_label(NAME, "production") is True
    assert repo.unprotect_label(NAME, "production") is False
    repo.set_label(NAME, "production", 1)
    assert list(repo.label_gates(NAME)) == ["canary"]
    assert repo.label_history(NAME)[0].checks is None


def test_split_movers_racing_in_processes_exactly_one_wins(store_url: str) -> None:
    assert routing.split_race(store_url, processes=4, rounds=6) == []


def test_runs_recorded_meanwhile_cannot_slip_a_failing_version_through(store_url: str) -> None:
    assert routing.gated_runs_race(store_url, failures=40) == []


# -- 5. rollback of a label -----------------------------------------------------------------------


def test_rollback_walks_the_log_back_one_move_at_a_time(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", 2)
    repo.set_label(NAME, "production", {2: 90, 3: 10})
    repo.set_label(NAME, "production", 3)
    assert repo.rollback_label(NAME, "production") == {2: 90, 3: 10}
    assert repo.rollback_label(NAME, "production", note="back to 2") == {2: 100}
    rolled = repo.label_history(NAME)[0]
    assert rolled.rollback and rolled.note == "back to 2" and rolled.before == {2: 90, 3: 10}
    repo.set_label(NAME, "production", 4)
    assert repo.rollback_label(NAME, "production") == {2: 100}  # undoes the move to 4
    assert repo.rollback_label(NAME, "production") is None  # undoes the first set: removed
    assert repo.labels(NAME) == {}
    with pytest.raises(InvalidInputError, match="has no move to roll back"):
        repo.rollback_label(NAME, "production")
    assert [c.kind for c in repo.changes()][-2:] == ["label_set", "label_removed"]


def test_a_rollback_goes_through_the_gate(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 3)
    _runs(repo, 3, successes=5, failures=0)
    repo.set_label(NAME, "production", 2)
    repo.set_label(NAME, "production", 3)
    repo.protect_label(NAME, "production", min_runs=5)
    with pytest.raises(GateRefusedError, match="version 2 has 0 runs"):
        repo.rollback_label(NAME, "production")
    assert repo.labels(NAME) == {"production": 3}
    assert repo.rollback_label(NAME, "production", force=True, note="incident 42") == {2: 100}
    assert repo.label_history(NAME)[0].forced


def test_a_deleted_agent_takes_its_splits_and_gates(repo: SqlAgentRepository) -> None:
    _with_versions(repo, 2)
    repo.set_label(NAME, "production", {1: 50, 2: 50})
    repo.protect_label(NAME, "production", min_runs=1)
    repo.delete(NAME)
    _with_versions(repo, 2)
    assert repo.label_weights(NAME) == {} and repo.label_gates(NAME) == {}


def test_the_downgrade_keeps_each_split_label_on_its_main_version(
    repo: SqlAgentRepository,
) -> None:
    _with_versions(repo, 4)
    repo.set_label(NAME, "production", {3: 70, 4: 30})
    repo.protect_label(NAME, "production", min_runs=1)
    repo.set_label(NAME, "production", {3: 40, 4: 60}, force=True, note="release")
    engine = make_engine(repo.engine.url)
    try:
        assert upgrade_schema(engine, "0010_changes")[1] == {"0010_changes"}
        assert upgrade_schema(engine, "head")[1] == {"0015_tenant_logins"}
    finally:
        engine.dispose()
    assert repo.labels(NAME) == {"production": 4}
    assert repo.label_weights(NAME) == {"production": {4: 100}}  # the split is gone
    assert repo.label_gates(NAME) == {}
    moves = repo.label_history(NAME)
    assert [(m.from_version, m.to_version, m.forced) for m in moves] == [
        (3, 4, False),
        (None, 3, False),
    ]
