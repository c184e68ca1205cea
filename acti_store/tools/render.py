"""Domain models and errors in, the contract's texts out. Pure functions: no I/O, no rules;
every template comes from ``texts``, this module only chooses and fills them."""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from pydantic import ValidationError

from .. import validation
from ..documents import agent_document, dumps
from ..errors import AgentStoreError
from ..models import (
    STRATA,
    UPDATABLE_FIELDS,
    Agent,
    as_utc,
    truncate,
)
from ..validation import FieldError
from . import texts
from .bounds import json_cut

# --------------------------------------------------------------------------------------------------
# Small formatting helpers
# --------------------------------------------------------------------------------------------------

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = texts.QUOTED_VALUE_LENGTH


def quoted(value: object, limit: int = texts.QUOTED_VALUE_LENGTH) -> str:
    """A user value fit to quote back: one line, bounded, control characters escaped."""
    text = value[: limit + 1] if isinstance(value, str) else _REPR.repr(value)
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return truncate(text, limit)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space."""
    return " ".join(text.split())


def preview(text: str, limit: int = texts.CHANGE_PREVIEW_LENGTH) -> str:
    """At most ``limit`` characters of ``text`` on one line, cut after a whole word."""
    return _cut(one_line(text), limit, 0)


def _cut(text: str, limit: int, keep: int) -> str:
    """At most ``limit`` characters of ``text``, cut after a whole word unless that would lose
    the first ``keep`` characters; ``...`` when something was cut."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    space = head.rfind(" ")
    return (head[:space] if space > max(keep, 0) else text[:limit]).rstrip() + "..."


def change_previews(
    old: str, new: str, limit: int = texts.CHANGE_PREVIEW_LENGTH
) -> tuple[str, str]:
    """Previews of two values of a text that differ visibly: their beginnings, or, when those
    read the same, a window of each from a few words before their first difference (``...``
    marks what is left out). Each stays within ``limit`` characters and the two ``...``."""
    a, b = one_line(old), one_line(new)
    if a == b:  # only whitespace differs: show it (escaped by the JSON quoting)
        a, b = old, new
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if first is None:
        first = min(len(a), len(b))
    shown = _cut(a, limit, 0), _cut(b, limit, 0)
    if all(first < len(text.removesuffix("...")) for text in shown):
        return shown
    return _window(a, first, limit), _window(b, first, limit)


def _window(text: str, first: int, limit: int) -> str:
    """``text`` from the word that starts at most ``CHANGE_CONTEXT_LENGTH`` characters before
    ``first``, cut to ``limit`` characters keeping ``first`` in."""
    start = max(first - texts.CHANGE_CONTEXT_LENGTH, 0)
    if start:
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    shown = _cut(text[start:], limit, first - start + 1)
    return ("..." if start else "") + shown


def listed(values: Iterable[str]) -> str:
    """``a, b, c``, or ``(none)`` for nothing."""
    return ", ".join(values) or texts.NONE


def display_time(value: datetime | None) -> str:
    """A timestamp as the summaries show it: UTC, to the second, ``+00:00``."""
    return texts.NONE if value is None else as_utc(value).isoformat(timespec="seconds")


def record_time(value: datetime) -> str:
    """A timestamp as history entries show it: UTC, to the second, ``Z``."""
    return as_utc(value).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def percent(part: int, whole: int) -> str:
    """``95.7`` for 45 of 47, ``100`` for all: one decimal, none when it is zero."""
    return f"{100 * part / whole:.1f}".removesuffix(".0")


def seconds(value: float) -> str:
    return f"{value:.1f}s"


# --------------------------------------------------------------------------------------------------
# Validation errors
# --------------------------------------------------------------------------------------------------


def field_errors(error: ValidationError) -> list[FieldError]:
    """Every problem pydantic found, field by field, with the model's own message (bounded)."""
    return [
        FieldError(e.field, quoted(e.message, texts.ERROR_MESSAGE_LENGTH))
        for e in validation.field_errors(error, top_level="input")
    ]


