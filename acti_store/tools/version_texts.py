"""The texts of the four version tools (and the CLI's ``versions``, ``diff``, ``rollback``,
``label``, ``labels``), each template defined once, in the style of the contract's texts.

As in ``texts``, a text names its next step through a table of call fragments: tool calls for the
model (``VERSION_TOOL_CALLS``), ``acti-store`` commands for a person (``VERSION_CLI_CALLS``).
"""

from __future__ import annotations

from typing import Final, NamedTuple

from ..versioning import ConfigDiff, LabelMove
from .render import display_time, quoted
from .texts import ENTRIES_BUDGET, NONE, RULE

#: Most versions ``list_agent_versions`` shows at once, and by default.
VERSIONS_LIMIT_MAX: Final = 100
VERSIONS_LIMIT_DEFAULT: Final = 10


class VersionCalls(NamedTuple):
    """How a version text names the next step; ``{name}``, ``{version}``, ``{label}`` filled."""

    versions: str
    diff: str
    rollback: str
    confirm_rollback: str
    label: str


VERSION_TOOL_CALLS: Final = VersionCalls(
    versions="list_agent_versions('{name}')",
    diff="diff_agent_versions('{name}', <from_version>, <to_version>)",
    rollback="rollback_agent_config('{name}', <version>)",
    confirm_rollback="rollback_agent_config('{name}', {version}, confirm=True)",
    label="set_agent_label('{name}', '<label>', <version>)",
)
VERSION_CLI_CALLS: Final = VersionCalls(
    versions="acti-store versions {name}",
    diff="acti-store diff {name} FROM TO",
    rollback="acti-store rollback {name} VERSION",
    confirm_rollback="acti-store rollback {name} {version} --yes",
    label="acti-store label {name} LABEL VERSION",
)

VERSION_LIST: Final = f"""Versions of agent '{{name}}' (current: v{{current}}, newest first)
{RULE}
{{entries}}
{RULE}
Labels: {{labels}}
{{more}}
Compare two versions with {{diff}}; go back to one with {{rollback}}."""

VERSION_ENTRY: Final = "v{version}{marks}  {created}\n    Message: {message}"
CURRENT_MARK: Final = " [current]"
MORE_VERSIONS: Final = (
    "Showing the newest {shown}; older versions are stored: pass a larger limit "
    f"(at most {VERSIONS_LIMIT_MAX}).\n"
)

DIFF: Final = f"""Diff of agent '{{name}}'
{RULE}
{{report}}
{RULE}
{{closing}}"""
DIFF_CLOSING: Final = "To make v{version} current again: {rollback}"
DIFF_CUT: Final = "\n... (the diff has {length} characters; the artifact holds all of it)"

ROLLBACK_PREVIEW: Final = """PREVIEW: Rolling back agent '{name}' to v{target} would write v{new} \
with the configuration of v{target} (current: v{current}).

Changes it would apply:
{changes}

Nothing was changed. To roll back, call:
  {confirm_rollback}"""

ROLLED_BACK: Final = """SUCCESS: Agent '{name}' rolled back to the configuration of v{target}: \
now v{new}.

Changes applied:
{changes}

Saved to: {location}"""

ROLLBACK_NO_CHANGES: Final = """ERROR: Agent '{name}' already has the configuration of \
v{target} (current: v{current}). Nothing to roll back.

See its versions with {versions}."""

LABEL_SET: Final = """SUCCESS: Label '{label}' of agent '{name}' {moved}.

Labels now: {labels}"""
LABEL_NEW: Final = "set on v{to_version} (it was not set)"
LABEL_MOVED: Final = "moved from v{from_version} to v{to_version}"
LABEL_REMOVED: Final = "removed (it was on v{from_version})"
LABEL_UNCHANGED: Final = "already on v{to_version}: nothing changed"

LABEL_CONFLICT: Final = """ERROR: Label '{label}' of agent '{name}' was moved by someone else \
while this call ran: it is now {now}. Nothing was changed.

Check the labels with {versions} and call again if it should still move."""

VERSION_NOT_FOUND: Final = """ERROR: {reason}.

See the stored versions with {versions}."""

LABEL_NOT_FOUND: Final = """ERROR: {reason}.

Set one with {label}."""

INVALID_LABEL: Final = """ERROR: Invalid label '{label}'.

A label {rule}, e.g. production, staging, canary."""

LABEL_REPORT: Final = """Labels of agent '{name}': {labels}

{log}"""
LABEL_LOG: Final = "Label moves (newest first):\n{moves}"
LABEL_LOG_ENTRY: Final = "  {moved_at}  {label}: {change}{note}"


def labels_line(labels: dict[str, int]) -> str:
    """``production -> v3, staging -> v4``, or ``(none)``."""
    return ", ".join(f"{label} -> v{version}" for label, version in labels.items()) or NONE


def label_change(from_version: int | None, to_version: int | None) -> str:
    if from_version is None:
        return LABEL_NEW.format(to_version=to_version)
    if to_version is None:
        return LABEL_REMOVED.format(from_version=from_version)
    if from_version == to_version:
        return LABEL_UNCHANGED.format(to_version=to_version)
    return LABEL_MOVED.format(from_version=from_version, to_version=to_version)


def label_log(moves: list[LabelMove]) -> str:
    entries = [
        LABEL_LOG_ENTRY.format(
            moved_at=display_time(m.moved_at),
            label=m.label,
            change=label_change(m.from_version, m.to_version),
            note=f" ({quoted(m.note)})" if m.note else "",
        )
        for m in moves
    ]
    return LABEL_LOG.format(moves="\n".join(entries) or f"  {NONE}")


def diff_report(diff: ConfigDiff, *, skip_heading: bool = False) -> str:
    """The diff's readable report, cut before ``ENTRIES_BUDGET`` characters (a diff of two
    100,000-character prompts would be far more than a model should read at once)."""
    text = str(diff)
    if skip_heading:
        text = text.partition("\n")[2] or "  (none)"
    if len(text) > ENTRIES_BUDGET:
        return text[:ENTRIES_BUDGET] + DIFF_CUT.format(length=len(text))
    return text
