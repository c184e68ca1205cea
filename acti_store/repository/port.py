"""The repository's port: its sync methods, the types they take and give, and nothing else.

Callers get domain models (``acti_store.models``), never rows. The port knows no event loop and
no thread: the async API is a layer on top of it (``interface.AgentRepository``), and
``SqlAgentRepository`` (``acti_store.repository.sql``) implements it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, Self

from pydantic import ValidationError

from ..changes import Change
from ..errors import InvalidAgentError
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
from ..validation import integer, refusal, strictly
from ..versioning import (
    AgentVersion,
    ConfigDiff,
    LabelGate,
    LabelMove,
    VersionComparison,
    VersionLog,
)
from .arguments import CONFLICT_POLICIES as CONFLICT_POLICIES
from .arguments import ConflictPolicy as ConflictPolicy
from .arguments import checked_policy
from .items import BulkPutResult as BulkPutResult
from .items import ImportItem as ImportItem
from .items import ImportOutcome as ImportOutcome

Clock = Callable[[], datetime]


class Mirror(Protocol):
    """Keeps files in step with the store after each committed write (see ``interchange``)."""

    def files_for(self, name: str) -> tuple[Path, Path]:
        """The agent file and the history file of ``name``."""
        ...

    def sync(self, repo: RepositoryPort, names: Iterable[str]) -> None:
        """Rewrite (or remove) the files of ``names`` from the store's current state."""
        ...


def checked_config(
    values: dict[str, Any], subject: str, aliases: Mapping[str, str] | None = None
) -> AgentConfig:
    """``values`` as an ``AgentConfig`` by its strict rules (``validation.strictly``), or
    ``InvalidAgentError`` listing every problem."""
    try:
        return strictly(AgentConfig, values)
    except ValidationError as exc:
        raise refusal(exc, subject, InvalidAgentError, aliases=aliases or {}) from None


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


