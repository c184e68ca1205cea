"""The builder agent (deepagents) driven by a scripted chat model, on a real store: human approval
of deletions (approve / reject, resumed from a checkpoint) and a whole build session."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from acti_store import SqlAgentRepository
from acti_store.testing import ScriptedChatModel, calls, tool_call
from acti_store.tools import BUILDER_SYSTEM_PROMPT, BUILDER_TOOLS, create_builder_agent
from acti_store.tools.defaults import default_repository

THREAD = {"configurable": {"thread_id": "session-1"}}
PROMPT = make_config().system_prompt


def ask(agent: Any, request: str | Command[Any]) -> dict[str, Any]:
    """One turn: a user message (or a resume command) in, the graph's state out."""
    payload = request if isinstance(request, Command) else {"messages": [HumanMessage(request)]}
    result: dict[str, Any] = agent.invoke(payload, THREAD)
    return result


def tool_results(messages: Sequence[BaseMessage], name: str) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


def pending(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls waiting for a person's decision."""
    return [r for i in state.get("__interrupt__", ()) for r in i.value["action_requests"]]


def approve() -> Command[Any]:
    return Command(resume={"decisions": [{"type": "approve"}]})


def reject(reason: str) -> Command[Any]:
    return Command(resume={"decisions": [{"type": "reject", "message": reason}]})


def deleting(confirm: bool) -> AIMessage:
    return calls(tool_call("delete_agent_config", name="lead_qualifier", confirm=confirm))


# --------------------------------------------------------------------------------------------------
# Approval of deletions
# --------------------------------------------------------------------------------------------------


def test_confirmed_delete_waits_for_approval(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    model = ScriptedChatModel(script=[deleting(False), deleting(True), AIMessage("Deleted.")])
    agent = create_builder_agent(model, repo, checkpointer=InMemorySaver())

    state = ask(agent, "Delete lead_qualifier")
    # The dry run needs no approval; the real deletion waits for a person.
    (dry_run,) = tool_results(state["messages"], "delete_agent_config")
    assert dry_run.content.startswith("WARNING: This will permanently delete agent")
    assert pending(state) == [
        {
            "name": "delete_agent_config",
            "args": {"name": "lead_qualifier", "confirm": True},
            "description": "Permanently delete agent 'lead_qualifier' and its execution "
            "history. Approve or reject.",
        }
    ]
    assert repo.exists("lead_qualifier")

    state = ask(agent, approve())
    deleted = tool_results(state["messages"], "delete_agent_config")[-1]
    assert deleted.content.startswith("SUCCESS: Agent 'lead_qualifier' has been permanently")
    assert deleted.artifact["deleted"] is True
    assert state["messages"][-1].content == "Deleted."
    assert not repo.exists("lead_qualifier")


def test_rejected_delete_keeps_the_agent(repo: SqlAgentRepository) -> None:
    repo.create(make_config())
    model = ScriptedChatModel(script=[deleting(True), AIMessage("I kept it.")])
    agent = create_builder_agent(model, repo, checkpointer=InMemorySaver())

    assert [r["name"] for r in pending(ask(agent, "Delete lead_qualifier"))] == [
        "delete_agent_config"
    ]
    state = ask(agent, reject("We still need this agent."))
    (answer,) = tool_results(state["messages"], "delete_agent_config")
    assert answer.status == "error"
    assert "We still need this agent." in answer.content
    assert state["messages"][-1].content == "I kept it."
    assert repo.get("lead_qualifier").metadata.version == 1


def test_approval_is_configurable(repo: SqlAgentRepository) -> None:
    config = make_config()
    creating = calls(
        tool_call(
            "create_agent_config",
            name=config.name,
            description=config.description,
            system_prompt=config.system_prompt,
        )
    )
    model = ScriptedChatModel(script=[creating, deleting(True), AIMessage("Done.")])
    agent = create_builder_agent(
        model,
        repo,
        interrupt_on={"create_agent_config": True, "delete_agent_config": False},
        checkpointer=InMemorySaver(),
    )
    state = ask(agent, "Create lead_qualifier, then delete it")
    assert [r["name"] for r in pending(state)] == ["create_agent_config"]
    assert not repo.exists("lead_qualifier")
    state = ask(agent, approve())  # created; the delete then runs without asking
    assert pending(state) == []
    assert tool_results(state["messages"], "create_agent_config")[0].artifact["status"] == "success"
    assert state["messages"][-1].content == "Done."
    assert not repo.exists("lead_qualifier")


# --------------------------------------------------------------------------------------------------
# A whole session: create -> search -> update -> clone -> delete
# --------------------------------------------------------------------------------------------------

SESSION = [
    calls(tool_call("list_available_tools"), tool_call("list_created_agents")),
    calls(
        tool_call(
            "create_agent_config",
            name="Lead Qualifier",
            description="Leads",
            system_prompt="Qualify.",
            tools=["crm", "fax"],
        )
    ),
    calls(
        tool_call(
            "create_agent_config",
            name="lead_qualifier",
            description="Qualifies inbound leads by assessing BANT criteria",
            system_prompt=PROMPT,
            tools=["communication", "crm"],
            stratum="RAI",
            tags=["sales"],
        ),
        tool_call(
            "create_agent_config",
            name="web_researcher",
            description="Researches topics using web search and provides summaries",
            system_prompt=PROMPT,
            tools=["websearch"],
            stratum="RTI",
        ),
    ),
    calls(tool_call("search_agents", query="lead", stratum="RAI", tools=["crm"])),
    calls(
        tool_call(
            "update_agent_config",
            name="lead_qualifier",
            description="Enhanced lead qualification with MEDDIC framework",
            tags=["sales", "meddic", "production"],
        )
    ),
    calls(tool_call("clone_agent_config", source_name="lead_qualifier", new_name="lead_nurturer")),
    calls(tool_call("get_agent_history", name="lead_nurturer")),
    calls(tool_call("delete_agent_config", name="web_researcher")),
    calls(tool_call("delete_agent_config", name="web_researcher", confirm=True)),
    AIMessage("lead_qualifier (v2) and its clone lead_nurturer are ready; web_researcher is gone."),
]


def test_a_build_session(repo: SqlAgentRepository) -> None:
    model = ScriptedChatModel(script=SESSION)
    agent = create_builder_agent(model, repo, checkpointer=InMemorySaver())

    state = ask(agent, "Build me a lead qualifier and a copy of it; drop the researcher.")
    assert [r["args"] for r in pending(state)] == [{"name": "web_researcher", "confirm": True}]
    state = ask(agent, approve())
    messages = state["messages"]

    first, second, third = tool_results(messages, "create_agent_config")
    assert first.content.startswith("ERROR: Agent configuration validation failed.")
    assert first.artifact["status"] == "error"
    assert [e["field"] for e in first.artifact["errors"]] == [
        "name",
        "description",
        "system_prompt",
        "tools",
    ]
    assert second.artifact["status"] == third.artifact["status"] == "success"
    (search,) = tool_results(messages, "search_agents")
    assert search.artifact["names"] == ["lead_qualifier"]
    (update,) = tool_results(messages, "update_agent_config")
    assert update.content.startswith("SUCCESS: Agent 'lead_qualifier' updated (v1 -> v2).")
    (history,) = tool_results(messages, "get_agent_history")
    assert "No execution history found." in history.content
    assert messages[-1].content.startswith("lead_qualifier (v2) and its clone")

    assert repo.list_names() == ["lead_nurturer", "lead_qualifier"]
    lead = repo.get("lead_qualifier")
    assert (lead.metadata.version, lead.tags) == (2, ["sales", "meddic", "production"])
    clone = repo.get("lead_nurturer")
    assert clone.description == "Enhanced lead qualification with MEDDIC framework (clone)"
    assert (clone.metadata.version, clone.stratum, clone.tools) == (
        1,
        "RAI",
        ["communication", "crm"],
    )

    # The model was given the builder's prompt and the ten tools.
    first_call = model.calls[0]
    assert isinstance(first_call[0], SystemMessage)
    assert BUILDER_SYSTEM_PROMPT in first_call[0].text
    assert {t.name for t in BUILDER_TOOLS} <= set(model.bound_tools)


@pytest.fixture
def default_store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    default_repository.close()
    monkeypatch.setenv("ACTI_STORE_URL", store_url)
    monkeypatch.delenv("ACTI_STORE_EXPORT_DIR", raising=False)
    yield
    default_repository.close()


@pytest.mark.usefixtures("default_store")
def test_without_a_repository_the_agent_uses_the_default_store() -> None:
    config = make_config()
    model = ScriptedChatModel(
        script=[
            calls(
                tool_call(
                    "create_agent_config",
                    name=config.name,
                    description=config.description,
                    system_prompt=config.system_prompt,
                )
            ),
            AIMessage("Created."),
        ]
    )
    state = ask(create_builder_agent(model, checkpointer=InMemorySaver()), "Create it")
    assert state["messages"][-1].content == "Created."
    assert default_repository().list_names() == ["lead_qualifier"]


def test_system_prompt_covers_the_builder_s_job() -> None:
    for needle in (
        "RTI: Reality & Truth Intelligence (data gathering)",
        "IGE: Integrity & Governance Engine (compliance)",
        "voice, websearch, calendar, communication, crm",
        "create -> test -> review",
        "execute_created_agent(",
        "confirm=True",
        'starts with "ERROR:"',
    ):
        assert needle in BUILDER_SYSTEM_PROMPT
    for tool in BUILDER_TOOLS:
        assert f"{tool.name}(" in BUILDER_SYSTEM_PROMPT
