"""What the run tests share: the test MCP servers over stdio, a catalog of them, sentinel
credentials as the only ones set, and the process ids the servers note when they start."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import Agent, SqlAgentRepository
from acti_store.execution import (
    DEFAULT_CATEGORIES,
    ENV_CONFIG,
    MODEL_API_KEYS,
    CategorySpec,
    McpCatalog,
)

SERVERS = Path(__file__).parent / "mcp_servers"


def stdio(script: str, *args: str) -> dict[str, object]:
    """A test server of ``tests/mcp_servers``, started with this interpreter."""
    return {"transport": "stdio", "command": sys.executable, "args": [str(SERVERS / script), *args]}


def only_credentials(monkeypatch: pytest.MonkeyPatch, crm: str, google: str) -> None:
    """Unset every credential, model key and catalog file a run reads; set the CRM's and the
    calendar's to the sentinel values ``crm`` and ``google``."""
    names = {n for spec in DEFAULT_CATEGORIES.values() for n in spec.env}
    names |= {n for keys in MODEL_API_KEYS.values() for n in keys} | {ENV_CONFIG}
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PRIVATE_APP_ACCESS_TOKEN", crm)
    monkeypatch.setenv("GOOGLE_OAUTH_CREDENTIALS", google)


def server_catalog(starts: Path) -> McpCatalog:
    """A CRM and a calendar that need their credential and note each start (one pid a line in
    ``starts``), a server that exits at startup, one that never answers, and one that needs a
    key no test sets."""
    return McpCatalog(
        {
            "crm": CategorySpec(
                "HubSpot",
                stdio("crm_server.py", "--starts", str(starts)),
                env=("PRIVATE_APP_ACCESS_TOKEN",),
            ),
            "calendar": CategorySpec(
                "Google Calendar",
                stdio("calendar_server.py", "--starts", str(starts)),
                env=("GOOGLE_OAUTH_CREDENTIALS",),
            ),
            "communication": CategorySpec("Twilio", stdio("failing_server.py")),
            "websearch": CategorySpec("Tavily", stdio("hanging_server.py")),
            "voice": CategorySpec(
                "ElevenLabs", stdio("crm_server.py"), env=("ELEVENLABS_API_KEY",)
            ),
        }
    )


def make_agent(
    repo: SqlAgentRepository, tools: Sequence[str], name: str = "lead_qualifier"
) -> Agent:
    repo.create(make_config(name, tools=list(tools)))
    return repo.get(name)


def started_pids(starts: Path) -> list[int]:
    return [int(line) for line in starts.read_text().split()] if starts.exists() else []
