"""A HubSpot-like CRM MCP server for tests. Needs PRIVATE_APP_ACCESS_TOKEN."""

from __future__ import annotations

import os

import anyio
from _common import credential_names, start
from mcp.server.fastmcp import FastMCP

server = FastMCP("crm", log_level="WARNING")


@server.tool()
def crm_lookup_contact(company: str) -> str:
    """Find the main contact of a company."""
    if company == "Acme Corp":
        return "Found: John Smith, VP Sales (contact_id 12345)"
    return f"No contact found for {company}"


@server.tool()
def crm_get_deal_history(contact_id: str) -> str:
    """List the past deals of a contact."""
    return "No previous deals"


@server.tool()
def crm_account_status() -> str:
    """Check the CRM account (fails, quoting its token like a careless server would)."""
    raise RuntimeError(f"token {os.environ['PRIVATE_APP_ACCESS_TOKEN']} was rejected")


@server.tool()
async def crm_slow_report(seconds: float) -> str:
    """Build a report that takes ``seconds`` to compute."""
    await anyio.sleep(seconds)
    return "report ready"


@server.tool()
def crm_credentials_seen() -> str:
    """The credential variables this server process can see."""
    return credential_names()


if __name__ == "__main__":
    start("PRIVATE_APP_ACCESS_TOKEN")
    server.run()
