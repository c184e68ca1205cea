"""What a bulk put takes and gives: ``ImportItem``s in, a ``BulkPutResult`` out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..models import Agent, ExecutionHistory
from ..versioning import VersionLog

ImportOutcome = Literal["imported", "skipped", "replaced"]


@dataclass(frozen=True)
class ImportItem:
    """One agent (and/or its history) to put into the store as it is, metadata included."""

    name: str
    agent: Agent | None = None
    history: ExecutionHistory | None = None
    #: The agent's versions (with ``agent``); None: one snapshot of its current version.
    versions: VersionLog | None = None


@dataclass
class BulkPutResult:
    """What a bulk put did: the outcome of each agent by name, or, when told not to keep the
    names (``bulk_put_stream(..., keep_names=False)``), only how many had each outcome."""

    outcomes: dict[str, ImportOutcome] = field(default_factory=dict)
    #: Outcomes counted without their names.
    unnamed: Counter[ImportOutcome] = field(default_factory=Counter)
    keep_names: bool = field(default=True, repr=False, compare=False)

    def add(self, name: str, outcome: ImportOutcome) -> None:
        """Record ``name``'s outcome (a name put twice keeps its last one)."""
        if self.keep_names:
            self.outcomes[name] = outcome
        else:
            self.unnamed[outcome] += 1

    def count(self, outcome: ImportOutcome) -> int:
        """How many agents had ``outcome``, names kept or not."""
        return self.unnamed[outcome] + sum(1 for o in self.outcomes.values() if o == outcome)
