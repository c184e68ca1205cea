"""The rules of create, update, clone and delete, and the errors they raise, by type."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ...errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    ArgumentTypeError,
    InvalidAgentError,
    InvalidInputError,
    NoChangesError,
    VersionConflictError,
)
from ...models import BUILDER, DESCRIPTION_MAX_LENGTH, AgentUpdate
from ...repository import AgentRepository
from .base import ConformanceBase, make_config, refused, run, snapshot


class CreateRules(ConformanceBase):
    def test_create_starts_at_version_one_with_fresh_metadata(self, repo: AgentRepository) -> None:
        before = repo.now()
        created = repo.create(make_config(description="Qualifies leads — naïve ünïcode 日本"))
        stored = repo.get("lead_qualifier")
        assert stored == created, "CREATE: get returns the agent exactly as create returned it"
        meta = stored.metadata
        assert meta.version == 1, f"CREATE: a new agent is at version 1, not {meta.version}"
        counters = (meta.execution_count, meta.success_count, meta.error_count)
        assert counters == (0, 0, 0), f"CREATE: a new agent's counters are 0, not {counters}"
        assert meta.created_at == meta.updated_at, "CREATE: created_at and updated_at are equal"
        assert meta.created_at >= before, "CREATE: created_at is the store's clock at creation"
        assert meta.created_at.utcoffset() == timedelta(0), "CREATE: times are aware UTC"
        assert meta.last_executed_at is None, "CREATE: a new agent has no last_executed_at"
        assert meta.builder == BUILDER, f"CREATE: metadata.builder is {BUILDER!r}"
        assert stored.description == "Qualifies leads — naïve ünïcode 日本", "CREATE: text kept"
        assert stored.config == make_config(description=stored.description), (
            "CREATE: every configuration field is stored as given"
        )

    def test_create_accepts_a_mapping_of_fields(self, repo: AgentRepository) -> None:
        created = repo.create(dict(make_config("from_mapping")))
        assert created.name == "from_mapping" and repo.exists("from_mapping"), (
            "CREATE: a mapping of AgentConfig's fields is accepted"
        )

    def test_a_taken_name_is_refused_and_nothing_changes(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        before = snapshot(repo)
        with refused(AgentExistsError, "CREATE: a taken name raises AgentExistsError"):
            repo.create(make_config(description="Another agent with the same name"))
        assert snapshot(repo) == before, "CREATE: a refused create writes nothing"

    def test_an_invalid_config_lists_every_problem(self, repo: AgentRepository) -> None:
        rule = "ERRORS: an invalid configuration raises InvalidAgentError"
        with refused(InvalidAgentError, rule) as refusal:
            repo.create(dict(EXAMPLE_BAD))
        text = str(refusal.value)
        assert "name" in text and "description" in text, (
            f"ERRORS: InvalidAgentError lists every invalid field (name, description): {text}"
        )
        assert isinstance(refusal.value, ValueError), "ERRORS: InvalidAgentError is a ValueError"
        assert repo.list_agents() == [], "CREATE: a refused create writes nothing"

    def test_list_is_sorted_by_name(self, repo: AgentRepository) -> None:
        for name in ("zeta_agent", "alpha_agent", "mid_agent"):
            repo.create(make_config(name))
        expected = ["alpha_agent", "mid_agent", "zeta_agent"]
        assert [a.name for a in repo.list_agents()] == expected, "LIST: list_agents is by name"
        assert repo.list_names() == expected, "LIST: list_names is by name"
        paged = [a.name for a in repo.iter_agents(page_size=1)]
        assert paged == expected, f"LIST: iter_agents gives every agent by name, not {paged}"


#: A configuration with two invalid fields.
EXAMPLE_BAD = dict(make_config()) | {"name": "Not-A-Name", "description": "short"}


class UpdateRules(ConformanceBase):
    def test_update_applies_only_the_given_fields(self, repo: AgentRepository) -> None:
        created = repo.create(make_config())
        run(repo, "lead_qualifier", "first")
        updated = repo.update("lead_qualifier", AgentUpdate(description="Enhanced with MEDDIC"))
        assert updated == repo.get("lead_qualifier"), "UPDATE: returns the agent as stored"
        assert updated.description == "Enhanced with MEDDIC", "UPDATE: the given field changes"
        for field in ("system_prompt", "tools", "model", "stratum", "tags"):
            assert getattr(updated, field) == getattr(created, field), (
                f"UPDATE: a field not given ({field}) keeps its value"
            )
        meta = updated.metadata
        assert meta.created_at == created.metadata.created_at, "UPDATE: created_at is kept"
        assert meta.updated_at >= created.metadata.updated_at, "UPDATE: updated_at moves on"
        assert (meta.execution_count, meta.success_count) == (1, 1), (
            "UPDATE: execution counters are kept"
        )
        history = repo.get_history("lead_qualifier").executions
        assert len(history) == 1, "UPDATE: the history is kept"

    def test_every_update_bumps_the_version_by_one(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        for expected in (2, 3, 4):
            result = repo.update_returning_previous(
                "lead_qualifier", {"description": f"Description number {expected}"}
            )
            got = result.agent.metadata.version
            assert got == expected, (
                f"VERSION: every update bumps the version by one: expected {expected}, got {got}"
            )
            assert result.previous.metadata.version == expected - 1, (
                "UPDATE: update_returning_previous returns the version it replaced"
            )
            stored = repo.get("lead_qualifier").metadata.version
            assert stored == expected, f"VERSION: the stored version is {expected}, not {stored}"

    def test_an_empty_list_clears_a_list(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        agent = repo.update("lead_qualifier", {"tags": [], "tools": []})
        assert agent.tags == [] and agent.tools == [], "UPDATE: [] clears a list, None keeps it"
        kept = repo.update("lead_qualifier", AgentUpdate(description="Still no tags or tools"))
        assert kept.tags == [] and kept.tools == [], "UPDATE: a field not given stays as it is"

    def test_a_refused_update_writes_nothing(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        before = snapshot(repo)
        with refused(NoChangesError, "ERRORS: an update that changes nothing: NoChangesError"):
            repo.update("lead_qualifier", AgentUpdate())
        rule = "ERRORS: expected_version not the stored one: VersionConflictError"
        with refused(VersionConflictError, rule) as conflict:
            repo.update("lead_qualifier", {"model": "openai:gpt-4o"}, expected_version=7)
        found = (conflict.value.expected, conflict.value.actual)
        assert found == (7, 1), (
            f"ERRORS: VersionConflictError holds (expected, actual), not {found}"
        )
        rule = "ERRORS: an invalid field in an update raises InvalidAgentError"
        with refused(InvalidAgentError, rule):
            repo.update("lead_qualifier", {"description": "short"})
        rule = "ERRORS: changes that are neither AgentUpdate nor a mapping: ArgumentTypeError"
        with refused(ArgumentTypeError, rule):
            repo.update("lead_qualifier", 42)  # type: ignore[arg-type]
        assert snapshot(repo) == before, "UPDATE: a refused update writes nothing"
        agent = repo.update("lead_qualifier", {"model": "openai:gpt-4o"}, expected_version=1)
        assert agent.metadata.version == 2, "UPDATE: the right expected_version is accepted"


class CloneRules(ConformanceBase):
    def test_a_clone_copies_the_config_with_fresh_metadata(self, repo: AgentRepository) -> None:
        repo.create(make_config(tags=["sales", "template"]))
        repo.update("lead_qualifier", {"model": "openai:gpt-4o"})
        run(repo, "lead_qualifier", "one", success=False)
        clone = repo.clone("lead_qualifier", "lead_qualifier_v2")
        source = repo.get("lead_qualifier")
        assert clone == repo.get("lead_qualifier_v2"), "CLONE: returns the clone as stored"
        assert clone.description == source.description + " (clone)", (
            "CLONE: the description is the source's followed by ' (clone)'"
        )
        for field in ("system_prompt", "tools", "model", "stratum", "tags"):
            assert getattr(clone, field) == getattr(source, field), f"CLONE: copies {field}"
        meta = clone.metadata
        found = (meta.version, meta.execution_count, meta.success_count, meta.error_count)
        assert found == (1, 0, 0, 0), f"CLONE: version 1 and counters 0 (fresh), not {found}"
        assert meta.created_at == meta.updated_at >= source.metadata.updated_at, (
            "CLONE: created_at and updated_at are now"
        )
        assert meta.last_executed_at is None, "CLONE: no last_executed_at"
        history = repo.get_history("lead_qualifier_v2")
        assert (history.executions, history.total_executions) == ([], 0), "CLONE: no history"
        assert repo.get("lead_qualifier") == source, "CLONE: the source is left as it was"

    def test_clone_overrides_and_refusals(self, repo: AgentRepository) -> None:
        repo.create(make_config(description="d" * DESCRIPTION_MAX_LENGTH))
        long = repo.clone("lead_qualifier", "long_clone")
        assert len(long.description) <= DESCRIPTION_MAX_LENGTH, (
            "CLONE: a long description is cut to fit ' (clone)' within the limit"
        )
        assert long.description.endswith(" (clone)"), "CLONE: the description ends ' (clone)'"
        custom = repo.clone("lead_qualifier", "custom", description="A custom description", tags=[])
        assert (custom.description, custom.tags) == ("A custom description", []), (
            "CLONE: description and tags given override the source's"
        )
        before = snapshot(repo)
        with refused(AgentExistsError, "ERRORS: clone to a taken name: AgentExistsError"):
            repo.clone("lead_qualifier", "custom")
        with refused(AgentNotFoundError, "ERRORS: clone of a missing agent: AgentNotFoundError"):
            repo.clone("ghost", "ghost_copy")
        rule = "ERRORS: clone to an invalid name raises InvalidAgentError naming new_name"
        with refused(InvalidAgentError, rule) as refusal:
            repo.clone("lead_qualifier", "Lead-Qualifier-V2")
        assert "new_name" in str(refusal.value), f"{rule}: {refusal.value}"
        with refused(InvalidAgentError, "ERRORS: clone with an invalid tag: InvalidAgentError"):
            repo.clone("lead_qualifier", "ok_name", tags=["NOT OK"])
        assert snapshot(repo) == before, "CLONE: a refused clone writes nothing"


class DeleteRules(ConformanceBase):
    def test_delete_removes_the_agent_and_its_history(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        run(repo, "lead_qualifier", "one")
        deleted = repo.delete("lead_qualifier")
        assert deleted.name == "lead_qualifier", "DELETE: returns the agent as it was"
        assert deleted.metadata.execution_count == 1, "DELETE: returns the agent as it was"
        assert not repo.exists("lead_qualifier"), "DELETE: the agent is gone"
        assert repo.search({"tags": ["sales"]}) == [], "DELETE: search no longer finds it"
        assert repo.archived_history("lead_qualifier").executions == [], (
            "DELETE: delete_history=True keeps no record"
        )
        again = repo.create(make_config())
        assert again.metadata.version == 1, "DELETE: a new agent of the name starts at version 1"
        history = repo.get_history("lead_qualifier")
        assert (history.executions, history.total_executions) == ([], 0), (
            "DELETE: a new agent of the name starts with no history"
        )

    def test_delete_keeping_history_archives_it(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        for task in ("one", "two"):
            run(repo, "lead_qualifier", task)
        repo.delete("lead_qualifier", delete_history=False)
        archived = repo.archived_history("lead_qualifier")
        tasks = [r.task for r in archived.executions]
        assert tasks == ["two", "one"], (
            f"DELETE: the archive keeps the records, newest first: {tasks}"
        )
        assert archived.total_executions == 2, "DELETE: the archive keeps the lifetime total"
        repo.create(make_config())
        run(repo, "lead_qualifier", "three")
        tasks = [r.task for r in repo.get_history("lead_qualifier").executions]
        assert tasks == ["three"], f"DELETE: the archive is not mixed into a new agent's: {tasks}"
        assert repo.archived_history("lead_qualifier").total_executions == 2, (
            "DELETE: the archive stays apart from the new agent"
        )

    def test_delete_history_is_a_flag(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        with refused(InvalidInputError, "ERRORS: delete_history other than True/False"):
            repo.delete("lead_qualifier", delete_history="no")  # type: ignore[arg-type]
        assert repo.exists("lead_qualifier"), "DELETE: a refused delete deletes nothing"


class ErrorTypes(ConformanceBase):
    def test_a_missing_agent_raises_agent_not_found(self, repo: AgentRepository) -> None:
        assert not repo.exists("ghost"), "ERRORS: exists is False for a missing agent"
        calls: dict[str, Callable[[], Any]] = {
            "get": lambda: repo.get("ghost"),
            "update": lambda: repo.update("ghost", {"model": "openai:gpt-4o"}),
            "delete": lambda: repo.delete("ghost"),
            "clone": lambda: repo.clone("ghost", "ghost_two"),
            "record_execution": lambda: run(repo, "ghost"),
            "get_history": lambda: repo.get_history("ghost"),
            "get_with_history": lambda: repo.get_with_history("ghost"),
            "execution_stats": lambda: repo.execution_stats("ghost"),
        }
        if self.supports_versions or "versions" in self.parts:
            calls["versions"] = lambda: repo.versions("ghost")
            calls["labels"] = lambda: repo.labels("ghost")
        for method, call in calls.items():
            with refused(AgentNotFoundError, f"ERRORS: {method} of a missing agent") as refusal:
                call()
            assert isinstance(refusal.value, LookupError), "ERRORS: not found is a LookupError"
        assert repo.list_agents() == [], "ERRORS: the failed calls wrote nothing"

    def test_every_error_is_an_agent_store_error(self, repo: AgentRepository) -> None:
        repo.create(make_config())
        for call in (
            lambda: repo.create(make_config()),
            lambda: repo.get("ghost"),
            lambda: repo.get_history("lead_qualifier", limit=0),
            lambda: repo.update("lead_qualifier", {}),
        ):
            with refused(AgentStoreError, "ERRORS: every error raised is an AgentStoreError"):
                call()
