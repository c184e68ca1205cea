"""``SearchQuery``: every filter, sort and limit of ``search_agents``, and how a date bound is
read (a bare date covers its whole day).

Pure Python, like ``models``, which gives this name.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .domain_model import DomainModel
from .field_types import Stratum, TextList, ToolList, UtcDatetime, no_nul, no_surrogates, unique
from .limits import (
    COUNTER_MAX,
    DATE_FORMAT_HINT,
    MAX_TAGS,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_LIMIT_MIN,
    SEARCH_TAGS_RULE,
    SortField,
)
from .timestamps import parse_iso, refuse_naive


def _parse_bound(value: object, info: ValidationInfo) -> object:
    """Accept ``YYYY-MM-DD`` or an ISO 8601 datetime; a bare date covers that whole day."""
    if value is None or isinstance(value, datetime):
        return refuse_naive(value)
    if isinstance(value, date):
        day = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
            else:
                return parse_iso(text)
        except (ValueError, OverflowError):
            raise PydanticCustomError("date_format", DATE_FORMAT_HINT) from None
    else:
        raise PydanticCustomError("date_format", DATE_FORMAT_HINT)
    if info.field_name == "created_before":
        return datetime.combine(day, time.max, tzinfo=UTC)
    return datetime.combine(day, time.min, tzinfo=UTC)


class SearchQuery(DomainModel):
    """Every filter, sort and limit of ``search_agents``; filters combine with AND."""

    query: str | None = Field(default=None, max_length=500)
    stratum: Stratum | None = None
    tools: ToolList | None = None
    tags: TextList | None = None
    created_after: UtcDatetime | None = None
    created_before: UtcDatetime | None = None
    min_executions: int | None = Field(default=None, ge=0, le=COUNTER_MAX)
    sort_by: SortField = "name"
    limit: int = Field(default=SEARCH_LIMIT_DEFAULT, ge=SEARCH_LIMIT_MIN, le=SEARCH_LIMIT_MAX)

    _parse_created = field_validator("created_after", "created_before", mode="before")(_parse_bound)

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = no_nul(value.strip())
        return value or None

    @field_validator("tags")
    @classmethod
    def _tags_text(cls, value: list[str] | None) -> list[str] | None:
        # Filtering by a tag nobody can have is not an error: it just matches nothing. Only the
        # shape of the text is checked so that hostile input never reaches SQL as a surprise.
        if value is None:
            return None
        tags = unique([no_surrogates(no_nul(t.strip().lower())) for t in value if t.strip()])
        if len(tags) > MAX_TAGS:
            raise PydanticCustomError("too_many_tags", SEARCH_TAGS_RULE)
        return tags

    def filters(self) -> dict[str, Any]:
        """The filters that are set, in the contract's order (``query`` excluded)."""
        names = ("stratum", "tools", "tags", "created_after", "created_before", "min_executions")
        return {n: getattr(self, n) for n in names if getattr(self, n) not in (None, [])}
