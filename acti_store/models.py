"""Domain types and every validation rule of the contract, each defined once.

Pure Python: no I/O. The repository, the interchange format and the tools all use these types, so
a rule (a pattern, a length, a list of valid choices) lives here and nowhere else.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from .fields import WHEN_SET as WHEN_SET
from .fields import marked, partial_fields, sequence_as_list
from .timestamps import NAIVE_DATETIME_RULE as NAIVE_DATETIME_RULE
from .timestamps import as_utc as as_utc
from .timestamps import aware_utc, parse_iso, read_timestamp, refuse_naive
from .timestamps import utc_now as utc_now

# --------------------------------------------------------------------------------------------------
# The contract's limits and choices
# --------------------------------------------------------------------------------------------------

NAME_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]*$")
NAME_MAX_LENGTH: Final = 64
NAME_RULE: Final = (
    "name must be snake_case: lowercase letters, numbers, and underscores only, "
    "starting with a letter"
)
DESCRIPTION_MIN_LENGTH: Final = 10
DESCRIPTION_MAX_LENGTH: Final = 500
SYSTEM_PROMPT_MIN_LENGTH: Final = 50
#: Longest text field we accept; keeps one record far below any database or memory limit.
TEXT_MAX_LENGTH: Final = 100_000
MODEL_MAX_LENGTH: Final = 200
MODEL_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*:\S+$")
DEFAULT_MODEL: Final = "anthropic:claude-opus-4-5-20251101"
BUILDER: Final = "acti-agent-builder"

#: MCP tool categories, in the contract's order.
TOOL_CATEGORIES: Final[tuple[str, ...]] = ("voice", "websearch", "calendar", "communication", "crm")

#: ACTi strata, in the contract's order, with the one-line description the tools print.
STRATA: Final[Mapping[str, str]] = {
    "RTI": "Reality & Truth Intelligence (data gathering)",
    "RAI": "Readiness & Agreement Intelligence (qualification)",
    "ZACS": "Zone Action & Conversion Systems (scheduling)",
    "EEI": "Economic & Ecosystem Intelligence (analytics)",
    "IGE": "Integrity & Governance Engine (compliance)",
}

TAG_PATTERN: Final = re.compile(r"^[a-z][a-z0-9-]*$")
TAG_MIN_LENGTH: Final = 2
TAG_MAX_LENGTH: Final = 32
MAX_TAGS: Final = 10
#: A search is for the agents with ALL the tags it names (distinct): more than MAX_TAGS match none.
SEARCH_TAGS_RULE: Final = f"at most {MAX_TAGS} tags: a match has ALL of them, and no agent has more"
#: Tags with a special meaning, from in use to retired; sorted, the contract's table order.
RESERVED_TAGS: Final[Mapping[str, str]] = {
    "production": "Agent is approved for production use",
    "experimental": "Agent is in testing phase",
    "template": "Agent serves as a template for cloning",
    "deprecated": "Agent is no longer recommended for use",
}

HISTORY_MAX_RECORDS: Final = 50
#: Largest value of a field stored in an ``Integer`` column (32-bit on PostgreSQL): the tool
#: calls of one run.
INTEGER_MAX: Final = 2**31 - 1
#: Largest value of a counter or version: what a ``BigInteger`` column (64-bit on PostgreSQL;
#: SQLite's INTEGER is 64-bit) stores. Versions and lifetime counters grow without bound.
COUNTER_MAX: Final = 2**63 - 1
TASK_RECORD_MAX_LENGTH: Final = 500
RESULT_SUMMARY_MAX_LENGTH: Final = 200
HISTORY_LIMIT_DEFAULT: Final = 10

SEARCH_LIMIT_MIN: Final = 1
SEARCH_LIMIT_MAX: Final = 100
SEARCH_LIMIT_DEFAULT: Final = 20
SortField = Literal["name", "created_at", "updated_at", "execution_count"]
SORT_FIELDS: Final[tuple[str, ...]] = ("name", "created_at", "updated_at", "execution_count")
SORT_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "name": "ascending",
    "created_at": "descending",
    "updated_at": "descending",
    "execution_count": "descending",
}

TASK_MIN_LENGTH: Final = 1
TASK_MAX_LENGTH: Final = 10_000
TIMEOUT_DEFAULT: Final = 60.0
TIMEOUT_MIN: Final = 1.0
TIMEOUT_MAX: Final = 300.0

DATE_FORMAT_HINT: Final = "Invalid date format. Use ISO 8601: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS"


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking a cut with ``...``."""
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


M = TypeVar("M", bound=BaseModel)


