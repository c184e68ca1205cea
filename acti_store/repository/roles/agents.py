"""The agents role: create, read, update, delete and clone an agent's configuration, each one
transaction on the statements of ``statements`` (a write records its version snapshot in the
same transaction: ``repository.versions``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...errors import AgentExistsError, NoChangesError
from ...models import Agent, AgentConfig, AgentMetadata, AgentUpdate, trusted
from ...sqlexec import Cursor
from ...validation import flag, integer, optional_message, optional_version
from ...versioning import clone_message
from ..arguments import checked_config, checked_update, storable
from ..core import Role, agent_row
from ..feed import changed
from ..paging import agent_pages
from ..port import UpdateResult
from ..statements import (
    ALL,
    ARCHIVE_HISTORY,
    DELETE_AGENT,
    DELETE_HISTORY,
    DELETE_TAGS,
    GET_ID,
    ID,
    NAMES,
    agent_from_row,
    config_values,
    metadata_values,
)
from ..tenant_admin import admit
from ..updating import apply_update, clone_config
from ..versions import forget_versions, insert_agent, record_snapshot


class Agents(Role):
    """``create``, ``get``, ``exists``, ``list_agents``, ``iter_agents``, ``list_names``,
    ``update_returning_previous``, ``delete`` and ``clone`` of the repository."""

    def create(self, config: AgentConfig | Mapping[str, Any], message: str | None = None) -> Agent:
        config = checked_config(config)
        message = optional_message(message, "message")
        values, agent = self._new_agent(config)

        def work(cursor: Cursor) -> None:
            admit(cursor, self._core, 1)  # registered, and within its limit
            # A taken name fails the INSERT on the unique constraint: AgentExistsError.
            insert_agent(cursor, values, agent, message, self._core.keep_versions)

        self._write(work, name=config.name)
        self._core.grew()
        self._notify(config.name)
        return agent

    def _new_agent(self, config: AgentConfig) -> tuple[dict[str, Any], Agent]:
        """A new agent's row values and model: version 1 (``metadata_values``), made now."""
        now = self.now()
        meta = AgentMetadata(created_at=now, updated_at=now)
        agent = trusted(Agent, **dict(config), metadata=meta)
        return config_values(config) | metadata_values(meta, 0), agent

    def get(self, name: str) -> Agent:
        return self._read(lambda cursor: agent_from_row(agent_row(cursor, name)))

    def exists(self, name: str) -> bool:
        if not storable(name):
            return False
        return self._read(lambda cursor: cursor.first(GET_ID, {"name": name}) is not None)

    def list_agents(self) -> list[Agent]:
        return self._read(lambda cursor: [agent_from_row(r) for r in cursor.all(ALL)])

    def iter_agents(self, page_size: int = 500) -> Iterator[Agent]:
        return agent_pages(self._read, integer(page_size, "page_size", 1))

    def list_names(self) -> list[str]:
        return self._read(lambda cursor: [r[0] for r in cursor.all(NAMES)])

    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate | Mapping[str, Any],
        expected_version: int | None = None,
        message: str | None = None,
    ) -> UpdateResult:
        fields = checked_update(name, changes).changes()
        expected_version = optional_version(expected_version, "expected_version")
        if not fields:
            raise NoChangesError(name)
        message = optional_message(message, "message")

        def work(cursor: Cursor) -> UpdateResult:
            row = agent_row(cursor, name, for_update=True)
            result = apply_update(cursor, row, fields, expected_version, self.now)
            record_snapshot(cursor, row[ID], result.agent, message, self._core.keep_versions)
            return result

        result = self._write(work)
        self._notify(name)
        return result

    def delete(self, name: str, delete_history: bool = True) -> Agent:
        delete_history = flag(delete_history, "delete_history")

        def work(cursor: Cursor) -> Agent:
            row = agent_row(cursor, name, for_update=True)
            if delete_history:
                cursor.send(DELETE_HISTORY, {"agent_id": row[ID]})
            else:
                cursor.send(ARCHIVE_HISTORY, {"archived_id": row[ID]})
            forget_versions(cursor, row[ID], name, archive=not delete_history)
            cursor.send(DELETE_TAGS, {"agent_id": row[ID]})
            cursor.send(DELETE_AGENT, {"agent_id": row[ID]})
            agent = agent_from_row(row)
            changed(cursor, "deleted", name, agent.metadata.version, self.now())
            return agent

        agent = self._write(work)
        self._notify(name)
        return agent

    def clone(
        self,
        source_name: str,
        new_name: str,
        description: str | None = None,
        tags: list[str] | None = None,
    ) -> Agent:
        def work(cursor: Cursor) -> Agent:
            source = agent_from_row(agent_row(cursor, source_name))
            config = clone_config(source, new_name, description, tags)
            if cursor.first(GET_ID, {"name": new_name}) is not None:
                raise AgentExistsError(new_name)
            admit(cursor, self._core, 1)
            values, clone = self._new_agent(config)
            message = clone_message(source_name, source.metadata.version)
            insert_agent(cursor, values, clone, message, self._core.keep_versions)
            return clone

        agent = self._write(work, name=new_name)
        self._core.grew()
        self._notify(new_name)
        return agent
