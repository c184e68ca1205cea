"""``serve-mcp``'s defaults, importable without the MCP SDK (the command line shows them)."""

from __future__ import annotations

from typing import Final

#: The variable that holds the HTTP bearer token, unless ``--token-env`` names another.
ENV_TOKEN: Final = "ACTI_STORE_MCP_TOKEN"
#: Where the HTTP server answers: the SDK's streamable-HTTP path.
PATH: Final = "/mcp"
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
