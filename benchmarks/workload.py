"""The seeded workload every backend runs: the same inputs, in the same order, at the same instants.

Everything here is deterministic for a given seed and size, so two backends (or two runs) see
byte-identical inputs. Inputs are the domain types the tools hand to the repository (a validated
``AgentConfig``, ``AgentUpdate``, ``ExecutionRecord``, ``SearchQuery``): validating user input is
the tool layer's job and is not part of any backend's measured time.

Time is injected: :class:`BenchClock` returns whatever instant the driver set before each call, so
``created_at``/``updated_at`` are the same in every backend and exported files can be compared
byte for byte.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any, Final

from acti_store.models import (
    SORT_FIELDS,
    STRATA,
    TOOL_CATEGORIES,
    Agent,
    AgentConfig,
    AgentMetadata,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    SearchQuery,
)

BASE_TIME: Final = datetime(2025, 1, 1, 8, 0, 0, tzinfo=UTC)
#: Agents are created in pairs at the same instant (so sorts need their name tie-breaker),
#: about 50 minutes apart; the odd microseconds exercise timestamp formatting.
CREATE_STEP: Final = timedelta(microseconds=2_999_123_457)
UPDATE_STEP: Final = timedelta(seconds=613, microseconds=271_828)
EXECUTION_STEP: Final = timedelta(seconds=7, microseconds=314_159)
HISTORY_READ_LIMIT: Final = 10
#: Share of ``record_execution`` calls that go to the "hot" agents (2% of all agents).
HOT_SHARE: Final = 0.6
HOT_FRACTION: Final = 0.02

# --------------------------------------------------------------------------------------------------
# Vocabulary: descriptions read like real agent descriptions; search words come from the same words
# --------------------------------------------------------------------------------------------------

VERBS: Final = (
    "Qualifies", "Schedules", "Researches", "Summarizes", "Routes", "Drafts replies to",
    "Monitors", "Audits", "Forecasts", "Enriches", "Triages", "Books", "Reconciles", "Screens",
    "Escalates", "Translates", "Analyzes", "Tracks", "Follows up on", "Prioritizes",
)  # fmt: skip
OBJECTS: Final = (
    "inbound leads", "appointments", "support tickets", "invoices", "sales calls",
    "meeting notes", "renewal contracts", "customer emails", "pipeline deals",
    "candidate résumés", "compliance reports", "web mentions", "voice messages",
    "partner referrals", "churn signals", "product feedback", "calendar conflicts",
    "purchase orders", "onboarding tasks", "market news",
)  # fmt: skip
AUDIENCES: Final = (
    "sales teams", "account executives", "recruiters", "finance", "customer success",
    "operations", "marketing", "legal", "executives", "SDRs", "the help desk",
    "field technicians",
)  # fmt: skip
METHODS: Final = (
    "BANT criteria", "MEDDIC scoring", "CRM history", "calendar availability", "web search",
    "sentiment analysis", "SLA rules", "Zapier-style workflows", "GDPR policies",
    "revenue forecasts", "call transcripts", "email threads",
)  # fmt: skip
#: Rare endings carry the characters search must treat literally (``%``, ``_``) and non-ASCII text.
QUALIFIERS: Final = (
    "automatically", "daily", "in real time", "overnight", "on demand", "weekly",
    "across regions", "with 100% coverage", "for café chains", "from inbound_leads exports",
)  # fmt: skip
NAME_HEADS: Final = (
    "lead", "appointment", "research", "support", "invoice", "calendar", "voice", "crm",
    "email", "market", "churn", "onboarding", "compliance", "renewal", "referral", "ticket",
)  # fmt: skip
NAME_TAILS: Final = (
    "qualifier", "scheduler", "assistant", "router", "analyst", "monitor", "auditor",
    "forecaster", "enricher", "triager", "booker", "screener", "agent", "bot", "helper",
)  # fmt: skip
#: Most common first: tag frequency falls off with the position.
TAG_POOL: Final = (
    "production", "sales", "experimental", "support", "b2b", "finance", "template", "marketing",
    "ops", "deprecated", "voice-first", "meddic", "bant", "gdpr", "emea", "apac", "na", "beta",
    "internal", "customer-facing", "high-volume", "pilot", "legal", "hr", "b2c",
)  # fmt: skip
TAG_WEIGHTS: Final = tuple(1 / (i + 1) ** 0.7 for i in range(len(TAG_POOL)))
MODELS: Final = (
    "anthropic:claude-opus-4-5-20251101",
    "anthropic:claude-sonnet-4-5",
    "openai:gpt-4.1",
)
ERROR_TYPES: Final = ("TimeoutError", "ToolError", "RateLimitError", "ValidationError")
COMPANIES: Final = ("Acme Corp", "StartupXYZ", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay")
#: Queries whose characters must match literally (LIKE wildcards) or are not ASCII.
LITERAL_QUERIES: Final = ("100%", "inbound_leads", "café", "s_l", "100_", "%", "_")
SEARCH_KINDS: Final = (
    "word",
    "two_words",
    "stratum",
    "tools",
    "tags",
    "created",
    "min_executions",
    "literal",
    "combo",
    "everything",
)
SEARCH_LIMITS: Final = (5, 10, 20, 20, 50, 100)


def _words() -> tuple[str, ...]:
    """Every word of the vocabulary (3+ characters), lowercased: the pool of search words."""
    words = {
        word.lower()
        for phrase in (*VERBS, *OBJECTS, *AUDIENCES, *METHODS, *NAME_HEADS, *NAME_TAILS)
        for word in phrase.split()
        if len(word) >= 3
    }
    return tuple(sorted(words))


SEARCH_WORDS: Final = _words()


class BenchClock:
    """The clock injected into every backend: returns the instant the driver set, unchanged."""

    def __init__(self, start: datetime = BASE_TIME) -> None:
        self.current = start

    def __call__(self) -> datetime:
        return self.current

    def set(self, value: datetime) -> None:
        self.current = value


# --------------------------------------------------------------------------------------------------
# Field generators
# --------------------------------------------------------------------------------------------------


def _description(rng: random.Random) -> str:
    text = (
        f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} for {rng.choice(AUDIENCES)} "
        f"using {rng.choice(METHODS)}"
    )
    if rng.random() < 0.25:
        text += " " + rng.choice(QUALIFIERS)
    return text


def _system_prompt(rng: random.Random) -> str:
    sentences = [
        f"You are a {rng.choice(NAME_HEADS)} {rng.choice(NAME_TAILS)} working for "
        f"{rng.choice(AUDIENCES)}."
    ]
    for _ in range(rng.randint(2, 9)):
        sentences.append(
            f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} with {rng.choice(METHODS)}, "
            f"and report to {rng.choice(AUDIENCES)} {rng.choice(QUALIFIERS)}."
        )
    return " ".join(sentences)


def _tools(rng: random.Random) -> list[str]:
    tools = [t for t in TOOL_CATEGORIES if rng.random() < 0.4]
    rng.shuffle(tools)
    return tools


def _tags(rng: random.Random) -> list[str]:
    count = rng.choice((0, 1, 1, 2, 2, 3, 4))
    return list(dict.fromkeys(rng.choices(TAG_POOL, weights=TAG_WEIGHTS, k=count)))


def _stratum(rng: random.Random) -> str | None:
    return None if rng.random() < 0.15 else rng.choice(tuple(STRATA))


def _names(rng: random.Random, count: int) -> list[str]:
    serials = rng.sample(range(10 * count + 10), count)
    return [f"{rng.choice(NAME_HEADS)}_{rng.choice(NAME_TAILS)}_{n:06d}" for n in serials]


def _config_fields(rng: random.Random, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": _description(rng),
        "system_prompt": _system_prompt(rng),
        "tools": _tools(rng),
        "model": rng.choice(MODELS),
        "stratum": _stratum(rng),
        "tags": _tags(rng),
    }


def created_at(index: int) -> datetime:
    """When agent ``index`` (in creation order) is created."""
    return BASE_TIME + (index // 2) * CREATE_STEP


def _record(rng: random.Random, at: datetime) -> ExecutionRecord:
    success = rng.random() < 0.88
    return ExecutionRecord(
        execution_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        timestamp=at,
        task=f"{rng.choice(VERBS)} {rng.choice(OBJECTS)} from {rng.choice(COMPANIES)}: "
        + " ".join(rng.choices(SEARCH_WORDS, k=rng.randint(3, 40))),
        result_summary=(
            f"Done: {rng.randint(1, 40)} {rng.choice(OBJECTS)} handled"
            if success
            else f"Failed while calling {rng.choice(TOOL_CATEGORIES)}"
        ),
        success=success,
        duration_seconds=round(rng.lognormvariate(1.0, 0.8), 3),
        tool_calls_count=rng.randint(0, 9),
        error_type=None if success else rng.choice(ERROR_TYPES),
    )


# --------------------------------------------------------------------------------------------------
# Searches
# --------------------------------------------------------------------------------------------------


def _word(rng: random.Random) -> str:
    word = rng.choice(SEARCH_WORDS)
    if rng.random() < 0.3 and len(word) > 5:
        word = word[: rng.randint(4, len(word) - 1)]  # a prefix: substring semantics
    return rng.choice((word, word, word.upper(), word.capitalize()))  # case-insensitive


def _date_text(rng: random.Random, start: datetime, end: datetime) -> str:
    moment = start + (end - start) * rng.random()
    if rng.random() < 0.5:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def search_kind(index: int) -> str:
    """Which kind of search ``make_searches`` made at ``index``."""
    return SEARCH_KINDS[index % len(SEARCH_KINDS)]


def make_searches(
    rng: random.Random, count: int, span: tuple[datetime, datetime]
) -> list[SearchQuery]:
    """``count`` searches covering every filter and every sort.

    The kind cycles with period 10 and the sort with an offset per round of 10, so the first 10
    searches use every kind and all four sorts, and each block of 40 every (kind, sort) pair.
    """
    start, end = span
    searches = []
    for i in range(count):
        kind = search_kind(i)
        fields: dict[str, Any] = {
            "sort_by": SORT_FIELDS[(i + i // len(SEARCH_KINDS)) % len(SORT_FIELDS)],
            "limit": rng.choice(SEARCH_LIMITS),
        }
        if kind == "word":
            fields["query"] = _word(rng)
        elif kind == "two_words":
            fields["query"] = f"{_word(rng)} {_word(rng)}"
        elif kind == "stratum":
            fields["stratum"] = rng.choice(tuple(STRATA)).lower()
        elif kind == "tools":
            fields["tools"] = rng.sample(TOOL_CATEGORIES, rng.randint(1, 2))
        elif kind == "tags":
            fields["tags"] = rng.sample(TAG_POOL[:8], rng.randint(1, 2))
        elif kind == "created":
            low, high = sorted((_date_text(rng, start, end), _date_text(rng, start, end)))
            if rng.random() < 0.7:
                fields["created_after"] = low
            if rng.random() < 0.7 or "created_after" not in fields:
                fields["created_before"] = high
        elif kind == "min_executions":
            fields["min_executions"] = rng.choice((1, 2, 5, 10, 25, 50))
        elif kind == "literal":
            fields["query"] = rng.choice(LITERAL_QUERIES)
        elif kind == "combo":
            fields["query"] = _word(rng)
            fields["stratum"] = rng.choice(tuple(STRATA))
            fields["tools"] = [rng.choice(TOOL_CATEGORIES)]
        else:  # everything at once
            fields["query"] = _word(rng)[:4]
            fields["stratum"] = rng.choice(tuple(STRATA))
            fields["tools"] = [rng.choice(TOOL_CATEGORIES)]
            fields["tags"] = [TAG_POOL[0]]
            fields["created_after"] = _date_text(rng, start, start + (end - start) / 2)
            fields["created_before"] = end.isoformat()
            fields["min_executions"] = 1
        searches.append(SearchQuery.model_validate(fields))
    return searches


# --------------------------------------------------------------------------------------------------
# The live workload (timed)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadSize:
    agents: int = 10_000
    gets: int = 2_000
    updates: int = 500
    searches: int = 200
    executions: int = 20_000
    history_reads: int = 2_000


@dataclass(frozen=True)
class Create:
    config: AgentConfig
    at: datetime


@dataclass(frozen=True)
class Update:
    name: str
    changes: AgentUpdate
    at: datetime


@dataclass(frozen=True)
class Execution:
    name: str
    record: ExecutionRecord


@dataclass(frozen=True)
class Workload:
    size: WorkloadSize
    creates: list[Create]
    gets: list[str]
    updates: list[Update]
    executions: list[Execution]
    history_reads: list[str]
    searches: list[SearchQuery]
    history_limit: int = HISTORY_READ_LIMIT

    @property
    def names(self) -> list[str]:
        return [c.config.name for c in self.creates]


def _update(rng: random.Random) -> AgentUpdate:
    fields: dict[str, Any] = {}
    for field in rng.sample(
        ("description", "system_prompt", "tools", "model", "stratum", "tags"), rng.randint(1, 3)
    ):
        if field == "description":
            fields[field] = _description(rng)
        elif field == "system_prompt":
            fields[field] = _system_prompt(rng)
        elif field == "tools":
            fields[field] = [] if rng.random() < 0.1 else _tools(rng)
        elif field == "model":
            fields[field] = rng.choice(MODELS)
        elif field == "stratum":
            fields[field] = rng.choice(tuple(STRATA))
        else:
            fields[field] = [] if rng.random() < 0.1 else _tags(rng)
    return AgentUpdate.model_validate(fields)


def _execution_targets(rng: random.Random, names: Sequence[str], count: int) -> list[str]:
    """Which agent each run goes to: 60% to a hot 2% of agents (~60 runs each at the default
    size, so all of them pass the 50-record FIFO), 40% Zipf(s=1) over every agent."""
    hot = rng.sample(list(names), max(1, int(len(names) * HOT_FRACTION)))
    ranked = list(names)
    rng.shuffle(ranked)
    cumulative = list(accumulate(1 / (k + 1) for k in range(len(ranked))))
    tail = iter(rng.choices(ranked, cum_weights=cumulative, k=count))
    return [rng.choice(hot) if rng.random() < HOT_SHARE else next(tail) for _ in range(count)]


def make_workload(size: WorkloadSize, seed: int) -> Workload:
    """The timed workload at ``size``: deterministic for ``seed``."""
    rng = random.Random(seed)
    names = _names(rng, size.agents)
    creates = [
        Create(AgentConfig.model_validate(_config_fields(rng, name)), created_at(i))
        for i, name in enumerate(names)
    ]
    gets = rng.choices(names, k=size.gets)
    update_start = created_at(size.agents) + timedelta(days=1)
    updates = [
        Update(rng.choice(names), _update(rng), update_start + j * UPDATE_STEP)
        for j in range(size.updates)
    ]
    run_start = update_start + size.updates * UPDATE_STEP + timedelta(days=1)
    targets = _execution_targets(rng, names, size.executions)
    executions = [
        Execution(name, _record(rng, run_start + k * EXECUTION_STEP))
        for k, name in enumerate(targets)
    ]
    executed = sorted(set(targets))
    history_reads = [
        rng.choice(executed) if executed and rng.random() < 0.8 else rng.choice(names)
        for _ in range(size.history_reads)
    ]
    searches = make_searches(rng, size.searches, (BASE_TIME, created_at(size.agents)))
    return Workload(size, creates, gets, updates, executions, history_reads, searches)


# --------------------------------------------------------------------------------------------------
# The search-scale store (built with each backend's bulk path, not timed)
# --------------------------------------------------------------------------------------------------

BulkItem = tuple[Agent, ExecutionHistory | None]


def bulk_agents(
    count: int, seed: int, *, histories: bool = True, chunk: int = 2_000
) -> Iterator[list[BulkItem]]:
    """``count`` stored agents with varied metadata (and histories), in chunks.

    About 45% have been run; run counts are heavy-tailed (Pareto); with ``histories`` each run
    agent keeps its newest ``min(runs, 50)`` records (search does not need them: building them is
    for export/import at scale). Deterministic for ``seed`` and ``histories``; generated lazily so
    that a 100,000-agent store never sits in memory at once.
    """
    rng = random.Random(seed)
    names = _names(rng, count)
    batch: list[BulkItem] = []
    for i, name in enumerate(names):
        config = _config_fields(rng, name)
        created = created_at(i)
        updated = created
        version = 1
        if rng.random() < 0.5:
            updated = created + timedelta(
                seconds=rng.randint(1, 90 * 86_400), microseconds=rng.randint(0, 999_999)
            )
            version = rng.randint(2, 6)
        runs = 0 if rng.random() < 0.55 else min(int(rng.paretovariate(0.9)), 5_000)
        errors = int(runs * rng.uniform(0, 0.2))
        history: ExecutionHistory | None = None
        last_run: datetime | None = None
        if runs:
            last_run = updated + timedelta(seconds=rng.randint(1, 30 * 86_400))
            if histories:
                records = [
                    _record(rng, last_run - k * EXECUTION_STEP) for k in range(min(runs, 50))
                ]
                history = ExecutionHistory.model_construct(
                    agent_name=name, executions=records, total_executions=runs
                )
        metadata = AgentMetadata.model_construct(
            created_at=created,
            updated_at=updated,
            last_executed_at=last_run,
            version=version,
            builder="acti-agent-builder",
            execution_count=runs,
            success_count=runs - errors,
            error_count=errors,
        )
        batch.append((Agent.model_construct(**config, metadata=metadata), history))
        if len(batch) == chunk:
            yield batch
            batch = []
    if batch:
        yield batch


def bulk_span(count: int) -> tuple[datetime, datetime]:
    """The creation-time range of the store :func:`bulk_agents` builds."""
    return BASE_TIME, created_at(count)
