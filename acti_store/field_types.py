"""The reusable field types of the domain models: each rule of a value (a name, a text, a model
id, a stratum, tools, tags, a timestamp, a run's recorded text) written once, used by the
configuration, its update, a clone, a run's record and a search.

Pure Python: the types are ``Annotated`` with their checks; a broken rule is a
``PydanticCustomError`` whose message is the contract's.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Final

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from .fields import sequence_as_list
from .limits import (
    DEFAULT_MODEL,
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    MAX_TAGS,
    MODEL_MAX_LENGTH,
    MODEL_PATTERN,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    NAME_RULE,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TAG_MAX_LENGTH,
    TAG_MIN_LENGTH,
    TAG_PATTERN,
    TEXT_MAX_LENGTH,
    TOOL_CATEGORIES,
)
from .timestamps import aware_utc, read_timestamp


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking a cut with ``...``."""
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def no_nul(value: str) -> str:
    """``value``, refused if it holds a NUL character."""
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "must not contain NUL (\\x00) characters")
    return value


#: Lone surrogates: a Python ``str`` may hold them, no database driver can encode them (UTF-8).
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def no_surrogates(value: str) -> str:
    """``value``, refused if it holds a lone surrogate."""
    if _SURROGATE.search(value):
        raise PydanticCustomError(
            "surrogate_character", "must be valid Unicode text (no lone surrogates)"
        )
    return value


def record_text(limit: int) -> AfterValidator:
    """A run's recorded text: NUL and lone surrogates replaced, cut to ``limit``, never refused."""

    def clean(value: str) -> str:
        text = value.replace("\x00", "\ufffd")
        if not value.isascii():  # only non-ASCII text can hold a surrogate
            text = _SURROGATE.sub("\ufffd", text)
        return truncate(text, limit)

    return AfterValidator(clean)


def _shown(value: str, limit: int = 40) -> str:
    """A user's value as an error message quotes it: cut, and always encodable text."""
    return _SURROGATE.sub("\ufffd", value[:limit])


def _check_name(value: str) -> str:
    if not NAME_PATTERN.fullmatch(value):
        raise PydanticCustomError("snake_case", NAME_RULE)
    return value


def is_valid_name(value: object) -> bool:
    """True when ``value`` is a valid agent name (also safe to use as a file name)."""
    return (
        isinstance(value, str)
        and len(value) <= NAME_MAX_LENGTH
        and NAME_PATTERN.fullmatch(value) is not None
    )


def _check_model(value: str) -> str:
    no_nul(value)  # first: ``\S`` matches NUL
    if not MODEL_PATTERN.fullmatch(value):
        raise PydanticCustomError(
            "model_format",
            "model must be in provider:model form, e.g. '{example}'",
            {"example": DEFAULT_MODEL},
        )
    return value


def _normalise_stratum(value: object) -> object:
    if isinstance(value, str):
        return value.strip().upper()
    return value


def _check_stratum(value: str) -> str:
    if value not in STRATA:
        raise PydanticCustomError(
            "stratum",
            "'{value}' is not a valid stratum. Use: {choices}",
            {"value": _shown(value), "choices": ", ".join(STRATA)},
        )
    return value


def unique(values: list[str]) -> list[str]:
    """``values`` without repeats, in their first order."""
    return list(dict.fromkeys(values))


def _quoted(values: list[str]) -> str:
    """Every one of ``values`` as an error message quotes them: ``'a', 'b'``."""
    return ", ".join(f"'{_shown(value)}'" for value in unique(values))


def _is_or_are(values: list[str], noun: str) -> str:
    """``'a' is not a valid tool`` or ``'a', 'b' are not valid tools``: every bad value named."""
    if len(set(values)) == 1:
        return f"{_quoted(values)} is not a valid {noun}"
    return f"{_quoted(values)} are not valid {noun}s"


def _check_tools(values: list[str]) -> list[str]:
    invalid = [value for value in values if value not in TOOL_CATEGORIES]
    if invalid:
        raise PydanticCustomError(
            "tool_category",
            "{invalid}. Use: {choices}",
            {"invalid": _is_or_are(invalid, "tool"), "choices": ", ".join(TOOL_CATEGORIES)},
        )
    return unique(values)


def _is_valid_tag(value: str) -> bool:
    return TAG_MIN_LENGTH <= len(value) <= TAG_MAX_LENGTH and bool(TAG_PATTERN.fullmatch(value))


def _check_tags(values: list[str]) -> list[str]:
    invalid = [value for value in values if not _is_valid_tag(value)]
    if invalid:
        raise PydanticCustomError(
            "tag_format",
            "{invalid}: tags are {min}-{max} characters, lowercase letters, "
            "digits and hyphens, starting with a letter",
            {"invalid": _is_or_are(invalid, "tag"), "min": TAG_MIN_LENGTH, "max": TAG_MAX_LENGTH},
        )
    values = unique(values)
    if len(values) > MAX_TAGS:
        raise PydanticCustomError(
            "too_many_tags", "at most {max} tags are allowed", {"max": MAX_TAGS}
        )
    return values


def none_as_empty(value: object) -> object:
    """None as an empty list: a list field given None holds nothing."""
    return [] if value is None else value


AgentName = Annotated[
    str,
    Field(min_length=1, max_length=NAME_MAX_LENGTH),
    AfterValidator(_check_name),
]
Description = Annotated[
    str,
    Field(min_length=DESCRIPTION_MIN_LENGTH, max_length=DESCRIPTION_MAX_LENGTH),
    AfterValidator(no_nul),
]
SystemPrompt = Annotated[
    str,
    Field(min_length=SYSTEM_PROMPT_MIN_LENGTH, max_length=TEXT_MAX_LENGTH),
    AfterValidator(no_nul),
]
ModelId = Annotated[str, Field(max_length=MODEL_MAX_LENGTH), AfterValidator(_check_model)]
Stratum = Annotated[str, BeforeValidator(_normalise_stratum), AfterValidator(_check_stratum)]
TextList = Annotated[list[str], BeforeValidator(sequence_as_list)]
ToolList = Annotated[TextList, AfterValidator(_check_tools)]
TagList = Annotated[TextList, AfterValidator(_check_tags)]
UtcDatetime = Annotated[datetime, BeforeValidator(read_timestamp), AfterValidator(aware_utc)]