def trusted(cls: type[M], **values: Any) -> M:
    """Build a model from values that were validated before (e.g. read back from the store).

    What ``model_construct`` does, without its per-field default handling: every field must be
    given. The store's hot read paths use it; ``tests/test_models.py`` checks it stays equivalent.
    """
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


# --------------------------------------------------------------------------------------------------
# Reusable field types: each rule written once, used by config, update, clone and search
# --------------------------------------------------------------------------------------------------


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "must not contain NUL (\\x00) characters")
    return value


#: Lone surrogates: a Python ``str`` may hold them, no database driver can encode them (UTF-8).
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def _no_surrogates(value: str) -> str:
    if _SURROGATE.search(value):
        raise PydanticCustomError(
            "surrogate_character", "must be valid Unicode text (no lone surrogates)"
        )
    return value


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
    _no_nul(value)  # first: ``\S`` matches NUL
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


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _quoted(values: list[str]) -> str:
    """Every one of ``values`` as an error message quotes them: ``'a', 'b'``."""
    return ", ".join(f"'{_shown(value)}'" for value in _unique(values))


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
    return _unique(values)


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
    values = _unique(values)
    if len(values) > MAX_TAGS:
        raise PydanticCustomError(
            "too_many_tags", "at most {max} tags are allowed", {"max": MAX_TAGS}
        )
    return values


def _none_as_empty(value: object) -> object:
    return [] if value is None else value


AgentName = Annotated[
    str,
    Field(min_length=1, max_length=NAME_MAX_LENGTH),
    AfterValidator(_check_name),
]
Description = Annotated[
    str,
    Field(min_length=DESCRIPTION_MIN_LENGTH, max_length=DESCRIPTION_MAX_LENGTH),
    AfterValidator(_no_nul),
]
SystemPrompt = Annotated[
    str,
    Field(min_length=SYSTEM_PROMPT_MIN_LENGTH, max_length=TEXT_MAX_LENGTH),
    AfterValidator(_no_nul),
]
ModelId = Annotated[str, Field(max_length=MODEL_MAX_LENGTH), AfterValidator(_check_model)]
Stratum = Annotated[str, BeforeValidator(_normalise_stratum), AfterValidator(_check_stratum)]
TextList = Annotated[list[str], BeforeValidator(sequence_as_list)]
ToolList = Annotated[TextList, AfterValidator(_check_tools)]
TagList = Annotated[TextList, AfterValidator(_check_tags)]
UtcDatetime = Annotated[datetime, BeforeValidator(read_timestamp), AfterValidator(aware_utc)]


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=False, defer_build=True
    )


# --------------------------------------------------------------------------------------------------
# Agents
# --------------------------------------------------------------------------------------------------


class AgentConfig(_Model):
    """What a user defines about an agent: the fields of ``create_agent_config``.

    The one declaration of a configuration field: the update's fields, the columns of the agent,
    snapshot and archive tables (``schema.ConfigColumns``), the statements' column lists and row
    mappings, the documents, the tools' arguments and the command line's options derive from it.
    """

    name: AgentName = Field(description="Unique snake_case identifier of the agent")
    description: Description = Field(description="What the agent does (10-500 characters)")
    system_prompt: SystemPrompt = Field(description="Complete system prompt (50+ characters)")
    tools: Annotated[ToolList, BeforeValidator(_none_as_empty)] = Field(
        default_factory=list, description="MCP tool categories the agent may use"
    )
    model: ModelId = Field(default=DEFAULT_MODEL, description="LLM in provider:model form")
    stratum: Stratum | None = Field(default=None, description="ACTi stratum classification")
    tags: Annotated[TagList, BeforeValidator(_none_as_empty)] = Field(
        default_factory=list, description="Categorization tags (at most 10)"
    )


#: Fields an update may change, in the contract's order: the configuration but its name, which
#: identifies the agent and never changes.
UPDATABLE_FIELDS: Final[tuple[str, ...]] = tuple(f for f in AgentConfig.model_fields if f != "name")
#: The configuration fields documents hold only when set (``fields.WhenSet``).
WHEN_SET_FIELDS: Final = marked(AgentConfig, WHEN_SET)
#: An update's fields: the updatable ones, each optional (None: keep), a None not made ``[]``.
_UpdateFields: Any = partial_fields(
    "_UpdateFields", _Model, AgentConfig, UPDATABLE_FIELDS, dropped=_none_as_empty
)


class AgentUpdate(_UpdateFields):  # type: ignore[misc]  # a class made at run time
    """A partial change: ``None`` (or omitted) leaves a field unchanged, ``[]`` clears a list."""

    def changes(self) -> dict[str, Any]:
        """The fields this update sets, in the contract's order."""
        return {
            field: getattr(self, field)
            for field in UPDATABLE_FIELDS
            if getattr(self, field) is not None
        }


