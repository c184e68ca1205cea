"""The arguments of the repository's methods and of a store's options, checked on entry by the
rules of ``acti_store.validation`` (before anything is read or written), and the one definition
of the conflict policies of a bulk put or an import.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, Literal, get_args

from ..engine import LOCK_TIMEOUT_MAX
from ..errors import ArgumentTypeError, InvalidAgentError, InvalidInputError
from ..fields import integer_range
from ..models import (
    AgentConfig,
    AgentUpdate,
    ExecutionRecord,
    HistoryRequest,
    SearchQuery,
    is_valid_name,
)
from ..validation import (
    ARGUMENT,
    choice,
    flag,
    instance,
    integer,
    model_argument,
    optional_integer,
    quoted,
    seconds,
    unknown_name,
)

ConflictPolicy = Literal["skip", "replace", "fail"]
#: What a bulk put or an import may do with an agent the store has: ``ConflictPolicy``'s values.
CONFLICT_POLICIES: Final[tuple[ConflictPolicy, ...]] = get_args(ConflictPolicy)


def store_options(
    read_only: object, lock_timeout: object, keep_versions: object
) -> tuple[bool, float, int | None]:
    """The options of a store (``open_repository``'s and ``SqlAgentRepository``'s), checked:
    ``InvalidInputError`` (``ArgumentTypeError`` for a wrong type) for one out of its rule."""
    return (
        flag(read_only, "read_only"),
        seconds(lock_timeout, "lock_timeout", LOCK_TIMEOUT_MAX),
        optional_integer(keep_versions, "keep_versions", 0),
    )


def require_storable(name: str) -> None:
    """Raise ``AgentNotFoundError`` for a name no agent can have, without asking the database:
    a driver cannot even send some of them (NUL on PostgreSQL, lone surrogates on both); not
    text at all: ``ArgumentTypeError``."""
    if not is_valid_name(name):
        raise unknown_name(name)


def storable(name: object) -> bool:
    """Whether ``name`` is a name an agent can have (``is_valid_name``); ``ArgumentTypeError``
    when it is not text at all."""
    if is_valid_name(name):
        return True
    if not isinstance(name, str):
        raise unknown_name(name)
    return False


def checked_config(config: object) -> AgentConfig:
    """``config`` as an ``AgentConfig``: a mapping of its fields is validated into one
    (``InvalidAgentError`` lists every problem)."""
    if isinstance(config, AgentConfig):
        return config
    return model_argument(config, AgentConfig, "config", "agent", InvalidAgentError)


def checked_record(record: object) -> ExecutionRecord:
    """``record`` as an ``ExecutionRecord``: a mapping of its fields is validated into one."""
    return model_argument(record, ExecutionRecord, "record", "execution record")


def checked_source(items: object) -> None:
    """The item source of ``bulk_put_stream``: a function returning the items."""
    if not callable(items):
        raise ArgumentTypeError(ARGUMENT, [("items", "must be a function returning the items")])


def checked_update(name: str, changes: AgentUpdate | Mapping[str, Any]) -> AgentUpdate:
    """``changes`` as an ``AgentUpdate``: a mapping of field names to values is validated into
    one (``InvalidAgentError`` lists every problem); anything else is an ``ArgumentTypeError``."""
    if isinstance(changes, AgentUpdate):
        return changes
    subject = f"update of agent {quoted(name)}"
    return model_argument(changes, AgentUpdate, "changes", subject, InvalidAgentError)


def checked_query(query: object) -> SearchQuery:
    """``query`` as a ``SearchQuery``: a mapping of its fields is validated into one."""
    return model_argument(query, SearchQuery, "query", "search query")


def checked_policy(on_conflict: object) -> ConflictPolicy:
    """``on_conflict`` if it is one of ``CONFLICT_POLICIES`` exactly; else ``InvalidInputError``
    naming them (a misspelled policy must not replace what it meant to skip)."""
    return choice(on_conflict, "on_conflict", CONFLICT_POLICIES)  # type: ignore[return-value]


#: ``HistoryRequest``'s range of ``limit``, read from the model.
_LIMIT_LOW, _LIMIT_HIGH = integer_range(HistoryRequest, "limit")


def checked_history_request(limit: object, errors_only: object) -> tuple[int, bool]:
    """``(limit, errors_only)`` by the rule of ``HistoryRequest`` (the tools' too) and of every
    integer argument: an ``int`` in range, never a ``bool`` or a string, never clamped."""
    return (
        integer(limit, "limit", _LIMIT_LOW, _LIMIT_HIGH),
        flag(errors_only, "errors_only"),
    )


def retention(keep_changes: object) -> timedelta | None:
    """None, or ``keep_changes`` if it is a positive ``timedelta`` (how long the change feed
    keeps a change)."""
    if keep_changes is None:
        return None
    instance(keep_changes, timedelta, "keep_changes")
    assert isinstance(keep_changes, timedelta)
    if keep_changes <= timedelta(0):
        raise InvalidInputError(
            ARGUMENT, [("keep_changes", f"must be a positive time span, not {keep_changes}")]
        )
    return keep_changes
