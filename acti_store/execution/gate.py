"""The tool gate: only the agent's tools run, every call is traced for the report, and secret
values are scrubbed from what tools return before the model sees it."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from . import texts
from .redaction import Scrubber
from .results import ToolCallRecord, describe_error

logger = logging.getLogger(__name__)

#: How much of a tool's result the structured trace keeps.
TOOL_RESULT_MAX: Final = 2000


def _tool_message(outcome: ToolMessage | Command[Any]) -> ToolMessage | None:
    if isinstance(outcome, ToolMessage):
        return outcome
    update = outcome.update if isinstance(outcome.update, dict) else {}
    messages = [m for m in update.get("messages", []) if isinstance(m, ToolMessage)]
    return messages[-1] if messages else None


class ToolGate(AgentMiddleware[Any, Any, Any]):
    """Refuses calls to tools the agent was not given, and records every call for the trace.

    Tool errors become error results the model can react to (never a crash of the run), and known
    secret values are scrubbed from what tools return before the model sees it.
    """

    def __init__(self, agent_name: str, categories: Mapping[str, str], scrub: Scrubber) -> None:
        super().__init__()
        self._agent_name = agent_name
        self._categories = categories
        self._scrub = scrub
        self.calls: list[ToolCallRecord] = []
        self.used: list[str] = []

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        call = request.tool_call
        name = call["name"]
        record = ToolCallRecord(tool_name=name, arguments=self._scrub.value(dict(call["args"])))
        self.calls.append(record)
        if request.tool is None:
            enabled = ", ".join(sorted(self._categories)) or "none"
            logger.warning(
                "refused call to tool %r: not enabled for agent %r (enabled: %s)",
                self._scrub(name),
                self._agent_name,
                enabled,
            )
            record.error = texts.TOOL_NOT_ENABLED.format(
                tool=name, name=self._agent_name, enabled=enabled
            )
            return ToolMessage(record.error, name=name, tool_call_id=call["id"], status="error")
        category = self._categories.get(name)
        if category is not None and category not in self.used:
            self.used.append(category)
        started = time.perf_counter()
        try:
            outcome = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            record.duration_ms = (time.perf_counter() - started) * 1000
            record.error = self._scrub(describe_error(exc))
            return ToolMessage(
                texts.TOOL_FAILED.format(tool=name, error=record.error),
                name=name,
                tool_call_id=call["id"],
                status="error",
            )
        record.duration_ms = (time.perf_counter() - started) * 1000
        message = _tool_message(outcome)
        if message is None:
            return outcome
        text = self._scrub(message.text)[:TOOL_RESULT_MAX]
        if message.status == "error":
            record.error = text
        else:
            record.result = text
        if isinstance(outcome, ToolMessage):
            return outcome.model_copy(update={"content": self._scrub.value(outcome.content)})
        return outcome
