"""The contract's limits and choices: lengths, patterns, tool categories, strata, tags, counters,
history, search and run bounds, each written once.

Pure data: the domain models (``models``, ``history``, ``search_query``), the tables, the tools'
texts and schemas and the command line read their numbers and lists from here (through
``acti_store.models``, which gives every one of them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal

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