class RepositoryPort(ABC):
    """Storage of agent configurations, their metadata and execution history: the sync port.

    Every method may raise ``StoreUnavailableError`` (the database cannot be reached, is locked
    for too long or is damaged; ``transient`` says whether trying again can help) and, on a store
    opened with ``read_only=True`` or one this process cannot write, every write raises
    ``ReadOnlyStoreError`` (a lasting ``StoreUnavailableError``); all are ``AgentStoreError``.
    Invalid input is an ``InvalidInputError`` (``InvalidAgentError`` for agent fields), which is
    also a ``ValueError``; an argument of a type a method does not take is an
    ``ArgumentTypeError``, an ``InvalidInputError`` that is also a ``TypeError``. Every method
    checks its arguments before it reads or writes, by the rules of ``acti_store.validation``:
    integers are ``int`` (never ``bool`` or text) within their range (a count or a limit at
    most ``models.INTEGER_MAX``, a version at most ``models.COUNTER_MAX``), flags are ``True``
    or ``False``, ``on_conflict`` is one of ``CONFLICT_POLICIES`` exactly, and a model argument
    (``config``, ``changes``, ``record``, ``query``) is that model or a mapping validated into
    it, every problem listed.
    """

    mirror: Mirror | None = None
    #: Opened with ``read_only=True``: every write raises ``ReadOnlyStoreError``
    #: (``ReadOnlyStoreError.opened_read_only``), and so does a run, before it starts.
    read_only: bool = False

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

    @abstractmethod
    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        """Every agent with its history (None when never run), streamed page by page, all from
        one snapshot of the store."""

    @abstractmethod
    def iter_export_versions(
        self, page_size: int = 500
    ) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        """``iter_export`` with each agent's ``version_log``, all from the same one snapshot:
        the log holds the agent's own version, whatever is updated or pruned meanwhile."""

    @abstractmethod
    def bulk_put(
        self,
        items: Sequence[ImportItem],
        on_conflict: ConflictPolicy = "skip",
        *,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        """Put agents and histories exactly as given, in one transaction (all or nothing).
        ``items`` is a sequence of ``ImportItem``; ``on_conflict`` one of ``CONFLICT_POLICIES``,
        checked before anything is written (``InvalidInputError`` naming them). An agent
        replaced keeps its protected labels and its gates (``ProtectedImportError``), unless
        ``force`` with a ``note`` saying why: each of their moves is then logged forced."""

    def bulk_put_stream(
        self,
        items: Callable[[], Iterable[ImportItem]],
        on_conflict: ConflictPolicy = "skip",
        *,
        keep_names: bool = True,
        force: bool = False,
        note: str | None = None,
    ) -> BulkPutResult:
        """``bulk_put`` for more items than fit in memory: still one transaction, fed by
        ``items()``, which is called again if the transaction is retried. ``keep_names=False``
        counts the outcomes without keeping each name (``BulkPutResult.count``): the memory of
        a put then does not grow with the number of items. (This default holds every item at
        once: adapters that can stream override it.)"""
        return self.bulk_put(list(items()), checked_policy(on_conflict), force=force, note=note)

    def close(self) -> None:
        """Release connections (of a store used from async code, ``aclose`` releases all)."""
        return None

    def __enter__(self) -> Self:
        """``with open_repository(...) as repo:`` closes the store (``close``) at the end."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- configuration versions (see ``acti_store.versioning``) -----------------------------------
    # Each raises ``AgentNotFoundError`` for an unknown agent; arguments out of their rules are
    # ``InvalidInputError``s.

    @abstractmethod
    def versions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        """The stored snapshots, newest first (at most ``limit``)."""

    @abstractmethod
    def get_version(
        self, name: str, version: int | None = None, *, label: str | None = None
    ) -> AgentVersion:
        """One snapshot: by number, by label, else the current one. Raises
        ``VersionNotFoundError`` (never made, or pruned), ``LabelNotFoundError``."""

    @abstractmethod
    def diff(self, name: str, from_version: int, to_version: int) -> ConfigDiff:
        """What changed from one stored version to another. Raises ``VersionNotFoundError``."""

    @abstractmethod
    def rollback(
        self,
        name: str,
        to_version: int,
        *,
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Agent:
        """A new version (current + 1) with ``to_version``'s configuration. Raises
        ``VersionNotFoundError``, ``VersionConflictError`` (``expected_version`` is not the
        current one), ``NoChangesError`` (the configuration is already that)."""

    @abstractmethod
    def set_label(
        self,
        name: str,
        label: str,
        version: int | Mapping[int, int],
        *,
        expected_version: int | Mapping[int, int] | None = None,
        note: str | None = None,
        force: bool = False,
    ) -> None:
        """Point ``label`` at a stored ``version``, or split it over versions by whole-percent
        weights summing to 100 (``{3: 90, 4: 10}``), and log the move. ``expected_version`` is
        where the label points now (a version, or a split's weights): otherwise
        ``VersionConflictError`` and nothing moves. A protected label's gate
        (``protect_label``) checks every version the move sends a share to:
        ``GateRefusedError`` unless ``force=True`` with a ``note`` saying why (logged as
        forced)."""

    @abstractmethod
    def remove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        """Remove a label (the removal is logged). Raises ``LabelNotFoundError``."""

    @abstractmethod
    def labels(self, name: str) -> dict[str, int]:
        """Each label of the agent and the version it points at, by label."""

    @abstractmethod
    def label_history(self, name: str) -> list[LabelMove]:
        """Every set, move and removal of the agent's labels, newest first."""

    @abstractmethod
    def version_stats(self, name: str) -> dict[int, ExecutionStats]:
        """Lifetime run statistics per version that ran (exact over every run), by version."""

    def version_log(self, name: str) -> VersionLog:
        """Every snapshot (newest first), the labels and the label log of an agent: what its
        ``{name}_versions.json`` holds."""
        return VersionLog(
            versions=self.versions(name), labels=self.labels(name),
            label_history=self.label_history(name),
        )  # fmt: skip

    @abstractmethod
    def prune_versions(self, name: str, keep: int) -> int:
        """Keep the ``keep`` newest snapshots besides the current and the labelled ones (always
        kept, and so is every version a split sends a share to); returns how many were
        removed. Run statistics stay."""

    # -- routing by label (optional: a store without it raises NotImplementedError) ----------

    def label_weights(self, name: str) -> dict[str, dict[int, int]]:
        """Each label's target as weights, by label: ``{version: 100}`` for one version."""
        return {label: {version: 100} for label, version in self.labels(name).items()}

    def resolve(self, name: str, label: str | None = None, key: str | None = None) -> AgentVersion:
        """The version ``label`` sends ``key`` to: the same while the split stands (a hash of
        agent, label and key); without a key a random draw by weight; without a label the
        current version. Raises ``LabelNotFoundError``."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    def rollback_label(
        self, name: str, label: str, *, note: str | None = None, force: bool = False
    ) -> dict[int, int] | None:
        """Point ``label`` back where it was before its last move not yet rolled back (weights
        included; None: that move set it, and the rollback removes it), logged as a rollback;
        a second rollback goes one move further back. Returns where it points now. The gate
        applies as in ``set_label``. Raises ``InvalidInputError`` when there is nothing to
        roll back."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    def compare_versions(self, name: str, a: int, b: int) -> VersionComparison:
        """Versions ``a`` and ``b`` side by side over every run counted for them: runs,
        success rate with its Wilson 95 % interval, mean duration, and b's success rate minus
        a's with its 95 % interval. Raises ``VersionNotFoundError`` for a version never made."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    def protect_label(
        self,
        name: str,
        label: str,
        *,
        min_runs: int = 0,
        min_success_rate: float = 0.0,
        max_mean_duration: float | None = None,
    ) -> None:
        """Give ``label`` a gate (replacing any): a move may send a share only to versions with
        at least ``min_runs`` runs, a success rate of at least ``min_success_rate`` and a mean
        duration of at most ``max_mean_duration`` seconds. The label need not be set yet."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    def unprotect_label(self, name: str, label: str) -> bool:
        """Remove ``label``'s gate; whether it had one."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    def label_gates(self, name: str) -> dict[str, LabelGate]:
        """The protected labels' gates, by label."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    # -- the change feed (optional: a store without one raises NotImplementedError) ---------

    def changes(self, after: int | None = None, limit: int = 100) -> list[Change]:
        """The changes after ``after`` (the last ``seq`` the caller has seen; None: from the
        oldest kept), oldest first, at most ``limit`` (1 to 10,000): numbered in commit order,
        so a caller that passes its last ``seq`` back sees every change once. Raises
        ``ChangesExpiredError`` when changes after ``after`` were pruned (or ``after`` is past
        the newest change): the caller must read the store again."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def last_change(self) -> int:
        """The newest change's ``seq`` (0: none yet)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def prune_changes(self, before: datetime) -> int:
        """Delete the changes made before ``before`` (time-zone aware); how many were. A
        consumer whose position is older then gets ``ChangesExpiredError``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def checkpoint(self, name: str) -> int | None:
        """The position a feed consumer ``name`` saved (``save_checkpoint``), or None."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def save_checkpoint(self, name: str, seq: int) -> None:
        """Store feed consumer ``name``'s position (a relay's: ``acti-store relay``)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def watch(self, after: int | None = None, *, timeout: float | None = None) -> Iterator[Change]:
        """The changes after ``after`` (None: from now) as they commit, blocking between them;
        ends once ``timeout`` seconds pass with none (None: never). A lost connection is made
        again and the watch goes on from its position."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    def awatch(
        self, after: int | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[Change]:
        """``watch`` as an async iterator: its waits never hold up the event loop."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")
