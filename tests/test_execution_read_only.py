"""A store opened read-only cannot record a run, so a run is refused before it starts (issue 25):
no model call, no tool call, the same read-only error every other write gets, on both engines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage

from acti_store import ReadOnlyStoreError, SqlAgentRepository, open_repository
from acti_store.execution import AgentRunner, McpCatalog
from acti_store.testing import ScriptedChatModel
from acti_store.tools.builder import BuilderTools

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head


@pytest.fixture
def reader(store_url: str) -> Iterator[SqlAgentRepository]:
    """A store holding ``lead_qualifier`` (no tools), opened again read-only."""
    writer = open_repository(store_url)
    writer.create(make_config("lead_qualifier", tools=[]))
    writer.close()
    repo = open_repository(store_url, read_only=True)
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture
def model() -> ScriptedChatModel:
    """A model that would answer once, and notes every call it gets."""
    return ScriptedChatModel(script=[AIMessage("Lead qualified")])


def write_refusal(reader: SqlAgentRepository) -> str:
    """What a write on ``reader`` raises: the text a run must be refused with."""
    with pytest.raises(ReadOnlyStoreError) as caught:
        reader.update("lead_qualifier", {"description": "Changed on a read-only store"})
    return str(caught.value)


def assert_nothing_ran(reader: SqlAgentRepository, model: ScriptedChatModel) -> None:
    assert model.calls == [] and model.remaining == 1
    assert reader.get("lead_qualifier").metadata.execution_count == 0
    assert reader.get_history("lead_qualifier").executions == []


@pytest.mark.parametrize("agent", ["by name", "as loaded"])
def test_run_sync_on_a_read_only_store_is_refused_before_the_model_is_called(
    reader: SqlAgentRepository, model: ScriptedChatModel, agent: str
) -> None:
    runner = AgentRunner(reader, model=model, catalog=McpCatalog({}))
    which = "lead_qualifier" if agent == "by name" else reader.get("lead_qualifier")
    with pytest.raises(ReadOnlyStoreError) as caught:
        runner.run_sync(which, "Qualify John from Acme")
    assert str(caught.value) == write_refusal(reader)
    assert caught.value.transient is False
    assert_nothing_ran(reader, model)


async def test_run_on_a_read_only_store_is_refused_before_the_model_is_called(
    reader: SqlAgentRepository, model: ScriptedChatModel
) -> None:
    runner = AgentRunner(reader, model=model, catalog=McpCatalog({}))
    with pytest.raises(ReadOnlyStoreError, match="is open read-only"):
        await runner.run(reader.get("lead_qualifier"), "Qualify John from Acme", version=1)
    with pytest.raises(ReadOnlyStoreError, match="is open read-only"):
        await runner.run(reader.get("lead_qualifier"), "Qualify John from Acme")
    assert_nothing_ran(reader, model)


def test_execute_created_agent_answers_with_the_read_only_store_error(
    reader: SqlAgentRepository, model: ScriptedChatModel
) -> None:
    tools = BuilderTools(lambda: reader, model=model, mcp_catalog=McpCatalog({}))
    text, artifact = tools.execute_created_agent(
        agent_name="lead_qualifier", task="Qualify John from Acme"
    )
    written, _ = tools.update_agent_config(name="lead_qualifier", description="Changed here")
    assert text == written  # the text every other write on a read-only store gets
    assert text.startswith("ERROR: The agent store could not complete the request.")
    assert "is open read-only" in text and "Trying again will not help" in text
    assert artifact["status"] == "error" and artifact["error"] == "store_error"
    assert artifact["transient"] is False
    assert_nothing_ran(reader, model)


async def test_the_async_tool_answers_with_the_read_only_store_error(
    reader: SqlAgentRepository, model: ScriptedChatModel
) -> None:
    tools = BuilderTools(lambda: reader, model=model, mcp_catalog=McpCatalog({}))
    text, artifact = await tools.aexecute_created_agent(
        agent_name="lead_qualifier", task="Qualify John from Acme"
    )
    assert "is open read-only" in text and artifact["error"] == "store_error"
    assert_nothing_ran(reader, model)


def test_a_store_that_can_be_written_still_runs(store_url: str, model: ScriptedChatModel) -> None:
    repo = open_repository(store_url)
    try:
        repo.create(make_config("lead_qualifier", tools=[]))
        report = AgentRunner(repo, model=model, catalog=McpCatalog({})).run_sync(
            "lead_qualifier", "Qualify John from Acme"
        )
        assert report.success and len(model.calls) == 1
        assert repo.get("lead_qualifier").metadata.execution_count == 1
    finally:
        repo.close()
