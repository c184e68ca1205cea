"""The ``build_agent`` prompt: the builder agent's own instructions, then the goal to build for.

The instructions are the builder agent's system prompt (``tools.agent.BUILDER_SYSTEM_PROMPT``:
the strata, the tools, the create -> test -> review workflow and the rules), so that a model
driven by an MCP client works as the builder agent does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from mcp import types
from mcp.shared.exceptions import McpError
from pydantic import ValidationError

from ..tools import render
from ..tools.agent import BUILDER_SYSTEM_PROMPT
from ..tools.parameters import STRATUM
from . import texts

PROMPT: Final = types.Prompt(
    name=texts.BUILD_AGENT,
    description=texts.BUILD_AGENT_DESCRIPTION,
    arguments=[
        types.PromptArgument(name="goal", description=texts.GOAL_DESCRIPTION, required=True),
        types.PromptArgument(name="stratum", description=texts.STRATUM_DESCRIPTION, required=False),
    ],
)


def _invalid(message: str) -> McpError:
    return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=message))


def build_agent(name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    """The prompt ``name`` with ``arguments``; an unknown prompt or a wrong argument is an
    MCP error (invalid params) that says what to pass."""
    if name != texts.BUILD_AGENT:
        raise _invalid(texts.UNKNOWN_PROMPT.format(name=name))
    arguments = arguments or {}
    goal = (arguments.get("goal") or "").strip()
    if not goal:
        raise _invalid(texts.GOAL_MISSING)
    stratum = arguments.get("stratum") or None
    if stratum is None:
        stratum_line = texts.PROMPT_ANY_STRATUM
    else:
        try:
            STRATUM.validate_python(stratum)
        except ValidationError:
            raise _invalid(render.invalid_stratum(stratum)) from None
        stratum_line = texts.PROMPT_STRATUM.format(stratum=stratum)
    text = BUILDER_SYSTEM_PROMPT + texts.PROMPT_TASK.format(goal=goal, stratum=stratum_line)
    return types.GetPromptResult(
        description=texts.BUILD_AGENT_DESCRIPTION,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )
