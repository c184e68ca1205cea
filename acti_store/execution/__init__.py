"""Running stored agents for real: MCP tools per category, deepagents, history records.

``AgentRunner`` is what ``execute_created_agent`` (and ``acti-store run``) call::

    from acti_store import open_repository
    from acti_store.execution import AgentRunner

    repo = open_repository()
    runner = AgentRunner(repo)                      # default catalog, the agent's own model
    report = runner.run_sync(repo.get("lead_qualifier"), "Qualify John from Acme")
    print(report.text)                              # the contract's text
    report.artifact["status"]                       # "success" or "error"

    async with AgentRunner(repo, keep_servers=300.0) as runner:   # MCP servers kept warm
        report = await runner.run(repo.get("lead_qualifier"), "Qualify Jane from Initech")

Needs the ``agents`` extra (deepagents, langchain, langchain-mcp-adapters, mcp).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .catalog import DEFAULT_CATEGORIES, ENV_CONFIG, CategorySpec, McpCatalog, McpCatalogError
from .redaction import MODEL_API_KEYS
from .results import ExecutionResult, RunReport, ToolCallRecord, Unavailable

if TYPE_CHECKING:
    from .pool import RunnerClosedError, UnclosedRunnerWarning
    from .runner import AgentRunner, ModelFactory

_RUNNER_NAMES = ("AgentRunner", "ModelFactory")
_POOL_NAMES = ("RunnerClosedError", "UnclosedRunnerWarning")


def __getattr__(name: str) -> Any:
    # The runner pulls in langchain, langgraph and deepagents (seconds): import it on first use,
    # so that ``acti-store`` commands that never run an agent start fast.
    if name in _RUNNER_NAMES:
        from . import runner

        return getattr(runner, name)
    if name in _POOL_NAMES:
        from . import pool

        return getattr(pool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_CATEGORIES",
    "ENV_CONFIG",
    "MODEL_API_KEYS",
    "AgentRunner",
    "CategorySpec",
    "ExecutionResult",
    "McpCatalog",
    "McpCatalogError",
    "ModelFactory",
    "RunReport",
    "RunnerClosedError",
    "ToolCallRecord",
    "Unavailable",
    "UnclosedRunnerWarning",
]
