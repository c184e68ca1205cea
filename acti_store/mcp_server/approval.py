"""A call a person must approve asks them through MCP elicitation, when the client can ask.

Which calls need approval, and the question, are the builder agent's (``tools.agent.APPROVALS``:
a confirmed ``delete_agent_config``). When the client declares the elicitation capability, such a
call first runs as its dry run (``confirm=false``) when its tool has one: a call the tool would
refuse (an unknown agent, a wrong argument) is refused at once, without asking. Otherwise the
person is asked; accept lets the call go on, decline or cancel (or a client that fails to ask)
ends it with a refusal that says nothing was changed. A client without elicitation keeps the
contract's two steps: the model's dry run, then its confirmed call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp import types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError

from ..tools.agent import APPROVALS, VERSION_APPROVALS
from ..tools.outcomes import Result, error
from . import texts
from .tools import ServedTool

#: The answer asked for: none but the person's choice (accept, decline or cancel).
_NO_FIELDS: Final[dict[str, Any]] = {"type": "object", "properties": {}}
_ELICITATION: Final = types.ClientCapabilities(elicitation=types.ElicitationCapability())


def can_ask(session: ServerSession) -> bool:
    """Whether the client declared the elicitation capability."""
    return session.check_client_capability(_ELICITATION)


async def refusal(
    session: ServerSession,
    request_id: types.RequestId,
    tool: ServedTool,
    arguments: Mapping[str, Any],
) -> Result | None:
    """None when the call may go on; else the result that ends it without changing anything."""
    approval = APPROVALS.get(tool.name) or VERSION_APPROVALS.get(tool.name)
    if approval is None or not approval.needed(arguments) or not can_ask(session):
        return None
    if approval.dry_run:  # a call the tool would refuse is refused without asking
        preview = await tool.call({**arguments, "confirm": False})
        if preview[1].get("status") == "error":
            return preview
    try:
        answer = await session.elicit_form(
            approval.question(arguments), _NO_FIELDS, related_request_id=request_id
        )
    except McpError:  # the client could not ask: as if the person had not answered
        answer = None
    if answer is not None and answer.action == "accept":
        return None
    if answer is not None and answer.action == "decline":
        return error(texts.DECLINED.format(tool=tool.name), "declined", tool=tool.name)
    return error(texts.CANCELLED.format(tool=tool.name), "cancelled", tool=tool.name)
