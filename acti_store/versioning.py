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

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .models import COUNTER_MAX, AgentConfig, UtcDatetime, trusted

LABEL_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
LABEL_MAX_LENGTH: Final = 32
LABEL_RULE: Final = (
    "must be 1-32 characters: a lowercase letter, then lowercase letters, digits, '_' or '-' "
    "(pattern ^[a-z][a-z0-9_-]{0,31}$)"
)
#: Longest mean duration a gate can ask for: a day, in seconds.
DURATION_MAX: Final = 86_400.0
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


class LabelGate(_Model):
    """What a version must have shown, over every run counted for it, before a protected label
    sends it any share (``protect_label``)."""

    min_runs: int = Field(default=0, ge=0, le=COUNTER_MAX)
    min_success_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    max_mean_duration: float | None = Field(default=None, gt=0, le=DURATION_MAX)

    def __str__(self) -> str:
        parts = []
        if self.min_runs:
            parts.append(f"at least {self.min_runs} run{'s' if self.min_runs != 1 else ''}")
        if self.min_success_rate:
            parts.append(f"a success rate of at least {self.min_success_rate:.1%}")
        if self.max_mean_duration is not None:
            parts.append(f"a mean duration of at most {self.max_mean_duration:g} s")
        return ", ".join(parts) or "no figures: every version passes"


class GateCheck(_Model):
    """One version's figures held against a label's gate when a move sent it a share."""

    version: int = Field(ge=1, le=COUNTER_MAX)
    runs: int = Field(ge=0, le=COUNTER_MAX)
    #: At most ``runs``.
    successes: int = Field(ge=0, le=COUNTER_MAX)
    mean_duration: float | None = Field(ge=0, allow_inf_nan=False)
    #: What the version lacks, in words; empty when it passed.
    failures: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _successes_among_runs(self) -> GateCheck:
        if self.successes > self.runs:
            raise ValueError(
                f"version {self.version} has {self.successes} successes in {self.runs} runs"
            )
        return self

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.runs if self.runs else None


class LabelMove(_Model):
    """One entry of an agent's label log: a label set (``from_version`` None), moved or removed
    (``to_version`` None). For a split, ``from_version``/``to_version`` are its main version
    (the largest share) and ``from_weights``/``to_weights`` the whole split; they are None where
    that side is a single version. ``rollback``: the move undid the label's last one
    (``rollback_label``); ``forced``: a gate refused it and ``force=True`` overrode; ``checks``:
    the gate's checks of the versions the move sent shares to (None: the label had no gate);
    ``imported``: the entry came in with an imported ``{name}_versions.json``, history another
    store wrote, not a move this store's gates checked."""

    label: str
    from_version: int | None = Field(ge=1, le=COUNTER_MAX)
    to_version: int | None = Field(ge=1, le=COUNTER_MAX)
    moved_at: UtcDatetime
    note: str | None = None
    from_weights: dict[int, int] | None = None
    to_weights: dict[int, int] | None = None
    rollback: bool = False
    forced: bool = False
    checks: list[GateCheck] | None = None
    imported: bool = False

    @property
    def before(self) -> dict[int, int] | None:
        """Where the label pointed before the move, as weights (None: it was not set)."""
        if self.from_weights is not None:
            return self.from_weights
        return None if self.from_version is None else {self.from_version: 100}

    @property
    def after(self) -> dict[int, int] | None:
        """Where the move left the label, as weights (None: removed)."""
        if self.to_weights is not None:
            return self.to_weights
        return None if self.to_version is None else {self.to_version: 100}


class VersionLog(_Model):
    """What an agent's ``{name}_versions.json`` holds: its snapshots (newest first), where its
    labels point, and the label log (newest first)."""

    versions: list[AgentVersion]
    labels: dict[str, int] = Field(default_factory=dict)
    label_history: list[LabelMove] = Field(default_factory=list)
    #: The labels that split their traffic, with their weights (``labels`` has their main
    #: version).
    splits: dict[str, dict[int, int]] = Field(default_factory=dict)
    #: The protected labels' gates.
    gates: dict[str, LabelGate] = Field(default_factory=dict)


class VersionFigures(_Model):
    """One version's runs, over every run counted for it (not only the 50 kept)."""

    version: int
    runs: int
    successes: int
    #: None without runs.
    success_rate: float | None
    #: The Wilson score 95 % interval of the success rate; (0.0, 1.0) without runs.
    interval: tuple[float, float]
    #: Seconds; None without runs.
    mean_duration: float | None


class VersionComparison(_Model):
    """Two versions of one agent side by side (``compare_versions``): ``difference`` is b's
    success rate minus a's, ``difference_interval`` its 95 % interval (Newcombe's hybrid
    score interval); both None while either version has no runs."""

    name: str
    a: VersionFigures
    b: VersionFigures
    difference: float | None
    difference_interval: tuple[float, float] | None


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
