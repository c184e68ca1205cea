"""``acti-store serve-mcp`` with a scripted chat model: ``python scripted_acti_store.py ARGS...``.

ARGS are ``serve-mcp``'s (``--url``, ``--transport``, ...). Everything is the real command but the
model that ``execute_created_agent`` runs agents with: it calls ``crm_credentials_seen`` once,
then answers with what that call returned (an agent without the CRM gets the tool gate's refusal
there, and still succeeds).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from acti_store.cli import build_parser
from acti_store.cli.options import apply_global_options
from acti_store.cli.serve_mcp import serve
from acti_store.testing import ScriptedChatModel, calls, tool_call


def step(messages: Sequence[BaseMessage]) -> AIMessage:
    seen = [m for m in messages if isinstance(m, ToolMessage)]
    if not seen:
        return calls(tool_call("crm_credentials_seen"))
    return AIMessage(f"Credentials seen: {seen[-1].text}")


if __name__ == "__main__":
    args = build_parser().parse_args(["serve-mcp", *sys.argv[1:]])
    apply_global_options(args)
    sys.exit(serve(args, model=ScriptedChatModel(script=[step], loop=True)))