def error_lines(errors: Iterable[FieldError]) -> str:
    return "\n".join(
        texts.VALIDATION_ERROR_LINE.format(field=e.field, message=e.message) for e in errors
    )


def config_invalid(errors: Iterable[FieldError]) -> str:
    return texts.CONFIG_INVALID.format(errors=error_lines(errors))


def update_invalid(name: str, errors: Iterable[FieldError]) -> str:
    return texts.UPDATE_INVALID.format(name=name, errors=error_lines(errors))


def clone_invalid(source: str, name: str, errors: Iterable[FieldError]) -> str:
    return texts.CLONE_INVALID.format(source=source, name=name, errors=error_lines(errors))


def invalid_parameters(subject: str, errors: Iterable[FieldError]) -> str:
    return texts.INVALID_PARAMETERS.format(subject=subject, errors=error_lines(errors))


def invalid_arguments(tool: str, errors: Iterable[FieldError]) -> str:
    return texts.INVALID_ARGUMENTS.format(tool=tool, errors=error_lines(errors))


def invalid_name(parameter: str, value: object) -> str:
    return texts.INVALID_NAME.format(parameter=parameter, value=quoted(value))


def invalid_stratum(value: object) -> str:
    return texts.INVALID_STRATUM.format(value=quoted(value))


# --------------------------------------------------------------------------------------------------
# Errors of the store
# --------------------------------------------------------------------------------------------------


def not_found(
    name: str,
    available: Sequence[str],
    closing: str,
    *,
    heading: str = texts.NOT_FOUND,
    empty_closing: str = texts.NO_AGENTS_YET,
    total: int | None = None,
    calls: texts.Calls = texts.TOOL_CALLS,
) -> str:
    """The agent is missing: list the ones that exist (the first by name, ``total`` in all:
    ``available`` may hold only the first), or say there are none.

    ``closing`` and ``empty_closing`` are templates of ``texts`` that may take ``calls``' fragments.
    """
    head = heading.format(name=name)
    fragments = calls.fill(name)
    if not available:
        return f"{head}\n\n{empty_closing.format(**fragments)}"
    count = max(len(available), total or 0)
    shown = available[: texts.NOT_FOUND_NAMES_SHOWN]
    lines = [texts.AVAILABLE_AGENT_LINE.format(name=n) for n in shown]
    if count > len(shown):
        lines.append(texts.MORE_AGENTS_LINE.format(count=count - len(shown), **fragments))
    listing = texts.AVAILABLE_AGENTS.format(count=count, names="\n".join(lines))
    return f"{head}\n\n{listing}\n\n{closing.format(**fragments)}"


def already_exists(name: str, calls: texts.Calls = texts.TOOL_CALLS) -> str:
    return texts.ALREADY_EXISTS.format(name=name, **calls.fill(name))


def clone_target_exists(name: str, calls: texts.Calls = texts.TOOL_CALLS) -> str:
    return texts.CLONE_TARGET_EXISTS.format(name=name, **calls.fill(name))


def no_changes(name: str, calls: texts.Calls = texts.TOOL_CALLS) -> str:
    return texts.NO_CHANGES.format(name=name, **calls.fill(name))


def store_error(error: AgentStoreError) -> str:
    template = texts.STORE_ERROR if error.transient else texts.STORE_ERROR_LASTING
    return template.format(reason=quoted(str(error), texts.ERROR_MESSAGE_LENGTH))


def agents_extra_missing(name: str, error: ImportError) -> str:
    return texts.AGENTS_EXTRA_MISSING.format(name=name, reason=quoted(str(error)))


# --------------------------------------------------------------------------------------------------
# One text per successful outcome
# --------------------------------------------------------------------------------------------------


def created(agent: Agent, location: str, calls: texts.Calls = texts.TOOL_CALLS) -> str:
    return texts.CREATED.format(
        **calls.fill(agent.name),
        name=agent.name,
        description=agent.description,
        tools=listed(agent.tools),
        stratum=agent.stratum or texts.NONE,
        model=agent.model,
        location=location,
    )


