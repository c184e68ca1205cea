"""The repository interface every layer above talks to, and the types of its bulk import.

Callers get domain models (``acti_store.models``), never rows. ``SqlAgentRepository``
(``acti_store.repository.sql``) is the implementation; tests of the layers above may use others.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from pydantic import ValidationError

from ..errors import ArgumentTypeError, InvalidAgentError, InvalidInputError
from ..models import (
    HISTORY_LIMIT_DEFAULT,
    UPDATABLE_FIELDS,
    Agent,
    AgentConfig,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    HistoryRequest,
    SearchQuery,
)
from ..validation import quoted, refusal

Clock = Callable[[], datetime]
ConflictPolicy = Literal["skip", "replace", "fail"]
ImportOutcome = Literal["imported", "skipped", "replaced"]


class Mirror(Protocol):
    """Keeps files in step with the store after each committed write (see ``interchange``)."""

    def files_for(self, name: str) -> tuple[Path, Path]:
        """The agent file and the history file of ``name``."""
        ...

    def sync(self, repo: AgentRepository, names: Iterable[str]) -> None:
        """Rewrite (or remove) the files of ``names`` from the store's current state."""
        ...


@dataclass(frozen=True)
class ImportItem:
    """One agent (and/or its history) to put into the store as it is, metadata included."""

    name: str
    agent: Agent | None = None
    history: ExecutionHistory | None = None


@dataclass
class BulkPutResult:
    outcomes: dict[str, ImportOutcome] = field(default_factory=dict)


def checked_update(name: str, changes: AgentUpdate | Mapping[str, Any]) -> AgentUpdate:
    """``changes`` as an ``AgentUpdate``: a mapping of field names to values is validated into
    one (``InvalidAgentError`` lists every problem); anything else is an ``ArgumentTypeError``."""
    if isinstance(changes, AgentUpdate):
        return changes
    if not isinstance(changes, Mapping):
        raise ArgumentTypeError(
            "update() takes the changes as an AgentUpdate or a mapping of the fields to change "
            f"({', '.join(UPDATABLE_FIELDS)}) to their new values, not {type(changes).__name__}"
        )
    try:
        return AgentUpdate.model_validate(dict(changes))
    except ValidationError as exc:
        raise refusal(exc, f"update of agent {quoted(name)}", InvalidAgentError) from None


def checked_config(
    values: dict[str, Any], subject: str, aliases: Mapping[str, str] | None = None
) -> AgentConfig:
    """``values`` as an ``AgentConfig``, or ``InvalidAgentError`` listing every problem."""
    try:
        return AgentConfig.model_validate(values)
    except ValidationError as exc:
        raise refusal(exc, subject, InvalidAgentError, aliases=aliases or {}) from None


#: ``HistoryRequest``'s range of ``limit``, read from the model: the fast path of the check.
_LIMIT_RANGE: Final = HistoryRequest.model_json_schema()["properties"]["limit"]


def checked_history_request(limit: object, errors_only: object) -> tuple[int, bool]:
    """``(limit, errors_only)`` by the rule of ``HistoryRequest`` (the tools' too): an
    out-of-range ``limit`` is an ``InvalidInputError``, never silently clamped."""
    if (
        type(limit) is int
        and type(errors_only) is bool
        and _LIMIT_RANGE["minimum"] <= limit <= _LIMIT_RANGE["maximum"]
    ):
        return limit, errors_only  # what the model would accept as it is (reads are hot)
    try:
        request = HistoryRequest(limit=limit, include_errors_only=errors_only)
    except ValidationError as exc:
        raise refusal(exc, "history request", InvalidInputError) from None
    return request.limit, request.include_errors_only


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


