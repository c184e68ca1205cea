"""The port's parts beyond its core, by role. ``InterchangePort``: the export's one-snapshot
streams and the import's bulk put; ``VersionsPort``: every configuration version and the labels
that point at one (``acti_store.versioning``); ``RoutingPort``: labels that split traffic between
versions, their gates and the comparison of two versions; ``ChangesPort``: the change feed. A
store without routing or a change feed raises ``NotImplementedError`` from their methods.
``port.RepositoryPort`` gathers them with the core of ``port_core``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

from ..changes import Change
from ..models import (
    Agent,
    ExecutionHistory,
    ExecutionStats,
)
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

#: The mark of a part's method whose default raises ``NotImplementedError``.
OPTIONAL: Final = "__acti_optional__"
F = TypeVar("F", bound=Callable[..., Any])


def optional(method: F) -> F:
    """Mark ``method`` as one a store implements to have its part (``PARTS``)."""
    setattr(method, OPTIONAL, True)
    return method


class InterchangePort:
    """What export and import read and write: every agent with its history (and its version
    log) from one snapshot, and many agents put in one transaction (optional: a store without
    it raises ``NotImplementedError``)."""

    @optional
    def iter_export(self, page_size: int = 500) -> Iterator[tuple[Agent, ExecutionHistory | None]]:
        """Every agent with its history (None when never run), streamed page by page, all from
        one snapshot of the store."""
        raise NotImplementedError(
            f"{type(self).__name__} reads and writes no bulk export or import"
        )

    @optional
    def iter_export_versions(
        self, page_size: int = 500
    ) -> Iterator[tuple[Agent, ExecutionHistory | None, VersionLog]]:
        """``iter_export`` with each agent's ``version_log``, all from the same one snapshot:
        the log holds the agent's own version, whatever is updated or pruned meanwhile."""
        raise NotImplementedError(
            f"{type(self).__name__} reads and writes no bulk export or import"
        )

    @optional
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
        raise NotImplementedError(
            f"{type(self).__name__} reads and writes no bulk export or import"
        )

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


class VersionsPort:
    """Configuration versions and labels (``acti_store.versioning``). Each method raises
    ``AgentNotFoundError`` for an unknown agent; arguments out of their rules are
    ``InvalidInputError``s (optional: a store without them raises ``NotImplementedError``)."""

    @optional
    def versions(self, name: str, *, limit: int | None = None) -> list[AgentVersion]:
        """The stored snapshots, newest first (at most ``limit``)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def get_version(
        self, name: str, version: int | None = None, *, label: str | None = None
    ) -> AgentVersion:
        """One snapshot: by number, by label, else the current one. Raises
        ``VersionNotFoundError`` (never made, or pruned), ``LabelNotFoundError``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def diff(self, name: str, from_version: int, to_version: int) -> ConfigDiff:
        """What changed from one stored version to another. Raises ``VersionNotFoundError``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
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
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
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
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def remove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        """Remove a label (the removal is logged). Raises ``LabelNotFoundError``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def labels(self, name: str) -> dict[str, int]:
        """Each label of the agent and the version it points at, by label."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def label_history(self, name: str) -> list[LabelMove]:
        """Every set, move and removal of the agent's labels, newest first."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    @optional
    def version_stats(self, name: str) -> dict[int, ExecutionStats]:
        """Lifetime run statistics per version that ran (exact over every run), by version."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")

    def version_log(self, name: str) -> VersionLog:
        """Every snapshot (newest first), the labels and the label log of an agent: what its
        ``{name}_versions.json`` holds."""
        return VersionLog(
            versions=self.versions(name), labels=self.labels(name),
            label_history=self.label_history(name),
        )  # fmt: skip

    @optional
    def prune_versions(self, name: str, keep: int) -> int:
        """Keep the ``keep`` newest snapshots besides the current and the labelled ones (always
        kept, and so is every version a split sends a share to); returns how many were
        removed. Run statistics stay."""
        raise NotImplementedError(f"{type(self).__name__} keeps no configuration versions")


class RoutingPort(VersionsPort):
    """Routing by label: splits, gates, a label rolled back, two versions compared (optional: a
    store without it raises ``NotImplementedError``)."""

    def label_weights(self, name: str) -> dict[str, dict[int, int]]:
        """Each label's target as weights, by label: ``{version: 100}`` for one version."""
        return {label: {version: 100} for label, version in self.labels(name).items()}

    @optional
    def resolve(self, name: str, label: str | None = None, key: str | None = None) -> AgentVersion:
        """The version ``label`` sends ``key`` to: the same while the split stands (a hash of
        agent, label and key); without a key a random draw by weight; without a label the
        current version. Raises ``LabelNotFoundError``."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    @optional
    def rollback_label(
        self, name: str, label: str, *, note: str | None = None, force: bool = False
    ) -> dict[int, int] | None:
        """Point ``label`` back where it was before its last move not yet rolled back (weights
        included; None: that move set it, and the rollback removes it), logged as a rollback;
        a second rollback goes one move further back. Returns where it points now. The gate
        applies as in ``set_label``. Raises ``InvalidInputError`` when there is nothing to
        roll back."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    @optional
    def compare_versions(self, name: str, a: int, b: int) -> VersionComparison:
        """Versions ``a`` and ``b`` side by side over every run counted for them: runs,
        success rate with its Wilson 95 % interval, mean duration, and b's success rate minus
        a's with its 95 % interval. Raises ``VersionNotFoundError`` for a version never made."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    @optional
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

    @optional
    def unprotect_label(self, name: str, label: str) -> bool:
        """Remove ``label``'s gate; whether it had one."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")

    @optional
    def label_gates(self, name: str) -> dict[str, LabelGate]:
        """The protected labels' gates, by label."""
        raise NotImplementedError(f"{type(self).__name__} does not route by label")


