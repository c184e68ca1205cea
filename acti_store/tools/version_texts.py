"""The texts of the four version tools (and the CLI's ``versions``, ``diff``, ``rollback``,
``label``, ``labels``), each template defined once, in the style of the contract's texts.

As in ``texts``, a text names its next step through a table of call fragments: tool calls for the
model (``VERSION_TOOL_CALLS``), ``acti-store`` commands for a person (``VERSION_CLI_CALLS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

from ..errors import GateRefusedError
from ..routing import is_split
from ..versioning import (
    ConfigDiff,
    GateCheck,
    LabelGate,
    LabelMove,
    VersionComparison,
    VersionFigures,
)
from .render import display_time, percent, quoted, seconds
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
    #: A split of a label, as an example (``{name}``, ``{label}``, ``{a}``, ``{b}`` filled).
    split: str
    #: Undoing a label's last move.
    rollback_label: str
    #: Comparing two versions' runs (``{a}``, ``{b}``).
    compare: str
    #: How a gate is passed anyway: a person's forced move (``{label}``, ``{target}``).
    force: str
    #: Not a template but a value: ``{program}``, as in ``texts.Calls``.
    program: str = "acti-store"
    #: Not a template but a value: ``{code}``, the code of a printed confirmation, as in
    #: ``texts.Calls``.
    code: str = ""

    def call(self, fragment: str, **values: object) -> str:
        """``fragment`` (one of this table's templates) filled with ``values``, the program and
        the code."""
        return fragment.format(program=self.program, code=self.code, **values)


VERSION_TOOL_CALLS: Final = VersionCalls(
    versions="list_agent_versions('{name}')",
    diff="diff_agent_versions('{name}', <from_version>, <to_version>)",
    rollback="rollback_agent_config('{name}', <version>)",
    confirm_rollback="rollback_agent_config('{name}', {version}, confirm=True)",
    label="set_agent_label('{name}', '<label>', <version>)",
    split="set_agent_label('{name}', '{label}', split=[{{'version': {a}, 'weight': 90}}, "
    "{{'version': {b}, 'weight': 10}}])",
    rollback_label="rollback_agent_label('{name}', '{label}')",
    compare="compare_agent_versions('{name}', {a}, {b})",
    force="Only a person can move it past the gate (acti-store label {name} {label} {target} "
    "--force --note WHY): ask the user; do not retry this call",
)
#: The wording of ``acti-store``: each command starts with ``{program}``; a confirmation (a
#: rollback's, a forced label move's) carries ``--confirm {code}``.
VERSION_CLI_CALLS: Final = VersionCalls(
    versions="{program} versions {name}",
    diff="{program} diff {name} FROM TO",
    rollback="{program} rollback {name} VERSION",
    confirm_rollback="{program} rollback {name} {version} --confirm {code}",
    label="{program} label {name} LABEL VERSION",
    split="{program} label {name} {label} {a}=90 {b}=10",
    rollback_label="{program} label {name} {label} --rollback",
    compare="{program} compare {name} {a} {b}",
    force="To move it anyway, run: {program} label {name} {label} {target} --force "
    '--confirm {code} --note "why"',
)

VERSION_LIST: Final = f"""Versions of agent '{{name}}' (current: v{{current}}, newest first)
{RULE}
{{entries}}
{RULE}
Labels: {{labels}}
{{gates}}{{more}}
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
LABEL_NEW: Final = "set on {to_version} (it was not set)"
LABEL_MOVED: Final = "moved from {from_version} to {to_version}"
LABEL_REMOVED: Final = "removed (it was on {from_version})"
LABEL_UNCHANGED: Final = "already on {to_version}: nothing changed"
LABEL_ROLLED_BACK: Final = "rolled back from {from_version} to {to_version}"
LABEL_ROLLED_BACK_UNSET: Final = (
    "rolled back: removed (it was on {from_version}, and was not set before)"
)

LABEL_CONFLICT: Final = """ERROR: Label '{label}' of agent '{name}' was moved by someone else \
while this call ran: it is now {now}. Nothing was changed.

Check the labels with {versions} and call again if it should still move."""

#: A protected label's gate refused a move (``GateRefusedError``).
GATE_REFUSED: Final = """ERROR: Label '{label}' of agent '{name}' is protected: a version gets \
a share of it only with {gate}. Nothing was moved; the gate refused:
{checks}

{force}. Compare the versions with {compare}, or let {version} run more first."""
GATE_CHECK_LINE: Final = "  - v{version} ({figures}): {failures}"

NOTHING_TO_ROLL_BACK: Final = """ERROR: Label '{label}' of agent '{name}' has no move to roll \
back. Nothing was changed.

See the labels with {versions}."""
#: What a forced rollback is spelled with in the CLI's ``force`` hint (``label NAME L --rollback``).
ROLLBACK_TARGET: Final = "--rollback"

PROTECTED: Final = """SUCCESS: Label '{label}' of agent '{name}' is protected: a move sends it \
a share only with {gate}."""
UNPROTECTED: Final = "SUCCESS: Label '{label}' of agent '{name}' is no longer protected."
NOT_PROTECTED: Final = (
    "SUCCESS: Label '{label}' of agent '{name}' was not protected: nothing changed."
)

SPLIT_INVALID: Final = """ERROR: Give either version (one version gets all of the label) or \
split (several versions share it): {given}.

Example of a split: {split}"""

VERSION_NOT_FOUND: Final = """ERROR: {reason}.

See the stored versions with {versions}."""

LABEL_NOT_FOUND: Final = """ERROR: {reason}.

Set one with {label}."""

INVALID_LABEL: Final = """ERROR: Invalid label '{label}'.

A label {rule}, e.g. production, staging, canary."""

LABEL_REPORT: Final = """Labels of agent '{name}': {labels}
{gates}
{log}"""
GATES_LINE: Final = "Protected: {gates}\n"
GATE_ENTRY: Final = "{label} (needs {gate})"
LABEL_LOG: Final = "Label moves (newest first):\n{moves}"
LABEL_LOG_ENTRY: Final = "  {moved_at}  {label}: {change}{marks}{note}"
FORCED_MARK: Final = " [forced]"
ROLLBACK_MARK: Final = " [rollback]"

COMPARISON: Final = f"""Version Comparison: {{name}} (v{{a}} vs v{{b}})
{RULE}

{{figures_a}}

{{figures_b}}

{{difference}}
{RULE}
{{verdict}}"""
FIGURES: Final = """v{version}:
  Runs: {runs}
  Success Rate: {rate}
  Average Duration: {duration}"""
FIGURES_RATE: Final = "{rate}% ({successes}/{runs}), 95% interval {low}%-{high}%"
NO_RUNS: Final = "no runs yet"
DIFFERENCE: Final = (
    "Difference (v{b} - v{a}): {difference} points, 95% interval {low} to {high} points"
)
DIFFERENCE_UNKNOWN: Final = "Difference (v{b} - v{a}): not known until both versions have runs"
VERDICT_NO_RUNS: Final = "Let both versions run first, e.g. split a label between them: {split}"
VERDICT_BETTER: Final = "v{b} succeeds more often than v{a}: the whole interval is above 0."
VERDICT_WORSE: Final = "v{b} succeeds less often than v{a}: the whole interval is below 0."
VERDICT_UNCLEAR: Final = (
    "No clear difference yet: the interval includes 0. Let both versions run more before deciding."
)


def target(weights: Mapping[int, int] | int | None) -> str:
    """Where a label points: ``v3``, ``v3 90 % / v4 10 %`` for a split, ``(none)``."""
    if weights is None:
        return NONE
    if isinstance(weights, int):
        return f"v{weights}"
    if not is_split(weights):
        return f"v{next(iter(weights))}"
    return " / ".join(f"v{version} {weight} %" for version, weight in weights.items())


def labels_line(labels: Mapping[str, Mapping[int, int] | int]) -> str:
    """``production -> v3, canary -> v3 90 % / v4 10 %``, or ``(none)``."""
    return ", ".join(f"{label} -> {target(where)}" for label, where in labels.items()) or NONE


def gates_line(gates: Mapping[str, LabelGate]) -> str:
    """``Protected: production (needs at least 50 runs, ...)`` and a line end, or nothing."""
    if not gates:
        return ""
    entries = "; ".join(GATE_ENTRY.format(label=label, gate=gate) for label, gate in gates.items())
    return GATES_LINE.format(gates=entries)


def label_change(
    before: Mapping[int, int] | int | None,
    after: Mapping[int, int] | int | None,
    *,
    rollback: bool = False,
) -> str:
    if rollback:
        if after is None:
            return LABEL_ROLLED_BACK_UNSET.format(from_version=target(before))
        return LABEL_ROLLED_BACK.format(from_version=target(before), to_version=target(after))
    if before is None:
        return LABEL_NEW.format(to_version=target(after))
    if after is None:
        return LABEL_REMOVED.format(from_version=target(before))
    if target(before) == target(after):
        return LABEL_UNCHANGED.format(to_version=target(after))
    return LABEL_MOVED.format(from_version=target(before), to_version=target(after))


def label_log(moves: list[LabelMove]) -> str:
    entries = [
        LABEL_LOG_ENTRY.format(
            moved_at=display_time(m.moved_at),
            label=m.label,
            change=label_change(m.before, m.after),
            marks=(ROLLBACK_MARK if m.rollback else "") + (FORCED_MARK if m.forced else ""),
            note=f" ({quoted(m.note)})" if m.note else "",
        )
        for m in moves
    ]
    return LABEL_LOG.format(moves="\n".join(entries) or f"  {NONE}")


def _rate(runs: int, successes: int) -> str:
    return f"{percent(successes, runs)}% ({successes}/{runs})" if runs else NONE


def gate_refused(
    exc: GateRefusedError, calls: VersionCalls, target: str, current: int | None
) -> str:
    """A gate's refusal: the gate, each refused version with its figures, then the way past it
    (a person's ``force``: ``target`` is the move as the CLI spells it) and a comparison of the
    refused version with the label's ``current`` one."""
    failing = [check.version for check in exc.checks]
    version = next((v for v in failing if v != current), failing[0] if failing else 0)
    name, label = exc.name, exc.label
    against = "<a>" if current in (None, version) else current
    return GATE_REFUSED.format(
        label=label,
        name=name,
        gate=exc.gate,
        checks=gate_checks(exc.checks),
        force=calls.call(calls.force, name=name, label=label, target=target),
        compare=calls.call(calls.compare, name=name, a=against, b=version),
        version=f"v{version}",
    )


def shares(weights: Mapping[int, int] | None) -> list[dict[str, int]] | None:
    """Weights as artifacts show them (and ``set_agent_label``'s split takes them):
    ``[{"version": 3, "weight": 90}, ...]``; JSON objects cannot have integer keys."""
    if weights is None:
        return None
    return [{"version": version, "weight": weight} for version, weight in weights.items()]


def splits(weights: Mapping[str, Mapping[int, int]]) -> dict[str, list[dict[str, int]]]:
    """The split labels' shares, for an artifact."""
    return {label: shares(w) or [] for label, w in weights.items() if is_split(w)}


def gates(found: Mapping[str, LabelGate]) -> dict[str, dict[str, object]]:
    """The protected labels' gates, for an artifact."""
    return {label: gate.model_dump(mode="json") for label, gate in found.items()}


def gate_checks(checks: Sequence[GateCheck]) -> str:
    """One line per version a gate refused: its figures and what it lacks."""
    lines = []
    for check in checks:
        figures = f"{check.runs} run{'s' if check.runs != 1 else ''}"
        if check.runs:
            figures += f", success rate {_rate(check.runs, check.successes)}"
        if check.mean_duration is not None:
            figures += f", average duration {seconds(check.mean_duration)}"
        failures = ", ".join(check.failures)
        lines.append(
            GATE_CHECK_LINE.format(version=check.version, figures=figures, failures=failures)
        )
    return "\n".join(lines)


def _points(value: float, *, sign: bool = True) -> str:
    """A rate or a difference of rates in percent (points): ``+4.2``, ``97.5``, ``0.0``."""
    text = f"{100 * value:+.1f}" if sign else f"{100 * value:.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


def _figures(figures: VersionFigures) -> str:
    if not figures.runs:
        rate = duration = NO_RUNS
    else:
        low, high = figures.interval
        rate = FIGURES_RATE.format(
            rate=percent(figures.successes, figures.runs),
            successes=figures.successes,
            runs=figures.runs,
            low=_points(low, sign=False),
            high=_points(high, sign=False),
        )
        mean = figures.mean_duration
        duration = NONE if mean is None else seconds(mean)
    return FIGURES.format(version=figures.version, runs=figures.runs, rate=rate, duration=duration)


def comparison(result: VersionComparison, split: str) -> str:
    """``compare_agent_versions``' text: each version's figures, the difference, a verdict."""
    a, b = result.a.version, result.b.version
    if result.difference is None or result.difference_interval is None:
        difference = DIFFERENCE_UNKNOWN.format(a=a, b=b)
        verdict = VERDICT_NO_RUNS.format(split=split)
    else:
        low, high = result.difference_interval
        difference = DIFFERENCE.format(
            a=a, b=b, difference=_points(result.difference), low=_points(low), high=_points(high)
        )
        if low > 0:
            verdict = VERDICT_BETTER.format(a=a, b=b)
        elif high < 0:
            verdict = VERDICT_WORSE.format(a=a, b=b)
        else:
            verdict = VERDICT_UNCLEAR
    return COMPARISON.format(
        name=result.name,
        a=a,
        b=b,
        figures_a=_figures(result.a),
        figures_b=_figures(result.b),
        difference=difference,
        verdict=verdict,
    )


def diff_report(diff: ConfigDiff, *, skip_heading: bool = False) -> str:
    """The diff's readable report, cut before ``ENTRIES_BUDGET`` characters (a diff of two
    100,000-character prompts would be far more than a model should read at once)."""
    text = str(diff)
    if skip_heading:
        text = text.partition("\n")[2] or "  (none)"
    if len(text) > ENTRIES_BUDGET:
        return text[:ENTRIES_BUDGET] + DIFF_CUT.format(length=len(text))
    return text
