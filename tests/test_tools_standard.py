"""LangChain's standard tool tests for each of the ten tools, and what the model sees of them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from acti_store import SqlAgentRepository
from acti_store.testing import ScriptedChatModel
from acti_store.tools import ASYNC_TOOLS, BUILDER_TOOLS, make_builder_tools

#: The contract's BUILDER_TOOLS order, each tool's parameters in its signature's order, and
#: which of them are required.
CONTRACT: dict[str, tuple[list[str], list[str]]] = {
    "create_agent_config": (
        ["name", "description", "system_prompt", "tools", "model", "stratum", "tags"],
        ["name", "description", "system_prompt"],
    ),
    "get_agent_config": (["name"], ["name"]),
    "update_agent_config": (
        ["name", "description", "system_prompt", "tools", "model", "stratum", "tags"],
        ["name"],
    ),
    "delete_agent_config": (["name", "confirm", "delete_history"], ["name"]),
    "clone_agent_config": (
        ["source_name", "new_name", "description", "tags"],
        ["source_name", "new_name"],
    ),
    "list_available_tools": ([], []),
    "list_created_agents": ([], []),
    "search_agents": (
        [
            "query",
            "stratum",
            "tools",
            "tags",
            "created_after",
            "created_before",
            "min_executions",
            "sort_by",
            "limit",
        ],
        [],
    ),
    "execute_created_agent": (
        ["agent_name", "task", "timeout", "skip_unavailable_tools"],
        ["agent_name", "task"],
    ),
    "get_agent_history": (["name", "limit", "include_errors_only"], ["name"]),
}

#: The contract's defaults of the optional parameters.
DEFAULTS: dict[str, Any] = {
    "tools": None,
    "model": "anthropic:claude-opus-4-5-20251101",
    "stratum": None,
    "tags": None,
    "confirm": False,
    "delete_history": True,
    "query": None,
    "created_after": None,
    "created_before": None,
    "min_executions": None,
    "sort_by": "name",
    "limit": 20,
    "timeout": None,
    "skip_unavailable_tools": True,
    "include_errors_only": False,
}
UPDATE_DEFAULTS = {"description": None, "system_prompt": None, "model": None}
HISTORY_DEFAULTS = {"limit": 10}


#: An example call of each tool, on the store ``_BoundTool`` prepares.
EXAMPLES: dict[str, dict[str, Any]] = {
    "create_agent_config": {
        "name": "research_assistant",
        "description": "Researches topics and gathers facts from the web",
        "system_prompt": "You are a research assistant. Search, verify and summarise facts.",
        "tools": ["websearch"],
        "stratum": "RTI",
    },
    "get_agent_config": {"name": "lead_qualifier"},
    "update_agent_config": {"name": "lead_qualifier", "tags": ["sales", "production"]},
    "delete_agent_config": {"name": "lead_qualifier"},
    "clone_agent_config": {"source_name": "lead_qualifier", "new_name": "lead_qualifier_v2"},
    "list_available_tools": {},
    "list_created_agents": {},
    "search_agents": {"query": "lead", "tools": ["crm"], "sort_by": "created_at", "limit": 5},
    "execute_created_agent": {"agent_name": "plain_agent", "task": "Say hello", "timeout": 30.0},
    "get_agent_history": {"name": "lead_qualifier", "limit": 5, "include_errors_only": False},
}


class _BoundTool:
    """Runs a standard suite once per builder tool, on a fresh store holding two agents."""

    @pytest.fixture(autouse=True, params=list(EXAMPLES))
    def _tool_on_store(self, request: pytest.FixtureRequest, repo: SqlAgentRepository) -> None:
        repo.create(make_config())
        repo.create(make_config("plain_agent", tools=[], stratum=None))
        model = ScriptedChatModel(script=[AIMessage("Hello!")], loop=True)
        self._name: str = request.param
        self._tool = {t.name: t for t in make_builder_tools(repo, model=model)}[self._name]

    @property
    def tool_constructor(self) -> BaseTool:
        return self._tool

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return EXAMPLES[self._name]


class TestBuilderToolsUnit(_BoundTool, ToolsUnitTests):
    pass


class TestBuilderToolsIntegration(_BoundTool, ToolsIntegrationTests):
    pass


# --------------------------------------------------------------------------------------------------
# What the model sees
# --------------------------------------------------------------------------------------------------


def test_builder_tools_in_the_contract_order() -> None:
    assert [t.name for t in BUILDER_TOOLS] == list(CONTRACT)
    assert list(ASYNC_TOOLS) == [
        "create_agent_config",
        "get_agent_config",
        "update_agent_config",
        "delete_agent_config",
        "clone_agent_config",
        "list_created_agents",
        "search_agents",
        "execute_created_agent",
        "get_agent_history",
    ]


@pytest.mark.parametrize("tool", BUILDER_TOOLS, ids=lambda t: t.name)
def test_openai_schema_is_clean(tool: BaseTool) -> None:
    schema = convert_to_openai_tool(tool)
    function = schema["function"]
    parameters = function["parameters"]
    names, required = CONTRACT[tool.name]
    assert function["name"] == tool.name
    assert len(function["description"]) > 200  # the model learns the tool from it
    assert list(parameters.get("properties", {})) == names
    assert sorted(parameters.get("required", [])) == sorted(required)
    assert "self" not in parameters.get("properties", {})
    assert "title" not in json.dumps(parameters)
    for name, prop in parameters.get("properties", {}).items():
        assert len(prop["description"]) > 15, name
        assert "type" in prop or "anyOf" in prop, name  # never an untyped argument
        if name not in required:
            defaults = (
                DEFAULTS
                | (UPDATE_DEFAULTS if tool.name == "update_agent_config" else {})
                | (HISTORY_DEFAULTS if tool.name == "get_agent_history" else {})
                | ({"description": None} if tool.name == "clone_agent_config" else {})
            )
            assert prop["default"] == defaults[name], name


def test_schema_shows_the_models_choices() -> None:
    create = convert_to_openai_tool(BUILDER_TOOLS[0])["function"]["parameters"]["properties"]
    assert create["name"]["pattern"] == "^[a-z][a-z0-9_]*$"
    assert create["name"]["maxLength"] == 64
    assert create["description"]["minLength"] == 10
    assert create["tools"]["anyOf"][0]["items"]["enum"] == [
        "voice",
        "websearch",
        "calendar",
        "communication",
        "crm",
    ]
    assert create["stratum"]["anyOf"][0]["enum"] == ["RTI", "RAI", "ZACS", "EEI", "IGE"]
    search = convert_to_openai_tool(BUILDER_TOOLS[7])["function"]["parameters"]["properties"]
    assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 100)
    assert search["sort_by"]["enum"] == ["name", "created_at", "updated_at", "execution_count"]
    history = convert_to_openai_tool(BUILDER_TOOLS[9])["function"]["parameters"]["properties"]
    assert (history["limit"]["minimum"], history["limit"]["maximum"]) == (1, 50)