class ChangesPort:
    """The change feed (optional: a store without one raises ``NotImplementedError``)."""

    @optional
    def changes(self, after: int | None = None, limit: int = 100) -> list[Change]:
        """The changes after ``after`` (the last ``seq`` the caller has seen; None: from the
        oldest kept), oldest first, at most ``limit`` (1 to 10,000): numbered in commit order,
        so a caller that passes its last ``seq`` back sees every change once. Raises
        ``ChangesExpiredError`` when changes after ``after`` were pruned (or ``after`` is past
        the newest change): the caller must read the store again."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def last_change(self) -> int:
        """The newest change's ``seq`` (0: none yet)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def prune_changes(self, before: datetime) -> int:
        """Delete the changes made before ``before`` (time-zone aware); how many were. A
        consumer whose position is older then gets ``ChangesExpiredError``."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def checkpoint(self, name: str) -> int | None:
        """The position a feed consumer ``name`` saved (``save_checkpoint``), or None."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def save_checkpoint(self, name: str, seq: int) -> None:
        """Store feed consumer ``name``'s position (a relay's: ``acti-store relay``)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def watch(self, after: int | None = None, *, timeout: float | None = None) -> Iterator[Change]:
        """The changes after ``after`` (None: from now) as they commit, blocking between them;
        ends once ``timeout`` seconds pass with none (None: never). A lost connection is made
        again and the watch goes on from its position."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")

    @optional
    def awatch(
        self, after: int | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[Change]:
        """``watch`` as an async iterator: its waits never hold up the event loop."""
        raise NotImplementedError(f"{type(self).__name__} keeps no change feed")


#: The optional parts of the port, and the methods a store implements to have each: those of
#: the part's class whose default here raises ``NotImplementedError`` (``optional``).
PARTS: Final[dict[str, tuple[type, tuple[str, ...]]]] = {
    part: (port, tuple(name for name, value in vars(port).items() if hasattr(value, OPTIONAL)))
    for part, port in (
        ("interchange", InterchangePort),
        ("versions", VersionsPort),
        ("routing", RoutingPort),
        ("changes", ChangesPort),
    )
}


def missing_methods(store: type, part: str) -> list[str]:
    """The methods of ``part`` that the class ``store`` does not implement (left at the
    port's default)."""
    port, names = PARTS[part]
    return [name for name in names if getattr(store, name) is getattr(port, name)]
