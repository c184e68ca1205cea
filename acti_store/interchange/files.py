"""An agent's files in an interchange folder: their names, how they are parsed and written.

``{name}.json`` holds an agent, ``{name}_history.json`` its history, exactly in the contract's
format (``documents`` renders and parses them). Shared by export, import, rewrite and the mirror.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Final

from ..documents import (
    DocumentError,
    agent_document,
    agent_from_document,
    dumps,
    history_document,
    history_from_document,
    is_history_document,
    loads,
)
from ..errors import AgentNotFoundError
from ..models import Agent, ExecutionHistory, is_valid_name
from ..repository import RepositoryPort
from .folder import SUFFIX, Folder

HISTORY_SUFFIX: Final = "_history.json"
DEFAULT_DIRECTORY: Final = Path("outputs/agents")

#: ``progress(done, total)``: called as files (import) or agents (export) are processed.
Progress = Callable[[int, int], None]


def agent_file_name(name: str) -> str:
    return f"{name}{SUFFIX}"


def history_file_name(name: str) -> str:
    return f"{name}{HISTORY_SUFFIX}"


# --------------------------------------------------------------------------------------------------
# Reading: a document checked against its file name
# --------------------------------------------------------------------------------------------------


def parse_history(file: str, document: object) -> ExecutionHistory:
    """Validate a history document and check it against its file name."""
    history = history_from_document(document)
    if history_file_name(history.agent_name) != file:
        raise DocumentError(
            f"the history of agent {history.agent_name!r}: its file name must be "
            f"{history_file_name(history.agent_name)}"
        )
    return history


def parse(
    file: str, document: object, *, new_at: datetime | None = None
) -> Agent | ExecutionHistory:
    """Validate an agent or history document and check it against its file name; ``new_at``:
    a configuration written by hand is a new agent made then (``agent_from_document``)."""
    if is_history_document(document):
        return parse_history(file, document)
    agent = agent_from_document(document, new_at=new_at)
    if agent_file_name(agent.name) != file:
        raise DocumentError(
            f"the file name does not match the agent name {agent.name!r} "
            f"(expected {agent_file_name(agent.name)})"
        )
    return agent


# --------------------------------------------------------------------------------------------------
# Writing: one agent's files, shared by export and the mirror
# --------------------------------------------------------------------------------------------------


def has_history(history: ExecutionHistory | None) -> bool:
    return history is not None and bool(history.executions or history.total_executions)


def shadowed_by_history(repo: RepositoryPort, name: str) -> str | None:
    """The agent whose history file has the name of ``name``'s agent file, if that agent has a
    history: agents ``x`` and ``x_history`` both want ``x_history.json``, and the history wins."""
    owner = name.removesuffix("_history")
    if owner == name or not is_valid_name(owner):
        return None
    try:
        history = repo.get_history(owner, limit=1)
    except AgentNotFoundError:
        return None
    return owner if has_history(history) else None


def holds_own_document(folder: Folder, file: str, *, agent: str, history: bool) -> bool:
    """True when ``file`` holds a document of ``agent`` (its history, if ``history``): only such
    files are ever removed, never someone else's that happens to share the name."""
    try:
        document = loads(folder.read(file))
    except DocumentError:
        return False
    if history:
        return is_history_document(document) and document.get("agent_name") == agent
    return isinstance(document, dict) and document.get("name") == agent


def write_files(folder: Folder, agent: Agent, history: ExecutionHistory | None) -> list[bool]:
    """Write an agent's files (and remove a stale history file); one ``written`` flag per file."""
    written = [folder.write(agent_file_name(agent.name), dumps(agent_document(agent)).encode())]
    history_file = history_file_name(agent.name)
    if history is not None and has_history(history):
        written.append(folder.write(history_file, dumps(history_document(history)).encode()))
    elif holds_own_document(folder, history_file, agent=agent.name, history=True):
        folder.remove(history_file)
    return written
