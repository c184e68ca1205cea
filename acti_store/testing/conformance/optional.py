"""The optional groups: the async twins (``supports_async``), several handles on one store, as
several processes hold it (``supports_processes`` with ``open_again``), and the change feed
(``supports_changes``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta

from ...errors import AgentNotFoundError, ChangesExpiredError, VersionConflictError
from ...models import HISTORY_MAX_RECORDS, SearchQuery
from ...repository import AgentRepository
from .base import ConformanceBase, make_config, refused, run


class AsyncRules(ConformanceBase):
    def test_the_twins_do_what_the_sync_methods_do(self, repo: AgentRepository) -> None:
        self.requires("supports_async")

        async def scenario() -> None:
            try:
                created = await repo.acreate(make_config())
                assert await repo.aget("lead_qualifier") == created, "ASYNC: aget after acreate"
                updated = await repo.aupdate("lead_qualifier", {"model": "openai:gpt-4o"})
                assert updated.metadata.version == 2, "ASYNC: aupdate bumps the version"
                await repo.arecord_execution("lead_qualifier", _record(repo))
                history = await repo.aget_history("lead_qualifier")
                assert history.total_executions == 1, "ASYNC: arecord_execution is counted"
                found = await repo.asearch(SearchQuery(tags=["sales"]))
                assert [a.name for a in found] == ["lead_qualifier"], "ASYNC: asearch"
                listed = [a.name async for a in repo.aiter_agents(page_size=1)]
                assert listed == ["lead_qualifier"], "ASYNC: aiter_agents"
                versions = [v.version for v in await repo.aversions("lead_qualifier")]
                assert versions == [2, 1], "ASYNC: aversions"
                with refused(AgentNotFoundError, "ASYNC: a twin raises what its method raises"):
                    await repo.aget("ghost")
                await repo.adelete("lead_qualifier")
                assert not await repo.aexists("lead_qualifier"), "ASYNC: adelete"
            finally:
                await repo.aclose()

        asyncio.run(scenario())


def _record(repo: AgentRepository) -> dict[str, object]:
    return {
        "timestamp": repo.now(),
        "task": "t",
        "result_summary": "r",
        "success": True,
        "duration_seconds": 1.0,
    }


class ProcessRules(ConformanceBase):
    def _second(self, repo: AgentRepository) -> AgentRepository:
        self.requires("supports_processes")
        return self.open_again(repo)

    def test_a_second_handle_sees_every_write(self, repo: AgentRepository) -> None:
        other = self._second(repo)
        try:
            repo.create(make_config())
            assert other.get("lead_qualifier") == repo.get("lead_qualifier"), (
                "PROCESSES: a write by one handle is seen by another"
            )
            other.update("lead_qualifier", {"model": "openai:gpt-4o"})
            assert repo.get("lead_qualifier").metadata.version == 2, (
                "PROCESSES: and the other way round"
            )
        finally:
            other.close()

    def test_optimistic_concurrency_between_handles(self, repo: AgentRepository) -> None:
        other = self._second(repo)
        try:
            repo.create(make_config())
            version = other.get("lead_qualifier").metadata.version
            repo.update("lead_qualifier", {"model": "openai:gpt-4o"}, expected_version=version)
            rule = "PROCESSES: an update from a stale read raises VersionConflictError"
            with refused(VersionConflictError, rule):
                other.update("lead_qualifier", {"tags": ["late"]}, expected_version=version)
            assert repo.get("lead_qualifier").metadata.version == version + 1, (
                "PROCESSES: no update is lost and none is applied twice"
            )
        finally:
            other.close()

    def test_concurrent_writers_lose_nothing(self, repo: AgentRepository) -> None:
        other = self._second(repo)
        try:
            repo.create(make_config())
            per_writer = 30
            failures: list[BaseException] = []

            def writer(store: AgentRepository) -> Callable[[], None]:
                def work() -> None:
                    try:
                        for _ in range(per_writer):
                            run(store, "lead_qualifier")
                            store.update("lead_qualifier", {"model": "openai:gpt-4o"})
                    except BaseException as exc:  # reported below, in the test's thread
                        failures.append(exc)

                return work

            threads = [threading.Thread(target=writer(s)) for s in (repo, other)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not failures, f"PROCESSES: concurrent writers fail: {failures!r}"
            meta = repo.get("lead_qualifier").metadata
            assert meta.execution_count == 2 * per_writer, (
                f"PROCESSES: every run of two writers is counted: {meta.execution_count}"
            )
            assert meta.version == 1 + 2 * per_writer, (
                f"PROCESSES: every update of two writers bumps the version: {meta.version}"
            )
            kept = len(repo.get_history("lead_qualifier", HISTORY_MAX_RECORDS).executions)
            assert kept == HISTORY_MAX_RECORDS, f"FIFO: two writers keep 50 records, not {kept}"
        finally:
            other.close()


class ChangeFeedRules(ConformanceBase):
    def test_every_write_appends_one_change_in_commit_order(self, repo: AgentRepository) -> None:
        self.requires("supports_changes")
        self.requires("supports_versions")  # a label's move is one of the changes
        repo.create(make_config())
        repo.update("lead_qualifier", {"model": "openai:gpt-4o"})
        repo.set_label("lead_qualifier", "production", 2)
        repo.record_execution("lead_qualifier", _record(repo))  # a run is not a change
        repo.delete("lead_qualifier")
        seen = [(c.seq, c.kind, c.agent, c.version, c.label) for c in repo.changes()]
        assert seen == [
            (1, "created", "lead_qualifier", 1, None),
            (2, "updated", "lead_qualifier", 2, None),
            (3, "label_set", "lead_qualifier", 2, "production"),
            (4, "deleted", "lead_qualifier", 2, None),
        ], "FEED: one change per write, numbered from 1 in commit order, runs excluded"
        assert repo.last_change() == 4, "FEED: last_change is the newest seq"
        after = [c.seq for c in repo.changes(after=2, limit=1)]
        assert after == [3], "FEED: changes(after, limit) starts after `after`"

    def test_a_pruned_position_is_refused(self, repo: AgentRepository) -> None:
        self.requires("supports_changes")
        repo.create(make_config())
        repo.update("lead_qualifier", {"model": "openai:gpt-4o"})
        assert repo.prune_changes(repo.now() + timedelta(seconds=1)) == 2, "FEED: prune count"
        with refused(ChangesExpiredError, "FEED: a pruned position raises ChangesExpiredError"):
            repo.changes(after=1)
        assert repo.changes(after=2) == [], "FEED: a position at the newest change is valid"

    def test_a_checkpoint_keeps_a_position(self, repo: AgentRepository) -> None:
        self.requires("supports_changes")
        assert repo.checkpoint("relay") is None, "FEED: an unknown checkpoint is None"
        repo.save_checkpoint("relay", 3)
        assert repo.checkpoint("relay") == 3, "FEED: save_checkpoint then checkpoint"
