"""The cursor of ``search_page``: where the next page starts, as an opaque string.

A cursor is the base64url (unpadded) text of a small JSON object: a format version, the sort it
was made for, a fingerprint of the query's filters, and the sort key of the last agent on its
page (``[value, name]``; the value is None for the name sort, an ISO 8601 time or a count
otherwise). Everything is checked on the way in: a cursor that does not decode, or that belongs
to another sort or other filters, is an ``InvalidCursorError`` (an ``InvalidInputError``), never a
driver error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ..errors import InvalidCursorError
from ..models import COUNTER_MAX, Agent, SearchQuery, is_valid_name

CURSOR_VERSION: Final = 1
#: Far longer than any cursor this module makes (about 150 characters).
CURSOR_MAX_LENGTH: Final = 512
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class SortKey:
    """The sort key of one agent under a query's sort: ``value`` (None for the name sort), then
    the name, which breaks ties."""

    value: datetime | int | None
    name: str


def sort_key(query: SearchQuery, agent: Agent) -> SortKey:
    """The key ``agent`` sorts by under ``query.sort_by``."""
    meta = agent.metadata
    values: dict[str, datetime | int | None] = {
        "name": None,
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "execution_count": meta.execution_count,
    }
    return SortKey(values[query.sort_by], agent.name)


def _fingerprint(query: SearchQuery) -> str:
    """The query without its page size, hashed: a cursor serves only the query it came from."""
    filters = query.model_dump(mode="json", exclude={"limit", "sort_by"})
    text = json.dumps(filters, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def encode_cursor(query: SearchQuery, last: Agent) -> str:
    """The cursor of the page after the one that ended with ``last``."""
    key = sort_key(query, last)
    value = key.value.isoformat() if isinstance(key.value, datetime) else key.value
    payload = {
        "v": CURSOR_VERSION,
        "s": query.sort_by,
        "q": _fingerprint(query),
        "k": [value, key.name],
    }
    text = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: object, query: SearchQuery) -> SortKey:
    """The sort key a cursor of ``query`` holds. Raises ``InvalidCursorError``."""
    if not isinstance(cursor, str):
        raise InvalidCursorError(f"a cursor is a string, not {type(cursor).__name__}")
    if len(cursor) > CURSOR_MAX_LENGTH or not _BASE64URL.fullmatch(cursor):
        raise InvalidCursorError("not a cursor made by search_page")
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidCursorError("not a cursor made by search_page") from None
    if not isinstance(payload, dict) or payload.get("v") != CURSOR_VERSION:
        raise InvalidCursorError("not a cursor made by search_page")
    if payload.get("s") != query.sort_by:
        raise InvalidCursorError(
            f"it was made for sort_by={payload.get('s')!r}, not {query.sort_by!r}"
        )
    if payload.get("q") != _fingerprint(query):
        raise InvalidCursorError("it was made for a query with other filters")
    key = payload.get("k")
    if not isinstance(key, list) or len(key) != 2 or not is_valid_name(key[1]):
        raise InvalidCursorError("its sort key is damaged")
    return SortKey(_key_value(query, key[0]), key[1])


def _key_value(query: SearchQuery, value: Any) -> datetime | int | None:
    damaged = InvalidCursorError("its sort key is damaged")
    if query.sort_by == "name":
        if value is not None:
            raise damaged
        return None
    if query.sort_by == "execution_count":
        if type(value) is not int or not 0 <= value <= COUNTER_MAX:
            raise damaged
        return value
    if not isinstance(value, str):
        raise damaged
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise damaged from None
    if moment.utcoffset() is None:
        raise damaged
    return moment
