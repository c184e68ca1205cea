"""``serve-mcp`` as strict MCP clients see it, through the official Python client: schemas with no
union type arrays, lists sent as JSON text, ``logging/setLevel`` and ``completion/complete``."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import make_config
from jsonschema import Draft202012Validator
from mcp import types
from mcp_harness import TRANSPORTS, acti_store, served

from acti_store import SqlAgentRepository, open_repository
from acti_store.models import STRATA

# each test starts serve-mcp in a process,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

AGENT_TEMPLATE = types.ResourceTemplateReference(type="ref/resource", uri="acti://agents/{name}")
HISTORY_TEMPLATE = types.ResourceTemplateReference(
    type="ref/resource", uri="acti://agents/{name}/history"
)
PROMPT = types.PromptReference(type="ref/prompt", name="build_agent")


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stored(store_url: str) -> Iterator[SqlAgentRepository]:
    repo = open_repository(store_url, export_dir="")
    try:
        yield repo
    finally:
        repo.close()


def serve(store_url: str) -> list[str]:
    return acti_store("serve-mcp", "--url", store_url)


def type_arrays(schema: Any, path: str = "#") -> list[str]:
    """Where ``schema`` has a ``"type"`` that is a list (a union Ajv's strict mode warns about)."""
    found: list[str] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(path)
        for key, value in schema.items():
            found += type_arrays(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += type_arrays(value, f"{path}/{index}")
    return found


async def test_schemas_pass_strict_validation(
    store_url: str, stored: SqlAgentRepository, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stored.create(make_config())
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        async with served("stdio", serve(store_url), tmp_path / "server.log") as server:
            tools = (await server.session.list_tools()).tools
            results = [
                await server.session.call_tool("get_agent_config", {"name": "lead_qualifier"}),
                await server.session.call_tool("get_agent_config", {"name": "ghost_agent"}),
                await server.session.call_tool("search_agents", {"query": "lead"}),
                await server.session.call_tool("list_created_agents", {}),
                await server.session.call_tool("get_agent_history", {"name": "lead_qualifier"}),
            ]

    assert len(tools) == 10
    for tool in tools:
        assert tool.outputSchema is not None
        assert type_arrays(tool.outputSchema) == [], tool.name
        assert type_arrays(tool.inputSchema) == [], tool.name
        Draft202012Validator.check_schema(tool.outputSchema)
        Draft202012Validator.check_schema(tool.inputSchema)
    assert [r.isError for r in results] == [False, True, False, False, False]
    output = {t.name: t.outputSchema for t in tools}
    for name, result in zip(
        ("get_agent_config", "get_agent_config", "search_agents"), results, strict=False
    ):
        Draft202012Validator(output[name]).validate(result.structuredContent)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("mcp")] == []
    assert [str(w.message) for w in warned if "mcp" in str(w.filename)] == []


async def test_lists_may_be_json_text(
    transport: str, store_url: str, stored: SqlAgentRepository, tmp_path: Path
) -> None:
    arguments = {
        **make_config().model_dump(),
        "tools": '["crm", "communication"]',
        "tags": '["sales", "qualification"]',
    }
    async with served(transport, serve(store_url), tmp_path / "server.log") as server:
        created = await server.session.call_tool("create_agent_config", arguments)
        found = await server.session.call_tool("search_agents", {"tags": '["sales"]'})
        refused = await server.session.call_tool(
            "update_agent_config", {"name": "lead_qualifier", "tools": '["crm"'}
        )

    assert not created.isError and created.structuredContent is not None
    assert created.structuredContent["agent"]["tools"] == ["crm", "communication"]
    assert stored.get("lead_qualifier").tags == ["sales", "qualification"]
    assert found.structuredContent is not None
    assert found.structuredContent["names"] == ["lead_qualifier"]
    assert refused.isError


async def test_logging_set_level(transport: str, store_url: str, tmp_path: Path) -> None:
    async with served(transport, serve(store_url), tmp_path / "server.log") as server:
        capabilities = server.session.get_server_capabilities()
        for level in ("debug", "warning", "error"):
            assert isinstance(await server.session.set_logging_level(level), types.EmptyResult)
        assert (await server.session.list_tools()).tools  # the session goes on

    assert capabilities is not None and capabilities.logging is not None


async def test_completion_of_agent_names_and_strata(
    transport: str, store_url: str, stored: SqlAgentRepository, tmp_path: Path
) -> None:
    for name in ("lead_qualifier", "lead_router", "leads_digest", "invoice_chaser"):
        stored.create(make_config(name, description=f"Agent {name}: leads and more"))
    async with served(transport, serve(store_url), tmp_path / "server.log") as server:
        session = server.session
        capabilities = session.get_server_capabilities()
        lead = (
            await session.complete(AGENT_TEMPLATE, {"name": "name", "value": "lead_"})
        ).completion
        leads = (
            await session.complete(HISTORY_TEMPLATE, {"name": "name", "value": "lead"})
        ).completion
        every = (await session.complete(AGENT_TEMPLATE, {"name": "name", "value": ""})).completion
        none = (
            await session.complete(AGENT_TEMPLATE, {"name": "name", "value": "Lead"})
        ).completion
        strata = (await session.complete(PROMPT, {"name": "stratum", "value": "r"})).completion
        goal = (await session.complete(PROMPT, {"name": "goal", "value": "a"})).completion

    assert capabilities is not None and capabilities.completions is not None
    assert lead.values == ["lead_qualifier", "lead_router"] and lead.hasMore is False
    assert leads.values == ["lead_qualifier", "lead_router", "leads_digest"]
    assert every.values == ["invoice_chaser", "lead_qualifier", "lead_router", "leads_digest"]
    assert every.total == 4
    assert none.values == []
    assert strata.values == [s for s in STRATA if s.startswith("R")]
    assert goal.values == []


async def test_completion_is_bounded(
    store_url: str, stored: SqlAgentRepository, tmp_path: Path
) -> None:
    for index in range(130):
        stored.create(make_config(f"agent_{index:03d}"))
    async with served("stdio", serve(store_url), tmp_path / "server.log") as server:
        typed = (
            await server.session.complete(AGENT_TEMPLATE, {"name": "name", "value": "agent_"})
        ).completion
        first = (
            await server.session.complete(AGENT_TEMPLATE, {"name": "name", "value": ""})
        ).completion

    assert typed.values == [f"agent_{index:03d}" for index in range(100)]
    assert typed.hasMore is True
    assert len(first.values) == 100 and first.total == 130 and first.hasMore is True
