"""The MCP catalog (defaults, TOML overrides, credential isolation), the scrubber and the scripted
chat model. No servers are started here."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool

from acti_store.execution import (
    DEFAULT_CATEGORIES,
    ENV_CONFIG,
    CategorySpec,
    McpCatalog,
    McpCatalogError,
)
from acti_store.execution.runner import REDACTED, Scrubber
from acti_store.models import TOOL_CATEGORIES
from acti_store.testing import ScriptedChatModel, ScriptExhaustedError, calls, tool_call

ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/agent",
    "PRIVATE_APP_ACCESS_TOKEN": "pat-sentinel-crm",
    "TAVILY_API_KEY": "tvly-sentinel-search",
    "TWILIO_ACCOUNT_SID": "AC-sentinel",
    "TWILIO_API_KEY": "SK-sentinel",
    "TWILIO_API_SECRET": "twilio-secret-sentinel",
    "OPENAI_API_KEY": "sk-sentinel-unrelated",
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------
# Defaults
# --------------------------------------------------------------------------------------------------


def test_defaults_cover_every_category_with_the_contracts_providers() -> None:
    providers = {c: s.provider for c, s in DEFAULT_CATEGORIES.items()}
    assert providers == {
        "voice": "ElevenLabs",
        "websearch": "Tavily",
        "calendar": "Google Calendar",
        "communication": "Twilio",
        "crm": "HubSpot",
    }
    assert set(providers) == set(TOOL_CATEGORIES)
    assert DEFAULT_CATEGORIES["calendar"].env == ("GOOGLE_OAUTH_CREDENTIALS",)
    assert DEFAULT_CATEGORIES["crm"].describe() == "npx -y @hubspot/mcp-server"


def test_a_stdio_server_gets_only_its_own_variables() -> None:
    connection = DEFAULT_CATEGORIES["crm"].connection_for(ENV)
    assert connection["env"] == {
        "PATH": "/usr/bin",
        "HOME": "/home/agent",
        "PRIVATE_APP_ACCESS_TOKEN": "pat-sentinel-crm",
    }


def test_variables_are_expanded_in_args_for_their_category_only() -> None:
    twilio = DEFAULT_CATEGORIES["communication"]
    assert (
        twilio.connection_for(ENV)["args"][-1] == "AC-sentinel/SK-sentinel:twilio-secret-sentinel"
    )
    assert "${TWILIO_API_SECRET}" in twilio.describe()  # what texts show: never the value
    with pytest.raises(McpCatalogError, match=r"refers to \$\{OPENAI_API_KEY\}"):
        CategorySpec(
            "Tavily",
            {"transport": "http", "url": "https://mcp.example.test/?key=${OPENAI_API_KEY}"},
            env=("TAVILY_API_KEY",),
        )


def test_missing_env_names_each_unset_or_empty_variable() -> None:
    twilio = DEFAULT_CATEGORIES["communication"]
    environ = {"TWILIO_ACCOUNT_SID": "AC1", "TWILIO_API_KEY": ""}
    assert twilio.missing_env(environ) == ["TWILIO_API_KEY", "TWILIO_API_SECRET"]
    assert twilio.missing_env(ENV) == []


def test_secret_values_are_the_catalogs_credentials() -> None:
    secrets = McpCatalog().secret_values(ENV)
    assert "pat-sentinel-crm" in secrets and "twilio-secret-sentinel" in secrets
    assert "/usr/bin" not in secrets and "/home/agent" not in secrets


# --------------------------------------------------------------------------------------------------
# TOML
# --------------------------------------------------------------------------------------------------

CRM_OVERRIDE = """\
[categories.crm]
provider = "HubSpot (sandbox)"
env = ["HUBSPOT_TOKEN"]
[categories.crm.connection]
transport = "streamable_http"
url = "https://mcp.example.test/hubspot"
headers = { Authorization = "Bearer ${HUBSPOT_TOKEN}" }
"""


def test_toml_overrides_a_category_and_keeps_the_others(tmp_path: Path) -> None:
    catalog = McpCatalog.from_toml(write(tmp_path, CRM_OVERRIDE))
    crm = catalog.get("crm")
    assert crm is not None and crm.provider == "HubSpot (sandbox)"
    connection = crm.connection_for({"HUBSPOT_TOKEN": "hub-secret-1"})
    assert connection["headers"] == {"Authorization": "Bearer hub-secret-1"}
    assert "env" not in connection
    assert catalog.get("calendar") == DEFAULT_CATEGORIES["calendar"]


def test_toml_may_change_only_some_fields(tmp_path: Path) -> None:
    path = write(tmp_path, '[categories.websearch]\nprovider = "Tavily EU"\n')
    websearch = McpCatalog.from_toml(path).get("websearch")
    assert websearch is not None and websearch.provider == "Tavily EU"
    assert websearch.connection == DEFAULT_CATEGORIES["websearch"].connection


def test_load_reads_the_environment_variable_then_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, CRM_OVERRIDE)
    monkeypatch.setenv(ENV_CONFIG, str(path))
    crm = McpCatalog.load().get("crm")
    assert crm is not None and crm.provider == "HubSpot (sandbox)"
    monkeypatch.delenv(ENV_CONFIG)
    assert McpCatalog.load().categories == DEFAULT_CATEGORIES
    custom = McpCatalog({})
    assert McpCatalog.load(custom) is custom


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[categories.crm\n", "not valid TOML"),
        ("[servers.crm]\n", "servers: Extra inputs are not permitted"),
        ('[categories.crm]\nenv = "TOKEN"\n', "categories.crm.env: Input should be a valid list"),
        ('[categories.crm]\nenv = ["not-a-name"]\n', "categories.crm.env.0: String should match"),
        ('[categories.crm]\nowner = "me"\n', "categories.crm.owner: Extra inputs"),
        ('[categories.calender]\nprovider = "x"\n', "categories.calender: unknown tool category"),
        (
            '[categories.crm.connection]\ntransport = "pigeon"\n',
            "categories.crm.connection: transport must be one of stdio",
        ),
        (
            '[categories.crm.connection]\ntransport = "stdio"\nargs = ["x"]\n',
            "categories.crm.connection: a stdio connection needs a command",
        ),
        (
            '[categories.crm.connection]\ntransport = "sse"\n',
            "categories.crm.connection: a sse connection needs a url",
        ),
        (
            '[categories.crm.connection]\ntransport = "stdio"\ncommand = "x"\n'
            'args = ["${TAVILY_API_KEY}"]\n',
            r"categories.crm.connection: args refers to \$\{TAVILY_API_KEY\}",
        ),
    ],
)
def test_bad_toml_names_the_file_and_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(McpCatalogError, match=problem) as caught:
        McpCatalog.from_toml(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_missing_file_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(McpCatalogError, match="cannot read the MCP catalog"):
        McpCatalog.load(tmp_path / "absent.toml")


# --------------------------------------------------------------------------------------------------
# Scrubbing
# --------------------------------------------------------------------------------------------------


def test_scrubber_hides_known_values_in_nested_data() -> None:
    scrub = Scrubber(["pat-sentinel-crm", "pat-sentinel-crm-longer", "short"])
    assert scrub("token pat-sentinel-crm-longer!") == f"token {REDACTED}!"
    assert scrub.value({"a": ["x pat-sentinel-crm"], "n": 3}) == {"a": [f"x {REDACTED}"], "n": 3}
    assert scrub("short words stay") == "short words stay"  # too short to be a credential


# --------------------------------------------------------------------------------------------------
# The scripted chat model
# --------------------------------------------------------------------------------------------------


@tool
def lookup(company: str) -> str:
    """Look a company up."""
    return company


def test_scripted_model_replays_and_reacts() -> None:
    def echo(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(f"saw {len(messages)}: {messages[-1].text}")

    model = ScriptedChatModel(script=[calls(tool_call("lookup", company="Acme")), echo])
    assert model.bind_tools([lookup]) is model and model.bound_tools == ["lookup"]

    first = model.invoke([HumanMessage("hi")])
    assert first.tool_calls[0]["name"] == "lookup" and first.tool_calls[0]["args"] == {
        "company": "Acme"
    }
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).text == "saw 2: b"
    assert model.remaining == 0 and len(model.calls) == 2
    with pytest.raises(ScriptExhaustedError):
        model.invoke([HumanMessage("again")])


def test_scripted_model_loops_and_waits() -> None:
    model = ScriptedChatModel(script=[AIMessage("one")], loop=True, delay=0.05)
    began = time.monotonic()
    answers = asyncio.run(model.abatch([[HumanMessage("x")], [HumanMessage("y")]]))
    assert [a.text for a in answers] == ["one", "one"]
    assert time.monotonic() - began >= 0.05
