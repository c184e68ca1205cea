"""What a run produces: the contract's ``ExecutionResult``/``ToolCallRecord`` and the report.

``ExecutionResult`` and ``ToolCallRecord`` keep the contract's fields as they are ("Response Schema
(Structured)"). ``RunReport`` bundles what callers get back from ``AgentRunner.run``: the text for
LLMs and people, a dict for programs, the dataclass, and the history record when the run was
recorded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from ..models import ExecutionRecord

# ``ExecutionResult.error_type`` values: the contract's codes, plus ``model_error`` (the model
# could not be set up: no API key, unknown provider), which the contract has no code for.
MCP_ERROR: Final = "mcp_error"
TIMEOUT: Final = "timeout"
EXECUTION_ERROR: Final = "execution_error"
MODEL_ERROR: Final = "model_error"

# The error categories of the contract's table, as recorded in ``ExecutionRecord.error_type``.
MCP_CONNECTION_ERROR: Final = "MCPConnectionError"
MCP_TIMEOUT_ERROR: Final = "MCPTimeoutError"
EXECUTION_TIMEOUT: Final = "ExecutionTimeout"
EXECUTION_ERROR_NAME: Final = "ExecutionError"

UnavailableKind = Literal["credentials", "not_configured", "connection", "timeout"]


@dataclass
class ToolCallRecord:
    """Record of a single tool invocation."""

    tool_name: str
    arguments: dict[str, Any]
    result: str | None = None
    error: str | None = None
    duration_ms: float = 0.0


@dataclass
class ExecutionResult:
    """Result of agent execution."""

    success: bool
    agent_name: str
    task: str
    response: str | None = None
    duration_seconds: float = 0.0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    tools_unavailable: list[str] = field(default_factory=list)
    degraded_mode: bool = False
    error: str | None = None
    error_type: str | None = None  # "not_found", "mcp_error", "timeout", "execution_error"


@dataclass(frozen=True)
class Unavailable:
    """Why one tool category of an agent cannot be offered in this run."""

    category: str
    kind: UnavailableKind
    reason: str
    missing_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunReport:
    """What ``AgentRunner.run`` returns.

    ``text`` is the contract's text; ``artifact`` is ``result`` as a dict plus ``"status"``
    (``"success"`` or ``"error"``); ``record`` is the history record written for this run, or
    ``None`` when the run never started (missing credentials, missing model key).
    """

    text: str
    result: ExecutionResult
    record: ExecutionRecord | None = None

    @property
    def artifact(self) -> dict[str, Any]:
        return asdict(self.result) | {"status": "success" if self.result.success else "error"}

    @property
    def success(self) -> bool:
        return self.result.success


def describe_error(exc: BaseException) -> str:
    """The message of ``exc``, looking through exception groups to the first real error."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc).strip() or type(exc).__name__
