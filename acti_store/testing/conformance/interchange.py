"""Export and import: ``iter_export``, ``bulk_put`` (all or nothing) and the JSON round trip from
one store to another (``export_json`` then ``import_json``)."""

from __future__ import annotations

from pathlib import Path

from ...errors import AgentExistsError, InvalidInputError
from ...interchange import export_json, import_json
from ...repository import AgentRepository, ImportItem
from ...versioning import VersionLog
from .base import ConformanceBase, make_config, refused, run, snapshot
from .versions import three_versions


class InterchangeRules(ConformanceBase):
    def test_iter_export_streams_every_agent_with_its_history(self, repo: AgentRepository) -> None:
        self.requires("supports_interchange")
        repo.create(make_config("never_run"))
        repo.create(make_config())
        run(repo, "lead_qualifier", "one")
        exported = {agent.name: (agent, history) for agent, history in repo.iter_export(1)}
        assert sorted(exported) == ["lead_qualifier", "never_run"], "EXPORT: every agent"
        assert exported["never_run"][1] is None, "EXPORT: an agent never run has no history"
        history = exported["lead_qualifier"][1]
        assert history is not None and [r.task for r in history.executions] == ["one"], (
            "EXPORT: an agent's history comes with it"
        )
        with_versions = list(repo.iter_export_versions())
        assert [log.versions[0].version for _, _, log in with_versions] == [1, 1], (
            "EXPORT: iter_export_versions gives each agent's version log"
        )

    def test_bulk_put_is_all_or_nothing(self, repo: AgentRepository) -> None:
        self.requires("supports_interchange")
        existing = repo.create(make_config())
        newcomer = existing.model_copy(update={"name": "newcomer"})
        before = snapshot(repo)
        items = [
            ImportItem("newcomer", agent=newcomer),
            ImportItem("lead_qualifier", agent=existing),
        ]
        with refused(AgentExistsError, "IMPORT: on_conflict='fail' and a taken name"):
            repo.bulk_put(items, on_conflict="fail")
        assert snapshot(repo) == before, "IMPORT: a failed bulk_put writes nothing (all or nothing)"
        with refused(InvalidInputError, "IMPORT: an on_conflict policy not in the list"):
            repo.bulk_put(items, on_conflict="overwrite")  # type: ignore[arg-type]
        result = repo.bulk_put(items)
        expected = {"newcomer": "imported", "lead_qualifier": "skipped"}
        assert result.outcomes == expected, f"IMPORT: outcomes: {result.outcomes}"
        assert repo.get("newcomer").metadata == existing.metadata, "IMPORT: metadata kept exactly"
        replaced = existing.model_copy(update={"description": "Replaced by the import"})
        result = repo.bulk_put([ImportItem("lead_qualifier", agent=replaced)], "replace")
        assert result.outcomes == {"lead_qualifier": "replaced"}, "IMPORT: replace outcome"
        found = repo.get("lead_qualifier").description
        assert found == "Replaced by the import", "IMPORT: on_conflict='replace' replaces"

    def test_json_round_trip_between_two_stores(
        self, repo: AgentRepository, tmp_path: Path
    ) -> None:
        self.requires("supports_interchange")
        three_versions(repo)
        repo.set_label("lead_qualifier", "production", 2, note="reviewed")
        for i in range(3):
            run(repo, "lead_qualifier", f"task {i}", success=i != 1)
        repo.clone("lead_qualifier", "lead_copy", tags=["copy"])
        export_json(repo, tmp_path, versions=True)
        other = self.make_repository()
        try:
            report = import_json(other, tmp_path)
            assert not report.invalid, f"EXPORT: the exported files import cleanly: {report}"
            assert other.list_agents() == repo.list_agents(), (
                "EXPORT: an export imported into an empty store gives the same agents, "
                "metadata included"
            )
            for name in repo.list_names():
                mine, theirs = repo.get_history(name, 50), other.get_history(name, 50)
                assert theirs == mine, f"EXPORT: {name}'s history makes the round trip"
                theirs_log = other.version_log(name)
                assert all(move.imported for move in theirs_log.label_history), (
                    f"IMPORT: {name}'s label log is marked imported (history a file brought)"
                )
                assert _as_made_here(theirs_log) == repo.version_log(name), (
                    f"EXPORT: {name}'s versions, labels and label log make the round trip"
                )
        finally:
            other.close()


def _as_made_here(log: VersionLog) -> VersionLog:
    """``log`` with its label moves unmarked as imported: what the exporting store holds."""
    moves = [move.model_copy(update={"imported": False}) for move in log.label_history]
    return log.model_copy(update={"label_history": moves})
