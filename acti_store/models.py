"""The agent's types: its configuration (``AgentConfig``, the one declaration of a configuration
field), an update of it, its metadata and the stored ``Agent``; and the one place that gives every
name of the domain model, wherever it is defined.

Pure Python: no I/O. The repository, the interchange format and the tools all use these types, so
a rule (a pattern, a length, a list of valid choices) lives in the domain model and nowhere else:
the contract's limits and choices in ``limits``, the reusable field types and their rules in
``field_types``, the base model and ``trusted`` in ``domain_model``, a run's types in ``history``,
the search query in ``search_query``. Import them from here.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import AfterValidator, BeforeValidator, Field

from .domain_model import DomainModel
from .domain_model import M as M
from .domain_model import trusted as trusted
from .field_types import AgentName as AgentName
from .field_types import Description as Description
from .field_types import ModelId as ModelId
from .field_types import Stratum as Stratum
from .field_types import SystemPrompt as SystemPrompt
from .field_types import TagList as TagList
from .field_types import TextList as TextList
from .field_types import ToolList as ToolList
from .field_types import UtcDatetime as UtcDatetime
from .field_types import is_valid_name as is_valid_name
from .field_types import no_nul, none_as_empty
from .field_types import truncate as truncate
from .fields import WHEN_SET as WHEN_SET
from .fields import marked, partial_fields
from .history import ExecutionHistory as ExecutionHistory
from .history import ExecutionRecord as ExecutionRecord
from .history import ExecutionRequest as ExecutionRequest
from .history import ExecutionStats as ExecutionStats
from .history import HistoryRequest as HistoryRequest
from .limits import BUILDER as BUILDER
from .limits import COUNTER_MAX as COUNTER_MAX
from .limits import DATE_FORMAT_HINT as DATE_FORMAT_HINT
from .limits import DEFAULT_MODEL as DEFAULT_MODEL
from .limits import DESCRIPTION_MAX_LENGTH as DESCRIPTION_MAX_LENGTH
from .limits import DESCRIPTION_MIN_LENGTH as DESCRIPTION_MIN_LENGTH
from .limits import HISTORY_LIMIT_DEFAULT as HISTORY_LIMIT_DEFAULT
from .limits import HISTORY_MAX_RECORDS as HISTORY_MAX_RECORDS
from .limits import INTEGER_MAX as INTEGER_MAX
from .limits import MAX_TAGS as MAX_TAGS
from .limits import MODEL_MAX_LENGTH as MODEL_MAX_LENGTH
from .limits import MODEL_PATTERN as MODEL_PATTERN
from .limits import NAME_MAX_LENGTH as NAME_MAX_LENGTH
from .limits import NAME_PATTERN as NAME_PATTERN
from .limits import NAME_RULE as NAME_RULE
from .limits import RESERVED_TAGS as RESERVED_TAGS
from .limits import RESULT_SUMMARY_MAX_LENGTH as RESULT_SUMMARY_MAX_LENGTH
from .limits import SEARCH_LIMIT_DEFAULT as SEARCH_LIMIT_DEFAULT
from .limits import SEARCH_LIMIT_MAX as SEARCH_LIMIT_MAX
from .limits import SEARCH_LIMIT_MIN as SEARCH_LIMIT_MIN
from .limits import SEARCH_TAGS_RULE as SEARCH_TAGS_RULE
from .limits import SORT_DESCRIPTIONS as SORT_DESCRIPTIONS
from .limits import SORT_FIELDS as SORT_FIELDS
from .limits import STRATA as STRATA
from .limits import SYSTEM_PROMPT_MIN_LENGTH as SYSTEM_PROMPT_MIN_LENGTH
from .limits import TAG_MAX_LENGTH as TAG_MAX_LENGTH
from .limits import TAG_MIN_LENGTH as TAG_MIN_LENGTH
from .limits import TAG_PATTERN as TAG_PATTERN
from .limits import TASK_MAX_LENGTH as TASK_MAX_LENGTH
from .limits import TASK_MIN_LENGTH as TASK_MIN_LENGTH
from .limits import TASK_RECORD_MAX_LENGTH as TASK_RECORD_MAX_LENGTH
from .limits import TEXT_MAX_LENGTH as TEXT_MAX_LENGTH
from .limits import TIMEOUT_DEFAULT as TIMEOUT_DEFAULT
from .limits import TIMEOUT_MAX as TIMEOUT_MAX
from .limits import TIMEOUT_MIN as TIMEOUT_MIN
from .limits import TOOL_CATEGORIES as TOOL_CATEGORIES
from .limits import SortField as SortField
from .search_query import SearchQuery as SearchQuery
from .timestamps import NAIVE_DATETIME_RULE as NAIVE_DATETIME_RULE
from .timestamps import as_utc as as_utc
from .timestamps import utc_now as utc_now


class AgentConfig(DomainModel):
    """What a user defines about an agent: the fields of ``create_agent_config``.

    The one declaration of a configuration field: the update's fields, the columns of the agent,
    snapshot and archive tables (``schema.ConfigColumns``), the statements' column lists and row
    mappings, the documents, the tools' arguments and the command line's options derive from it.
    """

    name: AgentName = Field(description="Unique snake_case identifier of the agent")
    description: Description = Field(description="What the agent does (10-500 characters)")
    system_prompt: SystemPrompt = Field(description="Complete system prompt (50+ characters)")
    tools: Annotated[ToolList, BeforeValidator(none_as_empty)] = Field(
        default_factory=list, description="MCP tool categories the agent may use"
    )
    model: ModelId = Field(default=DEFAULT_MODEL, description="LLM in provider:model form")
    stratum: Stratum | None = Field(default=None, description="ACTi stratum classification")
    tags: Annotated[TagList, BeforeValidator(none_as_empty)] = Field(
        default_factory=list, description="Categorization tags (at most 10)"
    )


#: Fields an update may change, in the contract's order: the configuration but its name, which
#: identifies the agent and never changes.
UPDATABLE_FIELDS: Final[tuple[str, ...]] = tuple(f for f in AgentConfig.model_fields if f != "name")
#: The configuration fields documents hold only when set (``fields.WhenSet``).
WHEN_SET_FIELDS: Final = marked(AgentConfig, WHEN_SET)
#: An update's fields: the updatable ones, each optional (None: keep), a None not made ``[]``.
_UpdateFields: Any = partial_fields(
    "_UpdateFields", DomainModel, AgentConfig, UPDATABLE_FIELDS, dropped=none_as_empty
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


class AgentMetadata(DomainModel):
    """Lifecycle metadata and execution statistics of an agent (the ``_metadata`` block)."""

    created_at: UtcDatetime
    updated_at: UtcDatetime
    last_executed_at: UtcDatetime | None = None
    version: int = Field(default=1, ge=1, le=COUNTER_MAX)
    builder: Annotated[str, AfterValidator(no_nul)] = Field(default=BUILDER, max_length=200)
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
