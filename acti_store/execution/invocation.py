"""The deep agent's run: its servers' tools behind the gate, the graph built and invoked within
what is left of the timeout, and how it ended (success, timeout or execution error)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from . import texts
from .background import compute
from .gate import ToolGate
from .outcome import Outcome, RunState
from .results import (
    EXECUTION_ERROR,
    EXECUTION_ERROR_NAME,
    EXECUTION_TIMEOUT,
    TIMEOUT,
    describe_error,
)

# The run's log lines keep the runner's name (where logging setups look for them).
logger = logging.getLogger("acti_store.execution.runner")

#: How the graph is built: ``deepagents.create_deep_agent``'s keyword arguments, the graph back.
GraphBuilder = Callable[..., CompiledStateGraph[Any, Any, Any, Any]]


def offered(
    tools_by_category: Mapping[str, Sequence[BaseTool]],
) -> tuple[list[BaseTool], dict[str, str]]:
    """The tools the agent is given (one per name: the first category's) and each one's
    category, for the gate."""
    tools: list[BaseTool] = []
    categories: dict[str, str] = {}
    for category, server_tools in tools_by_category.items():
        for tool in server_tools:
            if tool.name in categories:
                logger.warning(
                    "tool %r of %r is also offered by %r: the first one is kept",
                    tool.name,
                    category,
                    categories[tool.name],
                )
                continue
            categories[tool.name] = category
            tools.append(tool)
    return tools, categories


async def execute(
    state: RunState,
    model: BaseChatModel,
    tools_by_category: Mapping[str, Sequence[BaseTool]],
    calls: texts.RunCalls,
    build: GraphBuilder,
) -> Outcome:
    """Build the deep agent with ``build`` (in a worker thread: it compiles the graph), give it
    the task, and return how it ended; the build and the run share what is left of the timeout."""
    tools, categories = offered(tools_by_category)
    gate = ToolGate(state.agent.name, categories, state.scrub)
    degraded = bool(state.unavailable)
    remaining = max(state.timeout - state.elapsed, 0.0)
    deadline = asyncio.timeout(remaining)
    try:
        async with deadline:
            graph: CompiledStateGraph[Any, Any, Any, Any] = await compute(
                build,
                model=model,
                tools=tools,
                system_prompt=state.agent.system_prompt,
                middleware=[gate],
            )
            final = await graph.ainvoke({"messages": [HumanMessage(state.task)]})
    except TimeoutError as exc:
        if not deadline.expired():
            return execution_error(state, gate, exc, calls)
        result = state.result(
            success=False,
            tool_calls=gate.calls,
            tools_used=gate.used,
            degraded_mode=degraded,
            error=f"Agent execution timed out after {state.timeout:.1f} seconds",
            error_type=TIMEOUT,
        )
        return Outcome(
            result,
            lambda r: texts.render_timeout(r, state.timeout, calls),
            error_name=EXECUTION_TIMEOUT,
        )
    except Exception as exc:
        return execution_error(state, gate, exc, calls)
    messages = final.get("messages", [])
    last = messages[-1] if messages else None
    result = state.result(
        success=True,
        response=last.text if isinstance(last, AIMessage) else "",
        tool_calls=gate.calls,
        tools_used=gate.used,
        degraded_mode=degraded,
    )
    requested, unavailable, providers = list(state.agent.tools), state.unavailable, state.providers
    return Outcome(
        result,
        lambda r: texts.render_success(
            r, requested=requested, unavailable=unavailable, providers=providers
        ),
    )


def execution_error(
    state: RunState, gate: ToolGate, exc: BaseException, calls: texts.RunCalls
) -> Outcome:
    """The report of a run the agent's graph ended with ``exc`` (not its timeout)."""
    result = state.result(
        success=False,
        tool_calls=gate.calls,
        tools_used=gate.used,
        degraded_mode=bool(state.unavailable),
        error=describe_error(exc),
        error_type=EXECUTION_ERROR,
    )
    return Outcome(
        result,
        lambda r: texts.render_execution_error(r, calls),
        error_name=EXECUTION_ERROR_NAME,
    )