class AgentMetadata(_Model):
    """Lifecycle metadata and execution statistics of an agent (the ``_metadata`` block)."""

    created_at: UtcDatetime
    updated_at: UtcDatetime
    last_executed_at: UtcDatetime | None = None
    version: int = Field(default=1, ge=1, le=COUNTER_MAX)
    builder: Annotated[str, AfterValidator(_no_nul)] = Field(default=BUILDER, max_length=200)
    execution_count: int = Field(default=0, ge=0, le=COUNTER_MAX)
    success_count: int = Field(default=0, ge=0, le=COUNTER_MAX)
    error_count: int = Field(default=0, ge=0, le=COUNTER_MAX)


class Agent(AgentConfig):
    """A stored agent: its configuration plus its metadata."""

    metadata: AgentMetadata

    @property
    def config(self) -> AgentConfig:
        """The configuration part of this agent."""
        return AgentConfig.model_construct(
            **{name: getattr(self, name) for name in AgentConfig.model_fields}
        )


# --------------------------------------------------------------------------------------------------
# Execution history
# --------------------------------------------------------------------------------------------------


def _record_text(limit: int) -> AfterValidator:
    def clean(value: str) -> str:
        text = value.replace("\x00", "\ufffd")
        if not value.isascii():  # only non-ASCII text can hold a surrogate
            text = _SURROGATE.sub("\ufffd", text)
        return truncate(text, limit)

    return AfterValidator(clean)


class ExecutionRecord(_Model):
    """One run of an agent. Long texts are truncated, never rejected: a run is always recorded."""

    execution_id: Annotated[str, AfterValidator(_no_nul)] = Field(
        default_factory=lambda: str(uuid.uuid4()),
        min_length=1,
        max_length=64,
        description="UUID for this execution",
    )
    timestamp: UtcDatetime = Field(description="When the execution started")
    task: Annotated[str, _record_text(TASK_RECORD_MAX_LENGTH)]
    result_summary: Annotated[str, _record_text(RESULT_SUMMARY_MAX_LENGTH)]
    success: bool
    duration_seconds: float = Field(ge=0, allow_inf_nan=False)
    tool_calls_count: int = Field(default=0, ge=0, le=INTEGER_MAX)
    error_type: Annotated[str, _record_text(100)] | None = None


class ExecutionHistory(_Model):
    """The retained records of an agent, newest first, and its lifetime execution total."""

    agent_name: str
    executions: list[ExecutionRecord] = Field(default_factory=list, max_length=HISTORY_MAX_RECORDS)
    total_executions: int = Field(default=0, ge=0, le=COUNTER_MAX)


class ExecutionStats(_Model):
    """Statistics ``get_agent_history`` prints, computed by the store."""

    total_executions: int
    success_count: int
    error_count: int
    retained: int
    average_duration_seconds: float | None
    last_executed_at: datetime | None

    @property
    def success_rate(self) -> float | None:
        """Successes per run (0.0-1.0), None before the first run."""
        return self.success_count / self.total_executions if self.total_executions else None


class ExecutionRequest(_Model):
    """What a run is asked to do, checked once for every way in (tools, CLI, runner)."""

    task: str = Field(min_length=TASK_MIN_LENGTH, max_length=TASK_MAX_LENGTH)
    timeout: float = Field(
        default=TIMEOUT_DEFAULT, ge=TIMEOUT_MIN, le=TIMEOUT_MAX, allow_inf_nan=False
    )
    skip_unavailable_tools: bool = True


class HistoryRequest(_Model):
    """Which records of a history to read: the newest ``limit``, optionally failures only."""

    limit: int = Field(default=HISTORY_LIMIT_DEFAULT, ge=1, le=HISTORY_MAX_RECORDS)
    include_errors_only: bool = False


# --------------------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------------------


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


class SearchQuery(_Model):
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
        value = _no_nul(value.strip())
        return value or None

    @field_validator("tags")
    @classmethod
    def _tags_text(cls, value: list[str] | None) -> list[str] | None:
        # Filtering by a tag nobody can have is not an error: it just matches nothing. Only the
        # shape of the text is checked so that hostile input never reaches SQL as a surprise.
        if value is None:
            return None
        tags = _unique([_no_surrogates(_no_nul(t.strip().lower())) for t in value if t.strip()])
        if len(tags) > MAX_TAGS:
            raise PydanticCustomError("too_many_tags", SEARCH_TAGS_RULE)
        return tags

    def filters(self) -> dict[str, Any]:
        """The filters that are set, in the contract's order (``query`` excluded)."""
        names = ("stratum", "tools", "tags", "created_after", "created_before", "min_executions")
        return {n: getattr(self, n) for n in names if getattr(self, n) not in (None, [])}
