"""The port's core, by role: what every store does. ``AgentsPort``: an agent's configuration and
metadata, written, read and listed; ``SearchPort``: finding agents; ``RunsPort``: recording runs
and reading the history. ``port.RepositoryPort`` gathers them with the parts of ``port_parts``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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
from ..validation import integer
from .arguments import CONFLICT_POLICIES as CONFLICT_POLICIES
from .arguments import ConflictPolicy as ConflictPolicy
from .items import BulkPutResult as BulkPutResult
from .items import ImportItem as ImportItem
from .items import ImportOutcome as ImportOutcome


@dataclass(frozen=True)
class UpdateResult:
    """One update: the agent as the update's transaction found it, and as it left it."""

    previous: Agent
    agent: Agent


@dataclass(frozen=True)
class SearchPage:
    """One page of ``search_page``: up to the query's ``limit`` agents in its sort's order."""

    agents: list[Agent]
    #: How many agents match the query (all pages), counted in the same snapshot as the page.
    total: int
    #: Pass it back to ``search_page`` for the next page; None on the last page.
    next_cursor: str | None


class AgentsPort(ABC):
    """An agent's configuration and its metadata: created, read, updated (each update a new
    version), deleted, cloned; every agent listed."""

    @abstractmethod
    def create(self, config: AgentConfig | Mapping[str, Any], message: str | None = None) -> Agent:
        """Store a new agent at version 1 (and its snapshot, with ``message``). ``config`` is an
        ``AgentConfig`` or a mapping of its fields (``InvalidAgentError`` lists every problem).
        Raises ``AgentExistsError``. (``AgentConfig(...)`` itself raises pydantic's
        ``ValidationError``, a ``ValueError``, for invalid fields.)"""

    @abstractmethod
    def get(self, name: str) -> Agent:
        """The agent called ``name``. Raises ``AgentNotFoundError``."""

    @abstractmethod
    def exists(self, name: str) -> bool: ...

    @abstractmethod
    def list_agents(self) -> list[Agent]:
        """Every agent, by name."""

    @abstractmethod
    def list_names(self) -> list[str]:
        """Every agent's name, sorted."""

    def update(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        """Apply a partial update (an ``AgentUpdate``, or a mapping of field names to new values)
        and bump the version; returns the agent as updated.

        Raises ``AgentNotFoundError``, ``NoChangesError``, ``InvalidAgentError`` (every invalid
        field), ``ArgumentTypeError`` when ``changes`` is neither, and ``VersionConflictError``
        when ``expected_version`` is given and the stored version differs. Without
        ``expected_version`` the update applies to the latest version and never conflicts.
        The new version's snapshot is stored with ``message`` in the same transaction.
        """
        return self.update_returning_previous(name, changes, expected_version, message).agent

    @abstractmethod
    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> UpdateResult:
        """``update``, also returning the version it replaced, as its own transaction saw it
        (what "before -> after" reports must compare: no other write can come in between).
        Raises what ``update`` raises."""

    @abstractmethod
    def delete(self, name: str, delete_history: bool = True) -> Agent:
        """Delete an agent; returns it as it was. With ``delete_history=False`` its history is
        archived (see ``archived_history``); anything but ``True`` or ``False`` is refused."""

    @abstractmethod
    def clone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        """Copy an agent under a new name with fresh metadata and no history.

        Raises ``AgentNotFoundError`` (the source), ``AgentExistsError`` (the new name) and
        ``InvalidAgentError`` listing every invalid field (``new_name``, ``description``,
        ``tags``)."""

    @abstractmethod
    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        """Every agent, by name, read ``page_size`` at a time (each page its own short read, so
        not one snapshot: an agent created or deleted meanwhile may or may not appear).
        ``page_size`` is an integer from 1 to ``models.INTEGER_MAX``."""

    @abstractmethod
    def count_by_stratum(self) -> dict[str | None, int]:
        """Agents per stratum: every stratum of the contract, plus ``None`` if any have none."""

    def first_by_stratum(self, limit: int) -> dict[str | None, list[Agent]]:
        """The first ``limit`` agents by name of each stratum (``None``: no stratum), by name;
        strata without agents are left out. What a listing shows without reading every agent."""
        limit = integer(limit, "limit", 1)
        groups: dict[str | None, list[Agent]] = {}
        for agent in self.list_agents():
            members = groups.setdefault(agent.stratum, [])
            if len(members) < limit:
                members.append(agent)
        return groups


class SearchPort(ABC):
    """Agents found by words, tags, strata, tools and dates, sorted and paged."""

    @abstractmethod
    def search(self, query: SearchQuery | Mapping[str, Any]) -> list[Agent]:
        """The agents ``query`` (a ``SearchQuery``, or a mapping of its fields) matches."""

    @abstractmethod
    def count(self, query: SearchQuery | Mapping[str, Any]) -> int:
        """How many agents match ``query``'s filters, whatever its ``limit``."""

    @abstractmethod
    def search_page(
        self, query: SearchQuery | Mapping[str, Any], cursor: str | None = None
    ) -> SearchPage:
        """One page of ``query``'s matches (``query.limit`` of them), after the page whose
        ``next_cursor`` is ``cursor`` (None: the first page).

        Keyset pagination on the query's sort: walking every page while others write, each
        agent whose sort key did not change during the walk is seen exactly once. Raises
        ``InvalidCursorError`` (an ``InvalidInputError``) for a cursor not made by this query's
        pages.
        """


class RunsPort(ABC):
    """Runs recorded against an agent, and its history read back (the newest 50 records, the
    lifetime counters, the archive)."""

    @abstractmethod
    def record_execution(
        self, name: str, record: ExecutionRecord | Mapping[str, Any], *, version: int | None = None
    ) -> None:
        """Append a run to the history (keeping the newest 50) and move the counters, the
        agent's and those of the version that ran (``version``: a pinned one; default the
        current). ``record`` is an ``ExecutionRecord`` or a mapping of its fields. Raises
        ``AgentNotFoundError``, ``VersionNotFoundError`` (above current)."""

    @abstractmethod
    def get_history(
        self, name: str, limit: int = HISTORY_LIMIT_DEFAULT, errors_only: bool = False
    ) -> ExecutionHistory:
        """The newest ``limit`` records (1-50, the rule of ``HistoryRequest``), newest first.
        Raises ``AgentNotFoundError``, and ``InvalidInputError`` for a limit out of range."""

    @abstractmethod
    def get_with_history(self, name: str) -> tuple[Agent, ExecutionHistory]:
        """The agent and its newest records (up to 50), read from one snapshot so that they
        agree. Raises ``AgentNotFoundError``."""

    @abstractmethod
    def execution_stats(self, name: str) -> ExecutionStats: ...

    @abstractmethod
    def archived_history(self, name: str) -> ExecutionHistory:
        """Records kept from deleted agents called ``name`` (``delete_history=False``)."""
