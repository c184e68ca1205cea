"""What a run runs: its request checked, the agent's configuration and the version it is pinned to.

``AgentRunner.run`` and ``run_sync`` take the agent as an ``Agent``, its name or an
``AgentVersion``, pinned or not by ``version``, ``label`` and ``key``; ``pinned`` turns that into
the configuration to run and the version the run is counted for (``None``: the current one).
"""

from __future__ import annotations

from ..errors import InvalidInputError
from ..models import TIMEOUT_DEFAULT, Agent, AgentConfig, ExecutionRequest
from ..repository import AgentRepository
from ..validation import ARGUMENT
from ..versioning import AgentVersion


def request(task: str, timeout: float | None, skip_unavailable_tools: bool) -> ExecutionRequest:
    """The run's arguments checked against the contract's ranges (``None``: the default timeout)."""
    return ExecutionRequest(
        task=task,
        timeout=TIMEOUT_DEFAULT if timeout is None else timeout,
        skip_unavailable_tools=skip_unavailable_tools,
    )


def reads_nothing(
    agent: Agent | AgentVersion | str, version: int | None, label: str | None, key: str | None
) -> bool:
    """Whether ``pinned`` can answer without a read of the store: an ``AgentVersion``, or an
    ``Agent`` not pinned by ``version``, ``label`` or ``key``."""
    unpinned = version is None and label is None and key is None
    return isinstance(agent, AgentVersion) or (isinstance(agent, Agent) and unpinned)


def pinned(
    repo: AgentRepository,
    agent: Agent | AgentVersion | str,
    version: int | None,
    label: str | None,
    key: str | None,
) -> tuple[AgentConfig, int | None]:
    """The agent to run (with the pinned version's configuration) and the version pinned,
    read from ``repo`` (the store, or the twin ``acall`` hands over)."""
    if isinstance(agent, AgentVersion):
        if version is not None or label is not None or key is not None:
            why = "is already pinned by the AgentVersion given as the agent"
            raise InvalidInputError(ARGUMENT, [("version, label or key", why)])
        return agent.config, agent.version
    if version is None and label is None and key is None:
        return (agent if isinstance(agent, Agent) else repo.get(agent)), None
    name = agent if isinstance(agent, str) else agent.name
    if version is not None and key is not None:
        raise InvalidInputError(ARGUMENT, [("key", "routes by a label, not a version")])
    routed = repo.resolve(name, label, key) if version is None else None
    saved = routed or repo.get_version(name, version, label=label)
    return saved.config, saved.version
