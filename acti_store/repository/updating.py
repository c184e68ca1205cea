"""The update path: one agent's partial update, inside the write transaction that locked it.

``SqlAgentRepository.update_returning_previous`` (and ``rollback``) locates and locks the row,
then calls ``apply_update``; the version check, the merged validation, the UPDATE and the tags
are here; and ``clone_config``, the configuration a clone starts from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from ..errors import VersionConflictError
from ..models import DESCRIPTION_MAX_LENGTH, Agent, AgentConfig, trusted
from ..sqlexec import Cursor
from ..validation import quoted
from .feed import changed
from .port import UpdateResult, checked_config
from .statements import DELETE_TAGS, ID, INSERT_TAG, agent_from_row, config_values, update_statement

CLONE_SUFFIX: Final = " (clone)"


def clone_config(
    source: Agent, new_name: str, description: str | None, tags: list[str] | None
) -> AgentConfig:
    """The configuration of a clone of ``source``: its description marked " (clone)" unless
    given; ``InvalidAgentError`` lists every invalid field (``new_name`` for the name)."""
    if description is None:
        description = source.description[: DESCRIPTION_MAX_LENGTH - len(CLONE_SUFFIX)]
        description += CLONE_SUFFIX
    overrides: dict[str, Any] = {"name": new_name, "description": description}
    if tags is not None:
        overrides["tags"] = tags
    return checked_config(
        dict(source.config) | overrides,
        f"clone of {quoted(source.name)} as {quoted(new_name)}",
        {"name": "new_name"},
    )


def apply_update(
    cursor: Cursor,
    row: Sequence[Any],
    fields: dict[str, Any],
    expected_version: int | None,
    now: Callable[[], datetime],
) -> UpdateResult:
    """Apply ``fields`` to the agent of the locked ``row`` and bump its version.

    Raises ``VersionConflictError`` when ``expected_version`` is given and the stored version
    differs, ``InvalidAgentError`` when the merged configuration breaks a rule.
    """
    current = agent_from_row(row)
    name = current.name
    version = current.metadata.version
    if expected_version is not None and version != expected_version:
        raise VersionConflictError(name, expected_version, version)
    # Validate the merged result with the same model as create: one set of rules.
    merged = checked_config(dict(current.config) | fields, f"update of agent {quoted(name)}")
    meta = current.metadata.model_copy(update={"updated_at": now(), "version": version + 1})
    values = config_values(merged) | {
        "updated_at": meta.updated_at,
        "version": meta.version,
        "where_id": row[ID],
        "where_version": version,
    }
    # Exactly one row, always: the caller locked it (FOR UPDATE; on SQLite the write lock came
    # with BEGIN IMMEDIATE), so its version is still the one read above. The version condition
    # stays in the UPDATE so that, were that ever not so, the write would fail instead of
    # overwriting a concurrent update (on PostgreSQL the count is checked once the pipeline's
    # answers are in; the snapshot of an unchanged row would already have failed on its key).
    cursor.later(update_statement(fields), values, rowcount=1)
    changed(cursor, "updated", name, meta.version, meta.updated_at)
    if "tags" in fields:
        cursor.send(DELETE_TAGS, {"agent_id": row[ID]})
        if merged.tags:
            cursor.executemany(INSERT_TAG, [{"agent_id": row[ID], "tag": t} for t in merged.tags])
    return UpdateResult(current, trusted(Agent, **dict(merged), metadata=meta))
