"""Pydantic's validation errors as field + message pairs (the one reader of ``errors()``), and
the rules of the Python API's plain arguments.

The tools, the document reader and the MCP catalog loader each print the problems pydantic found
in their own layout (a bulleted list, a ``;``-joined reason); all three get them from here, so a
location is spelled one way (``tools[0]``, ``_metadata.version``) and a message is pydantic's own
(its ``ctx`` values already filled in).

Every public function and repository method checks its arguments on entry with the checks below
(``integer``, ``flag``, ``seconds``, ``choice``, ``model_argument``, ...), so a bad argument is an
``InvalidInputError`` (a wrong type: ``ArgumentTypeError``, also a ``TypeError``) before anything
is read or written, never a driver's ``OverflowError`` or an ``AttributeError`` from deep inside.
The rules: an integer is an ``int`` (never a ``bool`` or a string) within its range, at most
``models.INTEGER_MAX`` unless it is a version (``models.COUNTER_MAX``); a flag is ``True`` or
``False``; a number of seconds is finite and positive; a choice is one of its strings; a model
argument is that model or a mapping it validates by its strict rules (``strictly``: every problem
listed). Each check costs an ``isinstance`` or two when the argument is right: they run on every
call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import AgentNotFoundError, AgentStoreError, ArgumentTypeError, InvalidInputError
from .models import COUNTER_MAX, INTEGER_MAX
from .versioning import MESSAGE_MAX_LENGTH

E = TypeVar("E", bound=InvalidInputError)
M = TypeVar("M", bound=BaseModel)

_NO_ALIASES: Final[Mapping[str, str]] = {}


class FieldError(NamedTuple):
    """One problem with one field: where (a path) and what (pydantic's message)."""

    field: str
    message: str


def field_path(
    loc: Sequence[int | str],
    *,
    top_level: str,
    aliases: Mapping[str, str] = _NO_ALIASES,
    bracket_indexes: bool = True,
) -> str:
    """``loc`` as a path: names joined by dots, list indexes as ``[0]`` (or ``.0``).

    ``aliases`` renames a top-level name (a model field that a document spells differently);
    ``top_level`` names a problem of the whole input (an empty ``loc``).
    """
    text = ""
    for part in loc:
        if isinstance(part, int) and bracket_indexes:
            text += f"[{part}]"
        elif text:
            text += f".{part}"
        else:
            text = aliases.get(str(part), str(part))
    return text or top_level


def field_errors(
    error: ValidationError,
    *,
    top_level: str,
    aliases: Mapping[str, str] = _NO_ALIASES,
    bracket_indexes: bool = True,
) -> list[FieldError]:
    """Every problem of ``error``, in pydantic's order, located with ``field_path``."""
    return [
        FieldError(
            field_path(
                item["loc"], top_level=top_level, aliases=aliases, bracket_indexes=bracket_indexes
            ),
            item["msg"],
        )
        for item in error.errors(include_url=False)
    ]


def refusal(
    error: ValidationError,
    subject: str,
    kind: type[E],
    *,
    aliases: Mapping[str, str] = _NO_ALIASES,
) -> E:
    """``error`` as the library's exception ``kind``: ``invalid <subject>: <every problem>``."""
    return kind(subject, field_errors(error, top_level=subject, aliases=aliases))


def quoted(value: object, limit: int = 64) -> str:
    """A user's value as a message names it: ``repr``, cut to ``limit`` characters."""
    if not isinstance(value, str):
        return _described(value)
    return repr(value if len(value) <= limit else value[:limit] + "...")


# --------------------------------------------------------------------------------------------------
# The Python API's arguments
# --------------------------------------------------------------------------------------------------

#: What a refused argument's error calls its subject: ``invalid argument: limit: ...``.
ARGUMENT: Final = "argument"


def _described(value: object) -> str:
    """A refused argument as a message names it: its type, and its value when short."""
    shown = repr(value)
    if len(shown) > 40:
        return type(value).__name__
    return f"{type(value).__name__} {shown}"


def _wrong_type(field: str, rule: str, value: object) -> NoReturn:
    raise ArgumentTypeError(ARGUMENT, [(field, f"must be {rule}, not {_described(value)}")])


def integer(value: object, field: str, minimum: int, maximum: int = INTEGER_MAX) -> int:
    """``value`` if it is an ``int`` (not a ``bool``: ``True`` is not 1 here) from ``minimum``
    to ``maximum``; else ``InvalidInputError`` (``ArgumentTypeError`` for another type)."""
    if type(value) is int and minimum <= value <= maximum:
        return value
    rule = f"an integer from {minimum} to {maximum}"
    if not isinstance(value, int) or isinstance(value, bool):
        _wrong_type(field, rule, value)
    if not minimum <= value <= maximum:
        raise InvalidInputError(ARGUMENT, [(field, f"must be {rule}, not {value}")])
    return int(value)  # an int subclass (an IntEnum member) as a plain int


def optional_integer(
    value: object, field: str, minimum: int, maximum: int = INTEGER_MAX
) -> int | None:
    """None, or ``integer(value, ...)``."""
    return None if value is None else integer(value, field, minimum, maximum)


def version_number(value: object, field: str = "version") -> int:
    """A version number: an integer from 1 to ``COUNTER_MAX`` (what a version column holds)."""
    return integer(value, field, 1, COUNTER_MAX)


def optional_version(value: object, field: str) -> int | None:
    """None, or ``version_number(value, field)``."""
    return None if value is None else version_number(value, field)


def flag(value: object, field: str) -> bool:
    """``True`` or ``False``, nothing else: a truthy ``"no"`` must not mean yes."""
    if value is True or value is False:
        return value
    _wrong_type(field, "True or False", value)


def seconds(value: object, field: str, maximum: float) -> float:
    """A finite, positive number of seconds, at most ``maximum``, as a float."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if 0 < value <= maximum and math.isfinite(value):
            return float(value)
        raise InvalidInputError(
            ARGUMENT,
            [(field, f"must be a positive number of seconds, at most {maximum:g}, not {value!r}")],
        )
    _wrong_type(field, "a number of seconds", value)


def choice(value: object, field: str, choices: Sequence[str]) -> str:
    """One of ``choices``, exactly as spelled there (``"Skip"`` is not ``"skip"``)."""
    if isinstance(value, str) and value in choices:
        return value
    rule = f"one of {', '.join(repr(c) for c in choices)}"
    if not isinstance(value, str):
        _wrong_type(field, rule, value)
    raise InvalidInputError(ARGUMENT, [(field, f"must be {rule}, not {quoted(value)}")])


def optional_message(value: object, field: str) -> str | None:
    """None, or a commit message or a label note: text of at most ``MESSAGE_MAX_LENGTH``
    characters, without NUL."""
    if value is None or (
        type(value) is str and len(value) <= MESSAGE_MAX_LENGTH and "\x00" not in value
    ):
        return value
    rule = f"text of at most {MESSAGE_MAX_LENGTH} characters, without NUL"
    if not isinstance(value, str):
        _wrong_type(field, rule, value)
    raise InvalidInputError(ARGUMENT, [(field, f"must be {rule}")])


#: The fields of an agent's metadata that its next write adds one to (``update`` its version, a
#: run its counters): an import leaves each room for it (``no_room_for_next_write``).
GROWING_FIELDS: Final = ("version", "execution_count", "success_count", "error_count")


def no_room_for_next_write(values: Mapping[str, int]) -> str | None:
    """Why the next write of an agent with these ``values`` (by field: its metadata's
    ``GROWING_FIELDS``, a history's ``total_executions``) could not be stored, if it could
    not: one at ``COUNTER_MAX`` (the next ``update`` or run adds one; PostgreSQL and MariaDB
    refuse it, SQLite's driver overflows or stores a REAL)."""
    for field, value in values.items():
        if value >= COUNTER_MAX:
            return f"{field}: {value} leaves no room for the next write (at most {COUNTER_MAX - 1})"
    return None


def forced_note(note: object, force: bool) -> str | None:
    """The note of a move; a forced one must say why (a note of only white space says
    nothing)."""
    checked = optional_message(note, "note")
    if force and (checked is None or not checked.strip()):
        raise InvalidInputError(
            ARGUMENT, [("note", "a forced move must say why: give a note with force=True")]
        )
    return checked


def strictly(kind: type[M], values: Mapping[str, object]) -> M:
    """A mapping of the Python API validated into a ``kind`` by the model's strict rules: a value
    of another type is refused, never converted (``True`` is no limit, ``"2"`` and ``2.0`` are
    none either, ``"false"`` and ``1`` are no flag, ``bytes`` no name). The models' own "before"
    validators still read an ISO 8601 timestamp from text and take a tuple for a list. (The
    tools validate their JSON arguments leniently, with their own reader.)"""
    return kind.model_validate(dict(values), strict=True)


def model_argument(
    value: object,
    kind: type[M],
    field: str,
    subject: str,
    error: type[InvalidInputError] = InvalidInputError,
) -> M:
    """``value`` if it is a ``kind``; a mapping of ``kind``'s fields validated into one by its
    strict rules (``strictly``; every problem listed in ``error``, headed ``invalid <subject>``);
    else ``ArgumentTypeError``."""
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        try:
            return strictly(kind, value)
        except ValidationError as exc:
            raise refusal(exc, subject, error) from None
    fields = ", ".join(kind.model_fields)
    _wrong_type(field, f"{kind.__name__} or a mapping of its fields ({fields})", value)


def instance(value: object, kind: type[object], field: str) -> None:
    """``value`` is a ``kind``; else ``ArgumentTypeError``."""
    if not isinstance(value, kind):
        _wrong_type(field, f"an {kind.__name__}", value)


def instances(value: object, kind: type[object], field: str) -> None:
    """``value`` is a sequence (a list, a tuple; not text) of ``kind`` only."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        _wrong_type(field, f"a sequence of {kind.__name__}", value)
    for index, item in enumerate(value):
        instance(item, kind, f"{field}[{index}]")


def optional_of(value: object, kind: type[object], field: str) -> None:
    """``value`` is None or a ``kind`` (an engine option, a schema name)."""
    if value is not None and not isinstance(value, kind):
        _wrong_type(field, f"None or {kind.__name__}", value)


def optional_function(value: object, field: str, rule: str) -> None:
    """``value`` is None or can be called (a clock, a progress callback)."""
    if value is not None and not callable(value):
        _wrong_type(field, rule, value)


def folder_path(value: object, field: str) -> None:
    """``value`` names a folder: text or an ``os.PathLike``."""
    if not isinstance(value, str | os.PathLike):
        _wrong_type(field, "a path (str or os.PathLike)", value)


def unknown_name(name: object) -> AgentStoreError:
    """What a lookup by a name no agent can have raises: ``AgentNotFoundError`` for text,
    ``ArgumentTypeError`` for anything else. (Called once the name failed ``is_valid_name``.)"""
    if isinstance(name, str):
        return AgentNotFoundError(name)
    return ArgumentTypeError(ARGUMENT, [("name", f"must be text, not {_described(name)}")])
