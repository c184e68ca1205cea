"""The bulk I/O role: the export's one-snapshot streams (``repository.paging``) and the import's
one-transaction bulk put (``repository.bulk``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from ...models import Agent, ExecutionHistory
from ...sqlexec import Cursor
from ...validation import flag, forced_note, instances, integer
from ...versioning import VersionLog
from ..arguments import checked_policy, checked_source
from ..bulk import put_all
from ..core import Role
from ..paging import Entry, export_entry, export_stream, versions_entry
from ..port import BulkPutResult, ConflictPolicy, ImportItem
from ..tenant_admin import admit, within_limit

T = TypeVar("T")


class Interchange(Role):
    """``iter_export``, ``iter_export_versions``, ``bulk_put`` and ``bulk_put_stream`` of the
    repository."""

    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        return self._export(page_size, export_entry)

    def iter_export_versions(
        self, page_size: int = 500
    ) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        return self._export(page_size, versions_entry)

    def _export(self, page_size: int, entry: Entry[T]) -> Iterator[T]:
        size = integer(page_size, "page_size", 1)
        connections, kind = self._core.reader()
        return export_stream(
            connections,
            self._core.dialect,
            self._core.dbapi,
            kind,
            size,
            entry,
            self._core.tenant,
        )

    def bulk_put(
        self,
        items: Sequence[ImportItem],
        on_conflict: ConflictPolicy = "skip",
        *,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        instances(items, ImportItem, "items")
        return self.bulk_put_stream(lambda: items, on_conflict, force=force, note=note)

    def bulk_put_stream(
        self,
        items: Callable[[], Iterable[ImportItem]],
        on_conflict: ConflictPolicy = "skip",
        *,
        keep_names: bool = True,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        on_conflict = checked_policy(on_conflict)  # before any write: a typo must not replace
        checked_source(items)
        flag(keep_names, "keep_names")
        note = forced_note(note, flag(force, "force"))
        # A mirror writes the files of the agents put: it needs their names.
        keep = keep_names or self._core.mirror is not None
        # Not pipelined: its records, snapshots and tags go by COPY (``Cursor.executemany``).
        kind = self._core.kind
        taken, insert, feed = kind.taken_names, kind.insert_agents, kind.feed_statements()
        core = self._core

        def work(cursor: Cursor) -> BulkPutResult:
            limit = admit(cursor, core, 0)  # registered; its limit counted once all are in
            result = put_all(
                cursor,
                items(),
                on_conflict,
                taken,
                insert,
                feed,
                self.now(),
                keep,
                kind.bulk_batch,
                force=force,
                note=note,
            )
            within_limit(cursor, core, limit)
            return result

        result = self._write(work, pipelined=False)
        written = result.count("imported") + result.count("replaced")
        self._core.kind.after_growth(self._core.engine, written)
        self._notify(*(n for n, outcome in result.outcomes.items() if outcome != "skipped"))
        if not keep_names:  # kept for the mirror only
            result.unnamed.update(result.outcomes.values())
            result.outcomes.clear()
            result.keep_names = False
        return result
