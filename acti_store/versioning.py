"""Configuration versions: the types of a snapshot, a label move and a diff, and their rules.

Pure Python, like ``models``: every create, update, rollback and clone stores an immutable
snapshot of the seven configuration fields (``AgentVersion``); labels (``production``...) point
at versions and every move is logged (``LabelMove``); ``config_diff`` compares two snapshots
field by field (``ConfigDiff``).
"""

from __future__ import annotations

import difflib
import re
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from .models import COUNTER_MAX, AgentConfig, UtcDatetime, trusted

LABEL_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
LABEL_MAX_LENGTH: Final = 32
LABEL_RULE: Final = (
    "must be 1-32 characters: a lowercase letter, then lowercase letters, digits, '_' or '-' "
    "(pattern ^[a-z][a-z0-9_-]{0,31}$)"
)
#: Longest commit message of a version, and note of a label move.
MESSAGE_MAX_LENGTH: Final = 500
#: The fields a snapshot holds, in the contract's order.
CONFIG_FIELDS: Final[tuple[str, ...]] = tuple(AgentConfig.model_fields)
#: Fields compared as text (a unified diff of their lines), and as sets (added / removed).
TEXT_FIELDS: Final = frozenset({"description", "system_prompt"})
SET_FIELDS: Final = frozenset({"tools", "tags"})
#: The messages the store writes itself.
UPGRADE_MESSAGE: Final = "imported at upgrade"
IMPORT_MESSAGE: Final = "imported"


def clone_message(source: str, version: int) -> str:
    return f"cloned from {source} v{version}"


def rollback_message(version: int) -> str:
    return f"rollback to v{version}"


def is_valid_label(value: object) -> bool:
    return isinstance(value, str) and LABEL_PATTERN.fullmatch(value) is not None


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentVersion(_Model):
    """One immutable snapshot: the configuration an agent had at ``version``."""

    name: str
    version: int = Field(ge=1, le=COUNTER_MAX)
    config: AgentConfig
    created_at: UtcDatetime
    message: str | None = None
    #: The labels that point at this version now, by name.
    labels: list[str] = Field(default_factory=list)


class LabelMove(_Model):
    """One entry of an agent's label log: a label set (``from_version`` None), moved or removed
    (``to_version`` None)."""

    label: str
    from_version: int | None
    to_version: int | None
    moved_at: UtcDatetime
    note: str | None = None


class VersionLog(_Model):
    """What an agent's ``{name}_versions.json`` holds: its snapshots (newest first), where its
    labels point, and the label log (newest first)."""

    versions: list[AgentVersion]
    labels: dict[str, int] = Field(default_factory=dict)
    label_history: list[LabelMove] = Field(default_factory=list)


class FieldChange(_Model):
    """One changed field. ``unified`` (text fields) is a unified diff of the lines; ``added``
    and ``removed`` (``tools``, ``tags``) the items that came and went."""

    field: str
    old: Any
    new: Any
    unified: list[str] | None = None
    added: list[str] | None = None
    removed: list[str] | None = None

    def report(self) -> list[str]:
        """The change as lines of text."""
        if self.unified is not None:
            return [f"{self.field}:", *(f"  {line}" for line in self.unified)]
        if self.added is not None and self.removed is not None:
            parts = [f"added {', '.join(self.added)}"] if self.added else []
            parts += [f"removed {', '.join(self.removed)}"] if self.removed else []
            if not parts:  # the same items in another order
                parts = [f"order {self.old!r} -> {self.new!r}"]
            return [f"{self.field}: {'; '.join(parts)}"]
        return [f"{self.field}: {self.old!r} -> {self.new!r}"]


class ConfigDiff(_Model):
    """What changed between two versions of one agent, one ``FieldChange`` per changed field."""

    name: str
    from_version: int
    to_version: int
    changes: list[FieldChange]

    def __str__(self) -> str:
        head = f"{self.name}: version {self.from_version} -> {self.to_version}"
        if not self.changes:
            return f"{head}: no changes"
        count = len(self.changes)
        lines = [f"{head}, {count} field{'s' if count != 1 else ''} changed"]
        for change in self.changes:
            lines.extend(change.report())
        return "\n".join(lines)


def _unified(name: str, field: str, old: tuple[int, str], new: tuple[int, str]) -> list[str]:
    return list(
        difflib.unified_diff(
            old[1].splitlines(),
            new[1].splitlines(),
            fromfile=f"{name} v{old[0]} {field}",
            tofile=f"{name} v{new[0]} {field}",
            lineterm="",
        )
    )


def config_diff(
    name: str, from_version: int, old: AgentConfig, to_version: int, new: AgentConfig
) -> ConfigDiff:
    """The field-by-field difference between two configurations of agent ``name``."""
    changes: list[FieldChange] = []
    for field in CONFIG_FIELDS:
        before, after = getattr(old, field), getattr(new, field)
        if before == after:
            continue
        if field in TEXT_FIELDS:
            unified = _unified(name, field, (from_version, before), (to_version, after))
            changes.append(FieldChange(field=field, old=before, new=after, unified=unified))
        elif field in SET_FIELDS:
            added = [item for item in after if item not in before]
            removed = [item for item in before if item not in after]
            change = FieldChange(field=field, old=before, new=after, added=added, removed=removed)
            changes.append(change)
        else:
            changes.append(FieldChange(field=field, old=before, new=after))
    return ConfigDiff(name=name, from_version=from_version, to_version=to_version, changes=changes)


def version_of(
    name: str,
    version: int,
    config: AgentConfig,
    created_at: datetime,
    message: str | None,
    labels: list[str],
) -> AgentVersion:
    """An ``AgentVersion`` from stored values (validated on the way in: not again)."""
    return trusted(
        AgentVersion,
        name=name,
        version=version,
        config=config,
        created_at=created_at,
        message=message,
        labels=labels,
    )
