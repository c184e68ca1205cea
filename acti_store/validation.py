"""Pydantic's validation errors as field + message pairs: the one reader of ``errors()``.

The tools, the document reader and the MCP catalog loader each print the problems pydantic found
in their own layout (a bulleted list, a ``;``-joined reason); all three get them from here, so a
location is spelled one way (``tools[0]``, ``_metadata.version``) and a message is pydantic's own
(its ``ctx`` values already filled in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple, TypeVar

from pydantic import ValidationError

from .errors import InvalidInputError

E = TypeVar("E", bound=InvalidInputError)

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


def quoted(value: str, limit: int = 64) -> str:
    """A user's value as a message names it: ``repr``, cut to ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "...")