class AgentRepository(ABC):
    """Storage of agent configurations, their metadata and execution history.

    Every method may raise ``StoreUnavailableError`` (the database cannot be reached, is locked
    for too long or is damaged; ``transient`` says whether trying again can help) and, on a store
    opened with ``read_only=True`` or one this process cannot write, every write raises
    ``ReadOnlyStoreError`` (a lasting ``StoreUnavailableError``); all are ``AgentStoreError``.
    Invalid input is an ``InvalidInputError`` (``InvalidAgentError`` for agent fields), which is
    also a ``ValueError``.
    """

    mirror: Mirror | None = None

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the records live, fit to show a user (no password)."""

    @abstractmethod
    def now(self) -> datetime:
        """The store's clock: timezone-aware UTC. Pass it (or ``datetime.now(timezone.utc)``)
        as a record's timestamp: naive datetimes are refused."""

    def location_of(self, name: str) -> str:
        """Where the record of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[0])
        return self.location

    def history_location_of(self, name: str) -> str:
        """Where the history of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[1])
        return self.location

    @abstractmethod
    def create(self, config: AgentConfig) -> Agent:
        """Store a new agent at version 1. Raises ``AgentExistsError``. (``AgentConfig(...)``
        itself raises pydantic's ``ValidationError``, a ``ValueError``, for invalid fields.)"""

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
    ) -> Agent:
        """Apply a partial update (an ``AgentUpdate``, or a mapping of field names to new values)
        and bump the version; returns the agent as updated.

        Raises ``AgentNotFoundError``, ``NoChangesError``, ``InvalidAgentError`` (every invalid
        field), ``ArgumentTypeError`` when ``changes`` is neither, and ``VersionConflictError``
        when ``expected_version`` is given and the stored version differs. Without
        ``expected_version`` the update applies to the latest version and never conflicts.
        """
        return self.update_returning_previous(name, changes, expected_version).agent

    @abstractmethod
    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
    ) -> UpdateResult:
        """``update``, also returning the version it replaced, as its own transaction saw it
        (what "before -> after" reports must compare: no other write can come in between).
        Raises what ``update`` raises."""

    @abstractmethod
    def delete(self, name: str, delete_history: bool = True) -> Agent:
        """Delete an agent; returns it as it was. With ``delete_history=False`` its history is
        archived (see ``archived_history``)."""

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
    def search(self, query: SearchQuery) -> list[Agent]: ...

    @abstractmethod
    def count(self, query: SearchQuery) -> int:
        """How many agents match ``query``'s filters, whatever its ``limit``."""

    @abstractmethod
    def search_page(self, query: SearchQuery, cursor: str | None = None) -> SearchPage:
        """One page of ``query``'s matches (``query.limit`` of them), after the page whose
        ``next_cursor`` is ``cursor`` (None: the first page).

        Keyset pagination on the query's sort: walking every page while others write, each
        agent whose sort key did not change during the walk is seen exactly once. Raises
        ``InvalidCursorError`` (an ``InvalidInputError``) for a cursor not made by this query's
        pages.
        """

    @abstractmethod
    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        """Every agent, by name, read ``page_size`` at a time (each page its own short read, so
        not one snapshot: an agent created or deleted meanwhile may or may not appear)."""

    @abstractmethod
    def count_by_stratum(self) -> dict[str | None, int]:
        """Agents per stratum: every stratum of the contract, plus ``None`` if any have none."""

    def first_by_stratum(self, limit: int) -> dict[str | None, list[Agent]]:
        """The first ``limit`` agents by name of each stratum (``None``: no stratum), by name;
        strata without agents are left out. What a listing shows without reading every agent."""
        groups: dict[str | None, list[Agent]] = {}
        for agent in self.list_agents():
            members = groups.setdefault(agent.stratum, [])
            if len(members) < limit:
                members.append(agent)
        return groups

    @abstractmethod
    def record_execution(self, name: str, record: ExecutionRecord) -> None:
        """Append a run to the history (keeping the newest 50) and move the counters.
        Raises ``AgentNotFoundError``."""

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

    @abstractmethod
    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        """Every agent with its history (None when never run), streamed page by page, all from
        one snapshot of the store."""

    @abstractmethod
    def bulk_put(
        self, items: Sequence[ImportItem], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        """Put agents and histories exactly as given, in one transaction (all or nothing)."""

    def bulk_put_stream(
        self, items: Callable[[], Iterable[ImportItem]], on_conflict: ConflictPolicy = "skip"
    ) -> BulkPutResult:
        """``bulk_put`` for more items than fit in memory: still one transaction, fed by
        ``items()``, which is called again if the transaction is retried."""
        return self.bulk_put(list(items()), on_conflict)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
