"""Versions: a snapshot per write, never rewritten; diff and rollback; labels and their log;
statistics per version; pruning."""

from __future__ import annotations

from ...errors import (
    InvalidInputError,
    LabelNotFoundError,
    NoChangesError,
    VersionConflictError,
    VersionNotFoundError,
)
from ...repository import AgentRepository
from .base import ConformanceBase, make_config, refused, run

PROMPT_2 = "You are a lead qualification specialist.\nAssess budget first.\nThen authority."


def three_versions(repo: AgentRepository) -> None:
    repo.create(make_config(), message="first cut")
    repo.update("lead_qualifier", {"system_prompt": PROMPT_2, "tools": ["crm", "voice"]})
    repo.update("lead_qualifier", {"stratum": "EEI", "tags": ["sales"]}, message="third")


class VersionRules(ConformanceBase):
    def test_every_write_stores_a_snapshot(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        versions = repo.versions("lead_qualifier")
        found = [(v.version, v.message) for v in versions]
        assert found == [(3, "third"), (2, None), (1, "first cut")], (
            f"VERSIONS: each write stores a snapshot with its message, newest first: {found}"
        )
        agent = repo.get("lead_qualifier")
        assert versions[0].config == agent.config, "VERSIONS: the newest is the current config"
        assert versions[2].config == make_config(), "VERSIONS: version 1 is the created config"
        assert versions[1].config.system_prompt == PROMPT_2, "VERSIONS: version 2 as written"
        limited = [v.version for v in repo.versions("lead_qualifier", limit=2)]
        assert limited == [3, 2], f"VERSIONS: limit keeps the newest: {limited}"
        assert repo.get_version("lead_qualifier").version == 3, "VERSIONS: default: current"
        assert repo.get_version("lead_qualifier", 2) == versions[1], "VERSIONS: by number"

    def test_rollback_writes_a_new_version(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        before = repo.get_version("lead_qualifier", 1)
        agent = repo.rollback("lead_qualifier", 1, expected_version=3)
        assert agent.metadata.version == 4, "VERSIONS: a rollback is a new version (current + 1)"
        assert agent.config == make_config(), "VERSIONS: with the old version's configuration"
        assert repo.get("lead_qualifier") == agent, "VERSIONS: the rollback is stored"
        assert repo.get_version("lead_qualifier", 1) == before, "VERSIONS: never rewritten"
        numbers = [v.version for v in repo.versions("lead_qualifier")]
        assert numbers == [4, 3, 2, 1], f"VERSIONS: the old versions stay: {numbers}"
        with refused(NoChangesError, "VERSIONS: a rollback to the current config"):
            repo.rollback("lead_qualifier", 1)
        with refused(VersionConflictError, "VERSIONS: rollback with a stale expected_version"):
            repo.rollback("lead_qualifier", 2, expected_version=3)
        with refused(VersionNotFoundError, "VERSIONS: a rollback to a version never made"):
            repo.rollback("lead_qualifier", 7)
        again = repo.rollback("lead_qualifier", 2, message="prompt 2 was better")
        assert again.metadata.version == 5, "VERSIONS: a rollback bumps the version"
        message = repo.get_version("lead_qualifier").message
        assert message == "prompt 2 was better", f"VERSIONS: the rollback's message: {message}"

    def test_diff_names_each_changed_field(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        diff = repo.diff("lead_qualifier", 1, 3)
        fields = [c.field for c in diff.changes]
        assert fields == ["system_prompt", "tools", "stratum", "tags"], (
            f"VERSIONS: diff lists each changed field, in the config's order: {fields}"
        )
        tools = next(c for c in diff.changes if c.field == "tools")
        assert (tools.added, tools.removed) == (["voice"], ["communication"]), (
            "VERSIONS: a list's diff says what was added and removed"
        )
        assert repo.diff("lead_qualifier", 2, 2).changes == [], "VERSIONS: no change, no diff"
        with refused(VersionNotFoundError, "VERSIONS: diff to a version never made"):
            repo.diff("lead_qualifier", 1, 4)

    def test_lookups_raise_by_type(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        with refused(VersionNotFoundError, "ERRORS: a version never made: VersionNotFoundError"):
            repo.get_version("lead_qualifier", 9)
        with refused(LabelNotFoundError, "ERRORS: a label not set: LabelNotFoundError"):
            repo.get_version("lead_qualifier", label="production")
        with refused(InvalidInputError, "ERRORS: a version and a label at once"):
            repo.get_version("lead_qualifier", 1, label="production")
        with refused(InvalidInputError, "ERRORS: version 0 is not a version number"):
            repo.get_version("lead_qualifier", 0)

    def test_runs_are_counted_per_version(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        repo.create(make_config())
        run(repo, "lead_qualifier", duration=1.0)
        repo.update("lead_qualifier", {"description": "Second version of this agent"})
        run(repo, "lead_qualifier", success=False, duration=3.0)
        run(repo, "lead_qualifier", duration=2.0)
        run(repo, "lead_qualifier", duration=4.0, version=1)  # pinned
        with refused(VersionNotFoundError, "VERSIONS: a run of a version above the current"):
            run(repo, "lead_qualifier", version=3)
        stats = repo.version_stats("lead_qualifier")
        assert sorted(stats) == [1, 2], f"VERSIONS: statistics per version that ran: {stats}"
        one, two = stats[1], stats[2]
        found = [(s.total_executions, s.success_count, s.error_count) for s in (one, two)]
        assert found == [(2, 2, 0), (2, 1, 1)], (
            f"VERSIONS: each run counts for its version: {found}"
        )
        means = (one.average_duration_seconds, two.average_duration_seconds)
        assert means == (2.5, 2.5), f"VERSIONS: the mean duration per version: {means}"
        total = repo.get("lead_qualifier").metadata.execution_count
        assert total == 4, f"VERSIONS: the refused run is not counted: {total} runs"

    def test_prune_keeps_the_current_and_labelled_versions(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        repo.create(make_config())
        for k in range(2, 9):
            repo.update("lead_qualifier", {"description": f"Version number {k} of it"})
        repo.set_label("lead_qualifier", "production", 2)
        removed = repo.prune_versions("lead_qualifier", 3)
        kept = [v.version for v in repo.versions("lead_qualifier")]
        assert (removed, kept) == (3, [8, 7, 6, 5, 2]), (
            f"VERSIONS: prune keeps the newest, the current and labelled: removed {removed}, "
            f"kept {kept}"
        )
        with refused(VersionNotFoundError, "VERSIONS: a pruned version is not found"):
            repo.get_version("lead_qualifier", 4)
        with refused(InvalidInputError, "ERRORS: prune_versions(keep=-1)"):
            repo.prune_versions("lead_qualifier", -1)

    def test_delete_and_clone_start_versions_over(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        repo.set_label("lead_qualifier", "production", 2)
        repo.clone("lead_qualifier", "lead_copy")
        (only,) = repo.versions("lead_copy")
        assert (only.version, only.labels) == (1, []), "VERSIONS: a clone starts at version 1"
        assert only.message == "cloned from lead_qualifier v3", (
            f"VERSIONS: a clone's snapshot says where it came from, not {only.message!r}"
        )
        assert repo.labels("lead_copy") == {}, "LABELS: a clone has no labels"
        assert repo.label_history("lead_copy") == [], "LABELS: nor label log"
        repo.delete("lead_qualifier")
        repo.create(make_config())
        numbers = [v.version for v in repo.versions("lead_qualifier")]
        assert numbers == [1], f"VERSIONS: an agent made again starts over, not {numbers}"
        assert repo.labels("lead_qualifier") == {}, "LABELS: its labels went with it"


class LabelRules(ConformanceBase):
    def test_labels_move_with_a_log(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        repo.set_label("lead_qualifier", "production", 2, note="reviewed")
        repo.set_label("lead_qualifier", "staging", 3)
        repo.set_label("lead_qualifier", "production", 3, expected_version=2)
        repo.set_label("lead_qualifier", "production", 3)  # already there: nothing to log
        labels = repo.labels("lead_qualifier")
        assert labels == {"production": 3, "staging": 3}, f"LABELS: where they point: {labels}"
        found = repo.get_version("lead_qualifier", label="production").version
        assert found == 3, f"LABELS: get_version by label gives version 3, not {found}"
        on_three = repo.get_version("lead_qualifier", 3).labels
        assert on_three == ["production", "staging"], f"LABELS: a version's labels: {on_three}"
        repo.remove_label("lead_qualifier", "staging", note="done")
        log = [
            (m.label, m.from_version, m.to_version, m.note)
            for m in repo.label_history("lead_qualifier")
        ]
        assert log == [
            ("staging", 3, None, "done"),
            ("production", 2, 3, None),
            ("staging", None, 3, None),
            ("production", None, 2, "reviewed"),
        ], f"LABELS: every set, move and removal is logged, newest first: {log}"

    def test_label_rules_and_conflicts(self, repo: AgentRepository) -> None:
        self.requires("supports_versions")
        three_versions(repo)
        for bad in ("Production", "1st", "", "a" * 33, "prod label"):
            with refused(InvalidInputError, f"LABELS: {bad!r} is not a label name"):
                repo.set_label("lead_qualifier", bad, 1)
        with refused(VersionNotFoundError, "LABELS: a label on a version never made"):
            repo.set_label("lead_qualifier", "production", 4)
        repo.set_label("lead_qualifier", "production", 1)
        with refused(VersionConflictError, "LABELS: expected_version not where it points") as c:
            repo.set_label("lead_qualifier", "production", 3, expected_version=2)
        found = (c.value.expected, c.value.actual, c.value.label)
        assert found == (2, 1, "production"), f"LABELS: the conflict's fields: {found}"
        with refused(LabelNotFoundError, "LABELS: removing a label not set"):
            repo.remove_label("lead_qualifier", "staging")
        assert repo.labels("lead_qualifier") == {"production": 1}, "LABELS: nothing moved"
        moves = len(repo.label_history("lead_qualifier"))
        assert moves == 1, f"LABELS: refused moves are not logged: {moves} moves"