def available_tools() -> str:
    categories = "\n\n".join(
        texts.CATEGORY_ENTRY.format(
            name=name,
            summary=guide.summary,
            capabilities="\n".join(f"      - {c}" for c in guide.capabilities),
            best_for=", ".join(guide.best_for),
            use_cases=guide.use_cases,
        )
        for name, guide in texts.CATEGORY_GUIDES.items()
    )
    strata = "\n\n".join(
        texts.STRATUM_ENTRY.format(
            code=code,
            title=STRATA[code].rsplit(" (", 1)[0],
            purpose=guide.purpose,
            recommended_tools=guide.recommended_tools,
            examples=guide.examples,
        )
        for code, guide in texts.STRATUM_GUIDES.items()
    )
    return texts.AVAILABLE_TOOLS.format(categories=categories, strata=strata)


def agent_config(agent: Agent) -> str:
    """The configuration; a system prompt longer than the bound is shown cut, with a note."""
    document = agent_document(agent)
    cut = json_cut(agent.system_prompt, texts.PROMPT_SHOWN_LENGTH)
    if cut is not None:
        document["system_prompt"] = cut
    text = texts.AGENT_CONFIG.format(
        name=agent.name,
        tools=listed(agent.tools),
        stratum=agent.stratum or texts.NONE,
        model=agent.model,
        document=dumps(document).rstrip("\n"),
    )
    if cut is None:
        return text
    note = texts.PROMPT_CUT_NOTE.format(length=f"{len(agent.system_prompt):,}")
    return f"{text}\n\n{note}"


def stratum_label(stratum: str | None) -> str:
    """The group an agent is listed under: its stratum, or ``UNCLASSIFIED``."""
    return stratum if stratum is not None and stratum in STRATA else texts.UNCLASSIFIED


def _change_values(old: object, new: object) -> tuple[str, str]:
    """A field's two values as "Changes applied" shows them: JSON, texts previewed so that the
    two differ visibly."""
    if isinstance(old, str) and isinstance(new, str):
        old, new = change_previews(old, new)
    else:
        old, new = (preview(v) if isinstance(v, str) else v for v in (old, new))
    return json.dumps(old, ensure_ascii=False), json.dumps(new, ensure_ascii=False)


def changed_fields(old: Agent, new: Agent) -> list[str]:
    """The fields whose value differs between two versions of an agent, in the contract's order."""
    return [f for f in UPDATABLE_FIELDS if getattr(old, f) != getattr(new, f)]


def updated(old: Agent, new: Agent, location: str) -> str:
    lines = [
        texts.CHANGE_LINE.format(field=field, old=shown[0], new=shown[1])
        for field in changed_fields(old, new)
        for shown in [_change_values(getattr(old, field), getattr(new, field))]
    ]
    return texts.UPDATED.format(
        name=new.name,
        old_version=old.metadata.version,
        new_version=new.metadata.version,
        changes="\n".join(lines) or texts.NO_VALUE_CHANGED,
        description=new.description,
        tools=listed(new.tools),
        stratum=new.stratum or texts.NONE,
        updated=display_time(new.metadata.updated_at),
        location=location,
    )


class Places(NamedTuple):
    """Where an agent's records live, and the wording that names them (files or store)."""

    wording: texts.DeleteWording
    config: str
    history: str
    store: str


