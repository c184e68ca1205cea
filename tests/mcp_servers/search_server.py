"""A Tavily-like web search MCP server for tests. Needs TAVILY_API_KEY."""

from __future__ import annotations

from _common import credential_names, start
from mcp.server.fastmcp import FastMCP

server = FastMCP("websearch", log_level="WARNING")


@server.tool()
def web_search(query: str) -> str:
    """Search the web."""
    return f"3 results for {query!r}"


@server.tool()
def websearch_credentials_seen() -> str:
    """The credential variables this server process can see."""
    return credential_names()


if __name__ == "__main__":
    start("TAVILY_API_KEY")
    server.run()
