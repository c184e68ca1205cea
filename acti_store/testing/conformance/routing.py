"""The optional group of labels that route and protect (``supports_routing``): weighted
splits, sticky resolution, gates and one-step rollbacks of a label."""

from __future__ import annotations

from ...errors import GateRefusedError, InvalidInputError, VersionConflictError
from ...repository import AgentRepository
from ...routing import pick
from .base import ConformanceBase, make_config, refused

NAME = "lead_qualifier"


def _three_versions(repo: AgentRepository) -> None:
    repo.create(make_config())
    repo.update(NAME, {"model": "openai:gpt-4o"})
    repo.update(NAME, {"model": "openai:gpt-4o-mini"})


class RoutingRules(ConformanceBase):
    def test_a_split_routes_each_key_to_one_version(self, repo: AgentRepository) -> None:
        self.requires("supports_routing")
        _three_versions(repo)
        repo.set_label(NAME, "production", {2: 90, 3: 10})
        assert repo.label_weights(NAME) == {"production": {2: 90, 3: 10}}, "SPLIT: weights"
        assert repo.labels(NAME) == {"production": 2}, "SPLIT: labels() names the main version"
        for key in ("a", "b", "c", "user-17"):
            got = repo.resolve(NAME, "production", key).version
            assert got == pick({2: 90, 3: 10}, NAME, "production", key), (
                "SPLIT: resolve sends a key where routing.pick does"
            )
        assert repo.resolve(NAME).version == 3, "SPLIT: resolve without a label: the current"
        with refused(VersionConflictError, "SPLIT: the expected target is the current split"):
            repo.set_label(NAME, "production", 3, expected_version=2)
        with refused(InvalidInputError, "SPLIT: weights must sum to 100"):
            repo.set_label(NAME, "production", {2: 50, 3: 40})

    def test_a_gate_refuses_and_force_overrides(self, repo: AgentRepository) -> None:
        self.requires("supports_routing")
        _three_versions(repo)
        repo.protect_label(NAME, "production", min_runs=1)
        with refused(GateRefusedError, "GATE: a version without the runs asked for is refused"):
            repo.set_label(NAME, "production", 3)
        assert repo.labels(NAME) == {}, "GATE: a refused move moves nothing"
        repo.set_label(NAME, "production", 3, force=True, note="release")
        move = repo.label_history(NAME)[0]
        assert move.forced and move.note == "release", "GATE: a forced move is logged forced"

    def test_a_rollback_undoes_the_last_move(self, repo: AgentRepository) -> None:
        self.requires("supports_routing")
        _three_versions(repo)
        repo.set_label(NAME, "production", 1)
        repo.set_label(NAME, "production", {1: 50, 2: 50})
        repo.set_label(NAME, "production", 3)
        assert repo.rollback_label(NAME, "production") == {1: 50, 2: 50}, "ROLLBACK: one back"
        assert repo.rollback_label(NAME, "production") == {1: 100}, "ROLLBACK: two back"
        assert repo.label_history(NAME)[0].rollback, "ROLLBACK: logged as a rollback"
