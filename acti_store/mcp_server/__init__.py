"""``acti-store serve-mcp``: the builder's tools, the agents and a prompt for any MCP client.

Built on the official MCP Python SDK's low-level ``Server`` (``mcp.server.lowlevel``): the tools'
input schemas are the args schemas the LangChain tools show (``tools.specs.TOOL_SPECS``), and
their arguments reach ``BuilderTools`` unchecked by the SDK, so a wrong value gets the contract's
``ERROR: ...`` text, as it does through LangChain. Store work goes through the
store's async API (the tools' coroutines, ``repo.acall``), as LangChain's ``ainvoke`` does.

- ``tools``: the tools, derived from the declarations; ``content`` is the tool's text,
  ``structuredContent`` its artifact, ``isError`` true on every refusal.
- ``approval``: a call a person must approve (``tools.agent.APPROVALS``) asks through elicitation.
- ``resources``: ``acti://agents``, ``acti://agents/{name}``, ``acti://agents/{name}/history``,
  with ``list_changed``/``updated`` notifications after a write through this server and, through
  ``feed`` (the store's change feed), after any process's change: once per change.
- ``prompts``: ``build_agent``.
- ``server`` builds the server and serves it over stdio; ``http`` over streamable HTTP.

The package imports nothing itself: ``defaults`` (what the command line shows) loads without
the MCP SDK.
"""

from __future__ import annotations