def _targets(
    heading: str,
    name: str,
    places: Places,
    *,
    history: bool,
    kept: bool,
    kin: AgentKin | None = None,
) -> str:
    """The records a delete takes (``heading`` and an item each), and those it keeps; with
    ``kin``, the store wording names the agent's versions and labels too."""
    wording = places.wording
    versions = labels = ""
    if kin is not None and kin.versions:
        versions = version_count(kin.versions)
    if kin is not None and kin.labels:
        labels = ", ".join(
            texts.LABEL_TARGET.format(label=label, version=version)
            for label, version in sorted(kin.labels.items())
        )
    lines = [heading, wording.config_item]
    if history and versions and wording.versions_item:
        lines.append(wording.versions_item)
    if labels and wording.labels_item:
        lines.append(wording.labels_item)
    if history:
        lines.append(wording.history_item)
    block = "\n".join(lines)
    if kept:
        block += "\n\n" + wording.preserved
        if versions and wording.versions_preserved:
            block += "\n" + wording.versions_preserved
    return block.format(
        name=name,
        config=places.config,
        history=places.history,
        location=places.store,
        versions=versions,
        labels=labels,
    )


class AgentKin(NamedTuple):
    """What goes with an agent when it is deleted: its stored version numbers and its labels
    (label -> version)."""

    versions: Sequence[int]
    labels: Mapping[str, int]


def version_count(numbers: Sequence[int]) -> str:
    """``3 versions (v1-v3)``; runs of numbers as ranges: ``4 versions (v1, v3-v5)``."""
    ordered = sorted(numbers)
    runs: list[list[int]] = []
    for number in ordered:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    spelled = ", ".join(f"v{run[0]}" if len(run) == 1 else f"v{run[0]}-v{run[-1]}" for run in runs)
    count = len(ordered)
    return texts.VERSION_COUNT.format(count=count, s="" if count == 1 else "s", numbers=spelled)


def delete_preview(
    agent: Agent,
    places: Places,
    *,
    delete_history: bool,
    calls: texts.Calls = texts.TOOL_CALLS,
    kin: AgentKin | None = None,
) -> str:
    """The dry run of a delete: the agent, the records that go with it (``kin``: its versions
    and labels) and the call that confirms it."""
    meta = agent.metadata
    targets = _targets(
        places.wording.to_delete,
        agent.name,
        places,
        history=delete_history,
        kept=not delete_history,
        kin=kin,
    )
    return texts.DELETE_PREVIEW.format(
        name=agent.name,
        description=agent.description,
        tools=listed(agent.tools),
        stratum=agent.stratum or texts.NONE,
        version=meta.version,
        created=display_time(meta.created_at),
        executions=meta.execution_count,
        successes=meta.success_count,
        errors=meta.error_count,
        targets=targets,
        confirm_delete=calls.fill(agent.name, keep_history=not delete_history)["confirm_delete"],
    )


def deleted(
    name: str, places: Places, *, delete_history: bool, calls: texts.Calls = texts.TOOL_CALLS
) -> str:
    heading = places.wording.deleted
    if delete_history:
        targets = _targets(heading, name, places, history=True, kept=False)
        return texts.DELETED.format(name=name, targets=targets, **calls.fill(name))
    targets = _targets(heading, name, places, history=False, kept=True)
    return texts.DELETED_KEEPING_HISTORY.format(
        name=name, targets=targets, note=places.wording.note
    )


def delete_not_found(
    name: str,
    available: Sequence[str],
    total: int,
    places: Places,
    calls: texts.Calls = texts.TOOL_CALLS,
) -> str:
    nothing = places.wording.nothing_deleted
    empty = f"{texts.NO_AGENTS_YET}\n\n{nothing}"
    return not_found(name, available, nothing, empty_closing=empty, total=total, calls=calls)


def cloned(
    source: Agent, clone: Agent, location: str, calls: texts.Calls = texts.TOOL_CALLS
) -> str:
    meta = clone.metadata
    return texts.CLONED.format(
        **calls.fill(clone.name),
        source=source.name,
        source_version=source.metadata.version,
        name=clone.name,
        version=meta.version,
        description=clone.description,
        tools=listed(clone.tools),
        stratum=clone.stratum or texts.NONE,
        tags=listed(clone.tags),
        created=display_time(meta.created_at),
        execution_count=meta.execution_count,
        success_count=meta.success_count,
        error_count=meta.error_count,
        location=location,
    )
