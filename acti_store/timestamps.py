"""Time in the domain: aware UTC, and the one rule about naive ``datetime`` objects.

A naive ``datetime`` object handed to the models is refused (``refuse_naive``): under a local
time zone such as ``Asia/Tokyo``, ``datetime.now()`` taken as UTC would be hours off. Text without
an offset is different: the JSON files and the tools' arguments write UTC that way (the contract's
examples do), so ``as_utc`` reads it as UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from pydantic_core import PydanticCustomError

#: Why a naive ``datetime`` object is refused, and what to pass instead.
NAIVE_DATETIME_RULE: Final = (
    "a datetime without a time zone is ambiguous (it would be read as UTC, whatever the local "
    "time zone): pass an aware one, e.g. repo.now() or datetime.now(timezone.utc)"
)

__all__ = [
    "NAIVE_DATETIME_RULE",
    "as_utc",
    "aware_utc",
    "parse_iso",
    "read_timestamp",
    "refuse_naive",
    "utc_now",
]


def utc_now() -> datetime:
    """The default clock: the current time, timezone-aware UTC."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; a naive datetime (parsed from text without an offset) is taken
    to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def refuse_naive(value: object) -> object:
    """A pydantic "before" validator: refuse a naive ``datetime`` object, let anything else by
    (text is parsed afterwards, and without an offset it is UTC)."""
    if isinstance(value, datetime) and value.tzinfo is None:
        raise PydanticCustomError("naive_datetime", NAIVE_DATETIME_RULE)
    return value


def parse_iso(text: str) -> datetime:
    """An ISO 8601 date-time read from text, in UTC (``Z`` is UTC, and so is text without an
    offset); ``ValueError`` or ``OverflowError`` when it is not one."""
    return as_utc(datetime.fromisoformat(text.strip().replace("Z", "+00:00")))


def read_timestamp(value: object) -> object:
    """A pydantic "before" validator of a timestamp: refuse a naive ``datetime`` object, read
    text as ISO 8601 (``parse_iso``), let anything else by. A model's strict rules, which a
    mapping given to the Python API is checked with, then take the text a JSON file or a caller
    writes and still refuse a number or ``bytes``; text that is no date-time is left for
    pydantic to refuse."""
    if isinstance(value, str):
        try:
            return parse_iso(value)
        except (ValueError, OverflowError):
            return value
    return refuse_naive(value)


def aware_utc(value: datetime) -> datetime:
    """A pydantic "after" validator: ``value`` in UTC, or a validation error if it has none."""
    try:
        return as_utc(value)
    except OverflowError:  # e.g. 0001-01-01T00:00+14:00 is before the first UTC datetime
        raise PydanticCustomError("datetime_range", "datetime is out of range in UTC") from None
