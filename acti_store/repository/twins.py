"""The ``a``-prefixed coroutine twins of ``AgentRepository``'s methods.

One line each: ``acall`` of the sync method (``aiterate`` for the iterators), so a twin has the
sync method's arguments, result and errors, and no rule or statement exists twice. A new store
operation gets its twin here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..models import (
    HISTORY_LIMIT_DEFAULT,
    Agent,
    AgentConfig,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    SearchQuery,
)

if TYPE_CHECKING:
    from datetime import datetime

    from ..changes import Change
    from ..versioning import (
        AgentVersion,
        ConfigDiff,
        LabelGate,
        LabelMove,
        VersionComparison,
        VersionLog,
    )
    from .arguments import ConflictPolicy
    from .port import (
        BulkPutResult,
        ImportItem,
        RepositoryPort,
        SearchPage,
        UpdateResult,
    )

T = TypeVar("T")


class AsyncTwins:
    """The coroutine twins, mixed into ``AgentRepository`` (which defines ``acall``)."""

    if TYPE_CHECKING:

        async def acall(self, work: Callable[[RepositoryPort], T]) -> T: ...

        def aiterate(self, start: Callable[[RepositoryPort], Iterator[T]]) -> AsyncIterator[T]: ...

    async def acreate(
        self, config: AgentConfig | Mapping[str, Any], message: str | None = None
    ) -> Agent:
        return await self.acall(lambda r: r.create(config, message))

    async def aget(self, name: str) -> Agent:
        return await self.acall(lambda r: r.get(name))

    async def aexists(self, name: str) -> bool:
        return await self.acall(lambda r: r.exists(name))

    async def alist_agents(self) -> list[Agent]:
        return await self.acall(lambda r: r.list_agents())

    async def alist_names(self) -> list[str]:
        return await self.acall(lambda r: r.list_names())

    async def aupdate(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        return await self.acall(lambda r: r.update(name, changes, expected_version, message))

    async def aupdate_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> UpdateResult:
        return await self.acall(
            lambda r: r.update_returning_previous(name, changes, expected_version, message)
        )

    async def adelete(self, name: str, delete_history: bool = True) -> Agent:
        return await self.acall(lambda r: r.delete(name, delete_history))

    async def aclone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        return await self.acall(lambda r: r.clone(source_name, new_name, description, tags))

    async def asearch(self, query: SearchQuery | Mapping[str, Any]) -> list[Agent]:
        return await self.acall(lambda r: r.search(query))

    async def acount(self, query: SearchQuery | Mapping[str, Any]) -> int:
        return await self.acall(lambda r: r.count(query))

    async def asearch_page(
        self, query: SearchQuery | Mapping[str, Any], cursor: str | None = None
    ) -> SearchPage:
        return await self.acall(lambda r: r.search_page(query, cursor))

    def aiter_agents(self, page_size: int = 500) -> AsyncIterator[Agent]:
        return self.aiterate(lambda r: r.iter_agents(page_size))

    async def acount_by_stratum(self) -> dict[str | None, int]:
        return await self.acall(lambda r: r.count_by_stratum())

    async def afirst_by_stratum(self, limit: int) -> dict[str | None, list[Agent]]:
        return await self.acall(lambda r: r.first_by_stratum(limit))

    async def arecord_execution(
        self, name: str, record: ExecutionRecord | Mapping[str, Any], *, version: int | None = None
    ) -> None:
        return await self.acall(lambda r: r.record_execution(name, record, version=version))

    async def aget_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        return await self.acall(lambda r: r.get_history(name, limit, errors_only))

    async def aget_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        return await self.acall(lambda r: r.get_with_history(name))

    async def aexecution_stats(self, name: str) -> ExecutionStats:
        return await self.acall(lambda r: r.execution_stats(name))

    async def aarchived_history(self, name: str) -> ExecutionHistory:
        return await self.acall(lambda r: r.archived_history(name))

    def aiter_export(
        self, page_size: int = 500
    ) -> AsyncIterator[tuple[Agent, ExecutionHistory | None]]:
        return self.aiterate(lambda r: r.iter_export(page_size))

    def aiter_export_versions(
        self, page_size: int = 500
    ) -> AsyncIterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        return self.aiterate(lambda r: r.iter_export_versions(page_size))

    async def abulk_put(
        self,
        items: Sequence[ImportItem],
        on_conflict: ConflictPolicy = "skip",
        *,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        return await self.acall(lambda r: r.bulk_put(items, on_conflict, force=force, note=note))

    async def abulk_put_stream(
        self,
        items: Callable[[], Iterable[ImportItem]],
        on_conflict: ConflictPolicy = "skip",
        *,
        keep_names: bool = True,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        return await self.acall(
            lambda r: r.bulk_put_stream(
                items, on_conflict, keep_names=keep_names, force=force, note=note
            )
        )

    async def aversions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        return await self.acall(lambda r: r.versions(name, limit=limit))

    async def aget_version(
        self, name: str, version: int | None = None, *, label: str | None = None
    ) -> AgentVersion:
        return await self.acall(lambda r: r.get_version(name, version, label=label))

    async def adiff(self, name: str, from_version: int, to_version: int) -> ConfigDiff:
        return await self.acall(lambda r: r.diff(name, from_version, to_version))

    async def arollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        return await self.acall(
            lambda r: r.rollback(
                name, to_version, expected_version=expected_version, message=message
            )
        )

    async def aset_label(
        self,
        name: str,
        label: str,
        version: int | Mapping[int, int],
        *,
        expected_version: int | Mapping[int, int] | None = None,
        note: str | None = None,
        force: bool = False,
    ) -> None:
        return await self.acall(
            lambda r: r.set_label(
                name, label, version, expected_version=expected_version, note=note, force=force
            )
        )

    async def arollback_label(
        self, name: str, label: str, *, note: str | None = None, force: bool = False
    ) -> dict[int, int] | None:
        return await self.acall(lambda r: r.rollback_label(name, label, note=note, force=force))

    async def alabel_weights(self, name: str) -> dict[str, dict[int, int]]:
        return await self.acall(lambda r: r.label_weights(name))

    async def aresolve(
        self, name: str, label: str | None = None, key: str | None = None
    ) -> AgentVersion:
        return await self.acall(lambda r: r.resolve(name, label, key))

    async def acompare_versions(self, name: str, a: int, b: int) -> VersionComparison:
        return await self.acall(lambda r: r.compare_versions(name, a, b))

    async def aprotect_label(
        self,
        name: str,
        label: str,
        *,
        min_runs: int = 0,
        min_success_rate: float = 0.0,
        max_mean_duration: float | None = None,
    ) -> None:
        return await self.acall(
            lambda r: r.protect_label(
                name,
                label,
                min_runs=min_runs,
                min_success_rate=min_success_rate,
                max_mean_duration=max_mean_duration,
            )
        )

    async def aunprotect_label(self, name: str, label: str) -> bool:
        return await self.acall(lambda r: r.unprotect_label(name, label))

    async def alabel_gates(self, name: str) -> dict[str, LabelGate]:
        return await self.acall(lambda r: r.label_gates(name))

    async def aremove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        return await self.acall(lambda r: r.remove_label(name, label, note=note))

    async def alabels(self, name: str) -> dict[str, int]:
        return await self.acall(lambda r: r.labels(name))

    async def alabel_history(self, name: str) -> list[LabelMove]:
        return await self.acall(lambda r: r.label_history(name))

    async def aversion_stats(self, name: str) -> dict[int, ExecutionStats]:
        return await self.acall(lambda r: r.version_stats(name))

    async def aversion_log(self, name: str) -> VersionLog:
        return await self.acall(lambda r: r.version_log(name))

    async def aprune_versions(self, name: str, keep: int) -> int:
        return await self.acall(lambda r: r.prune_versions(name, keep))

    async def achanges(self, after: int | None = None, limit: int = 100) -> list[Change]:
        return await self.acall(lambda r: r.changes(after, limit))

    async def alast_change(self) -> int:
        return await self.acall(lambda r: r.last_change())

    async def aprune_changes(self, before: datetime) -> int:
        return await self.acall(lambda r: r.prune_changes(before))

    async def acheckpoint(self, name: str) -> int | None:
        return await self.acall(lambda r: r.checkpoint(name))

    async def asave_checkpoint(self, name: str, seq: int) -> None:
        await self.acall(lambda r: r.save_checkpoint(name, seq))
