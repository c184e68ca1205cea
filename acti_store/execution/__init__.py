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

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .catalog import DEFAULT_CATEGORIES, ENV_CONFIG, CategorySpec, McpCatalog, McpCatalogError
    from .pool import RunnerClosedError, UnclosedRunnerWarning
    from .redaction import MODEL_API_KEYS
    from .results import ExecutionResult, RunReport, ToolCallRecord, Unavailable
    from .runner import AgentRunner, ModelFactory

#: Each export and its module, imported on first use: the runner pulls in langchain, langgraph
#: and deepagents (seconds), and the catalog and results pydantic models; a command that only
#: reads one of this package's modules (``acti-store``'s help texts) loads that module alone.
_EXPORTS: Final = {
    "AgentRunner": "runner",
    "CategorySpec": "catalog",
    "DEFAULT_CATEGORIES": "catalog",
    "ENV_CONFIG": "catalog",
    "ExecutionResult": "results",
    "MODEL_API_KEYS": "redaction",
    "McpCatalog": "catalog",
    "McpCatalogError": "catalog",
    "ModelFactory": "runner",
    "RunReport": "results",
    "RunnerClosedError": "pool",
    "ToolCallRecord": "results",
    "Unavailable": "results",
    "UnclosedRunnerWarning": "pool",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
