"""The change feed's types: what one change of a configuration is (``Change``).

Pure Python, like ``models``: every write of a configuration (create, update, rollback, clone,
delete, a label set or removed, versions pruned, an import's agents) appends one ``Change`` in its
own transaction (``repository.feed``); ``repo.changes(after)`` reads them in commit order, so a
consumer that keeps the last ``seq`` it saw resumes with nothing skipped and nothing twice. Runs
are not changes: they are counted, not configured.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict

from .models import UtcDatetime

ChangeKind = Literal[
    "created", "updated", "deleted", "label_set", "label_removed", "versions_pruned"
]
#: Every kind of change, in the order above.
CHANGE_KINDS: Final[tuple[str, ...]] = get_args(ChangeKind)
#: Changes per ``changes`` call unless told otherwise, and the most one call returns.
CHANGES_LIMIT_DEFAULT: Final = 100
CHANGES_LIMIT_MAX: Final = 10_000


class Change(BaseModel):
    """One change of a tenant's configurations, numbered in commit order.

    ``version``: the agent's new current version (``created``, ``updated``: a rollback is an
    update), the version a label now points at (``label_set``) or pointed at
    (``label_removed``), the current version the agent had (``deleted``, ``versions_pruned``).
    ``label``: the label of a ``label_set`` or ``label_removed``. ``at``: when it was made, by
    the store's clock.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    kind: ChangeKind
    agent: str
    version: int | None = None
    label: str | None = None
    at: UtcDatetime
    tenant: str

    def to_json(self) -> dict[str, Any]:
        """The change as a JSON object (``at`` in ISO 8601 with its offset): a line of
        ``acti-store changes --json``, a relay's request body."""
        return self.model_dump(mode="json")
