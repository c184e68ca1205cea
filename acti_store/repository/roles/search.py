"""The search role: ``search``, ``count``, ``search_page`` and the listing by stratum, on the
query of ``repository.search`` (its plan asked of the engine's strategy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...models import STRATA, Agent, SearchQuery
from ...validation import integer
from ..arguments import checked_query
from ..core import Role
from ..cursor import decode_cursor
from ..paging import search_page
from ..port import SearchPage
from ..search import count_matches, needs_snapshot, search_rows
from ..statements import COUNT_BY_STRATUM, FIRST_BY_STRATUM, agent_from_row


class Search(Role):
    """``search``, ``count``, ``search_page``, ``count_by_stratum`` and ``first_by_stratum`` of
    the repository."""

    def search(self, query: SearchQuery | Mapping[str, Any]) -> list[Agent]:
        """Filters combine with AND; results come in the sort's order, at most ``limit``
        (the query and its plan: ``search``)."""
        query = checked_query(query)
        kind = self._core.kind
        rows = self._read(
            lambda cursor: search_rows(cursor, query, kind), snapshot=needs_snapshot(query, kind)
        )
        return [agent_from_row(row) for row in rows]

    def count(self, query: SearchQuery | Mapping[str, Any]) -> int:
        query = checked_query(query)
        kind = self._core.kind
        return self._read(
            lambda cursor: count_matches(cursor, query, kind), snapshot=needs_snapshot(query, kind)
        )

    def search_page(
        self, query: SearchQuery | Mapping[str, Any], cursor: str | None = None
    ) -> SearchPage:
        query = checked_query(query)
        after = None if cursor is None else decode_cursor(cursor, query)
        kind = self._core.kind
        return self._read(lambda cursor: search_page(cursor, query, after, kind), snapshot=True)

    def count_by_stratum(self) -> dict[str | None, int]:
        counts: dict[str | None, int] = dict.fromkeys(STRATA, 0)
        for stratum, count in self._read(lambda cursor: cursor.all(COUNT_BY_STRATUM)):
            counts[stratum] = int(count)
        return counts

    def first_by_stratum(self, limit: int) -> dict[str | None, list[Agent]]:
        limit = integer(limit, "limit", 1)
        rows = self._read(lambda cursor: cursor.all(FIRST_BY_STRATUM, {"limit": limit}))
        groups: dict[str | None, list[Agent]] = {}
        for row in rows:
            agent = agent_from_row(row)
            groups.setdefault(agent.stratum, []).append(agent)
        return groups
