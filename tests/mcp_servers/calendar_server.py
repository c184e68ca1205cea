"""A Google-Calendar-like MCP server for tests. Needs GOOGLE_OAUTH_CREDENTIALS."""

from __future__ import annotations

from _common import credential_names, start
from mcp.server.fastmcp import FastMCP

server = FastMCP("calendar", log_level="WARNING")


@server.tool()
def calendar_check_availability(day: str) -> str:
    """Free slots on ``day``."""
    return f"{day}: free 10:00-12:00 and 14:00-15:00"


@server.tool()
def calendar_credentials_seen() -> str:
    """The credential variables this server process can see."""
    return credential_names()


if __name__ == "__main__":
    start("GOOGLE_OAUTH_CREDENTIALS")
    server.run()
