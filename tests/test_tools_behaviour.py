"""The builder tools' behaviour beyond the contract's examples: every refusal, the store wording,
search semantics through the tool, the artifacts, and "never raises, whatever the input"."""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import FakeClock, make_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from acti_store import (
    AgentUpdate,
    ExecutionRecord,
    SqlAgentRepository,
    open_repository,
)
from acti_store.models import MAX_TAGS
from acti_store.tools import make_builder_tools

UNREACHABLE = "postgresql+psycopg://nobody@127.0.0.1:1/nowhere"

INVALID_NAMES = [
    "../etc/passwd",
    "agents/lead_qualifier",
    "..",
    "Lead Qualifier",
    "LeadQualifier",
    "lead-qualifier",
    "1st_agent",
    "",
    "a" * 65,
    "lead\x00qualifier",
    "lead_qualifier\n",
    "qualificação",
    None,
    42,
    ["lead_qualifier"],
]

#: Each tool that names an agent, the parameter that does, and the other arguments it needs.
NAMED_CALLS: list[tuple[str, str, dict[str, object]]] = [
    ("get_agent_config", "name", {}),
    ("update_agent_config", "name", {"description": "A perfectly fine description"}),
    ("delete_agent_config", "name", {"confirm": True}),
    ("clone_agent_config", "source_name", {"new_name": "fresh_copy"}),
    ("clone_agent_config", "new_name", {"source_name": "lead_qualifier"}),
    ("get_agent_history", "name", {}),
    ("execute_created_agent", "agent_name", {"task": "Say hello"}),
]


def by_name(repo: Any, **options: Any) -> dict[str, BaseTool]:
    return {t.name: t for t in make_builder_tools(repo, **options)}


def call(tool: BaseTool, /, **arguments: object) -> tuple[str, dict[str, Any]]:
    """Invoke ``tool`` as a model would (a tool call); return the text and the artifact."""
    message = tool.invoke(
        {"type": "tool_call", "id": "call_1", "name": tool.name, "args": arguments}
    )
    assert isinstance(message, ToolMessage)
    assert isinstance(message.content, str)
    return message.content, message.artifact


def text_of(tool: BaseTool, /, **arguments: object) -> str:
    text = tool.invoke(arguments)
    assert isinstance(text, str)
    return text


@pytest.fixture
def tools(repo: SqlAgentRepository) -> dict[str, BaseTool]:
    return by_name(repo)


# --------------------------------------------------------------------------------------------------
# Names are checked before anything touches storage
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unreachable() -> Any:
    """A real repository whose database cannot be reached: any storage access fails."""
    repository = open_repository(UNREACHABLE, migrate=False)
    yield repository
    repository.close()


@pytest.mark.parametrize("value", INVALID_NAMES, ids=repr)
@pytest.mark.parametrize(("tool", "parameter", "others"), NAMED_CALLS)
def test_invalid_names_are_refused_before_storage(
    unreachable: SqlAgentRepository,
    tool: str,
    parameter: str,
    others: dict[str, object],
    value: object,
) -> None:
    text, artifact = call(by_name(unreachable)[tool], **({parameter: value} | others))
    assert text.startswith(f"ERROR: Invalid {parameter} '")
    assert "Name must be snake_case:" in text
    assert artifact == {"status": "error", "error": "invalid_name", "parameter": parameter}


def test_invalid_name_quotes_a_safe_bounded_value(tools: dict[str, BaseTool]) -> None:
    text = text_of(tools["get_agent_config"], name="x\x00" + "y" * 10_000)
    first_line = text.splitlines()[0]
    assert first_line.startswith("ERROR: Invalid name 'x\\x00yyy")
    assert first_line.endswith("...'.")
    assert len(first_line) < 120


def test_store_errors_become_error_texts(unreachable: SqlAgentRepository) -> None:
    tools = by_name(unreachable)
    text, artifact = call(tools["get_agent_config"], name="lead_qualifier")
    assert text.startswith("ERROR: The agent store could not complete the request.\n\nReason: ")
    assert artifact["status"] == "error"
    assert artifact["error"] == "store_error"
    text, _ = call(tools["list_created_agents"])
    assert text.startswith("ERROR: The agent store could not complete the request.")


# --------------------------------------------------------------------------------------------------
# "Not found": each tool's own closing line, and the "no agents yet" variant
# --------------------------------------------------------------------------------------------------

NOT_FOUND_CALLS: list[tuple[str, dict[str, object], str, str]] = [
    (
        "get_agent_config",
        {"name": "missing"},
        "ERROR: Agent 'missing' not found.",
        "Use one of the names above, or create a new agent with create_agent_config().",
    ),
    (
        "update_agent_config",
        {"name": "missing", "tags": ["sales"]},
        "ERROR: Agent 'missing' not found.",
        "Use one of the names above, or create a new agent with create_agent_config().",
    ),
    (
        "clone_agent_config",
        {"source_name": "missing", "new_name": "copy"},
        "ERROR: Source agent 'missing' not found.",
        "Use one of the names above as the source_name parameter.",
    ),
    (
        "get_agent_history",
        {"name": "missing"},
        "ERROR: Agent 'missing' not found.",
        "Use one of the names above.",
    ),
    (
        "execute_created_agent",
        {"agent_name": "missing", "task": "Say hello"},
        "ERROR: Agent 'missing' not found.",
        "Use one of the names above, or create a new agent with create_agent_config().",
    ),
]
NO_AGENTS_YET = "No agents have been created yet. Use create_agent_config() to create one."


@pytest.mark.parametrize(("tool", "arguments", "heading", "closing"), NOT_FOUND_CALLS)
def test_not_found(
    repo: SqlAgentRepository,
    tools: dict[str, BaseTool],
    tool: str,
    arguments: dict[str, object],
    heading: str,
    closing: str,
) -> None:
    assert text_of(tools[tool], **arguments) == f"{heading}\n\n{NO_AGENTS_YET}"
    for name in ("zeta_agent", "alpha_agent"):
        repo.create(make_config(name))
    text, artifact = call(tools[tool], **arguments)
    listing = "Available agents (2):\n  - alpha_agent\n  - zeta_agent"
    assert text == f"{heading}\n\n{listing}\n\n{closing}"
    assert artifact == {
        "status": "error",
        "error": "not_found",
        "name": "missing",
        "available": ["alpha_agent", "zeta_agent"],
        "available_count": 2,
    }
    assert not repo.exists("missing") and not repo.exists("copy")


def test_not_found_lists_at_most_fifty_names(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    for i in range(53):
        repo.create(make_config(f"agent_{i:02d}"))
    text = text_of(tools["get_agent_config"], name="missing")
    assert "Available agents (53):\n  - agent_00\n" in text
    assert "  - agent_49\n  ... and 3 more (use search_agents() to find one)\n\n" in text
    assert "agent_50" not in text


# --------------------------------------------------------------------------------------------------
# delete_agent_config without a mirror: the records are named in the store
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def stored(repo: SqlAgentRepository, clock: FakeClock) -> SqlAgentRepository:
    """The store with ``lead_qualifier`` (created 2025-01-09T14:30:22) and two of its runs."""
    assert repo.mirror is None
    repo.create(make_config())
    for success in (True, False):
        repo.record_execution(
            "lead_qualifier",
            ExecutionRecord(
                timestamp=clock(),
                task="Qualify John",
                result_summary="Qualified" if success else "Bad input",
                success=success,
                duration_seconds=1.0,
                error_type=None if success else "ExecutionError",
            ),
        )
    return repo


DRY_RUN = """\
WARNING: This will permanently delete agent 'lead_qualifier'.

Agent Details:
  Description: Qualifies inbound leads by assessing BANT criteria
  Tools: communication, crm
  Stratum: RAI
  Version: 1
  Created: 2025-01-09T14:30:22+00:00
  Executions: 2 total (1 success, 1 errors)

Records to be deleted from the store at {location}:
  - agent configuration 'lead_qualifier'
  - its 1 version (v1)
  - execution history of 'lead_qualifier'

To confirm deletion, call:
  delete_agent_config('lead_qualifier', confirm=True)"""

DRY_RUN_KEEPING_HISTORY = """\
Records to be deleted from the store at {location}:
  - agent configuration 'lead_qualifier'

Preserved:
  - execution history of 'lead_qualifier' (archived in the store)
  - its 1 version (v1), archived with it

To confirm deletion, call:
  delete_agent_config('lead_qualifier', confirm=True, delete_history=False)"""

DELETED = """\
SUCCESS: Agent 'lead_qualifier' has been permanently deleted.

Deleted from the store at {location}:
  - agent configuration 'lead_qualifier'
  - execution history of 'lead_qualifier'

This action cannot be undone. To recreate the agent, use create_agent_config()."""

DELETED_KEEPING_HISTORY = """\
SUCCESS: Agent 'lead_qualifier' configuration deleted.

Deleted from the store at {location}:
  - agent configuration 'lead_qualifier'

Preserved:
  - execution history of 'lead_qualifier' (archived in the store)

Note: History archived in the store for audit purposes."""


def test_delete_dry_run_names_the_store(stored: SqlAgentRepository) -> None:
    tools = by_name(stored)
    text, artifact = call(tools["delete_agent_config"], name="lead_qualifier")
    assert text == DRY_RUN.format(location=stored.location)
    assert artifact["deleted"] is False and artifact["agent"]["name"] == "lead_qualifier"
    text = text_of(tools["delete_agent_config"], name="lead_qualifier", delete_history=False)
    assert text.endswith(DRY_RUN_KEEPING_HISTORY.format(location=stored.location))
    assert stored.exists("lead_qualifier")


@pytest.mark.parametrize("confirm", [False, None, "true", "yes", 1, 1.0, [True], {"a": 1}])
def test_only_an_explicit_true_deletes(stored: SqlAgentRepository, confirm: object) -> None:
    text = text_of(by_name(stored)["delete_agent_config"], name="lead_qualifier", confirm=confirm)
    assert text.startswith("WARNING: This will permanently delete agent 'lead_qualifier'.")
    assert stored.exists("lead_qualifier")


def test_delete_confirmed_in_the_store(stored: SqlAgentRepository) -> None:
    text, artifact = call(
        by_name(stored)["delete_agent_config"], name="lead_qualifier", confirm=True
    )
    assert text == DELETED.format(location=stored.location)
    assert artifact["deleted"] is True and artifact["delete_history"] is True
    assert not stored.exists("lead_qualifier")
    assert stored.archived_history("lead_qualifier").executions == []


def test_delete_keeping_history_archives_it(stored: SqlAgentRepository) -> None:
    text = text_of(
        by_name(stored)["delete_agent_config"],
        name="lead_qualifier",
        confirm=True,
        delete_history=False,
    )
    assert text == DELETED_KEEPING_HISTORY.format(location=stored.location)
    assert not stored.exists("lead_qualifier")
    assert [r.task for r in stored.archived_history("lead_qualifier").executions] == [
        "Qualify John",
        "Qualify John",
    ]


def test_delete_not_found_in_the_store(repo: SqlAgentRepository) -> None:
    tools = by_name(repo)
    text = text_of(tools["delete_agent_config"], name="missing", confirm=True)
    assert text == f"ERROR: Agent 'missing' not found.\n\n{NO_AGENTS_YET}\n\nNothing was deleted."
    repo.create(make_config())
    text = text_of(tools["delete_agent_config"], name="missing", confirm=True)
    assert text.endswith("Available agents (1):\n  - lead_qualifier\n\nNothing was deleted.")


def test_delete_history_must_be_a_boolean(stored: SqlAgentRepository) -> None:
    text, artifact = call(
        by_name(stored)["delete_agent_config"],
        name="lead_qualifier",
        confirm=True,
        delete_history="sometimes",
    )
    assert text == (
        "ERROR: Invalid delete parameter.\n\nValidation errors:\n"
        "  - delete_history: Input should be a valid boolean, unable to interpret input\n\n"
        "Please fix the issues and try again."
    )
    assert artifact["error"] == "validation"
    assert stored.exists("lead_qualifier")


# --------------------------------------------------------------------------------------------------
# create / update / clone refusals
# --------------------------------------------------------------------------------------------------


def test_create_reports_every_problem_and_wrong_types(tools: dict[str, BaseTool]) -> None:
    text, artifact = call(
        tools["create_agent_config"],
        name=123,
        description=None,
        system_prompt=["not", "a", "string"],
        tools="voice",
        model=None,
        tags=[1, "ok"],
    )
    assert "Validation errors:\n" in text
    assert artifact["errors"] == [
        {"field": "name", "message": "Input should be a valid string"},
        {"field": "description", "message": "Field required"},
        {"field": "system_prompt", "message": "Input should be a valid string"},
        {"field": "tools", "message": "Input should be a valid list"},
        {"field": "tags[0]", "message": "Input should be a valid string"},
    ]
    assert text.endswith("Please fix the issues and try again.")
    assert "Requirements:\n  - name: snake_case" in text


def test_create_normalises_stratum_and_defaults_model(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    config = make_config()
    text, artifact = call(
        tools["create_agent_config"],
        name=config.name,
        description=config.description,
        system_prompt=config.system_prompt,
        stratum=" rai ",
        model=None,
    )
    assert text.startswith("SUCCESS: Agent configuration created and saved!")
    assert "  Tools: (none)\n  Stratum: RAI\n" in text
    assert artifact["agent"]["stratum"] == "RAI"
    assert artifact["location"] == repo.location
    assert repo.get("lead_qualifier").model == "anthropic:claude-opus-4-5-20251101"


@pytest.mark.parametrize("stratum", ["INVALID", 5, "", ["RAI"]])
def test_create_invalid_stratum_is_checked_first(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], stratum: object
) -> None:
    text, artifact = call(
        tools["create_agent_config"],
        name="Bad Name",
        description="",
        system_prompt="",
        stratum=stratum,
    )
    assert text.startswith("ERROR: Invalid stratum '")
    assert text.endswith("Please use one of: RTI, RAI, ZACS, EEI, IGE")
    assert artifact["error"] == "invalid_stratum"
    assert repo.list_names() == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("model", "openai:gpt\x00x", "must not contain NUL (\\x00) characters"),
        ("description", "A fine text\x00", "must not contain NUL (\\x00) characters"),
        (
            "description",
            "A fine \ud800 text",
            "text must be valid Unicode (it contains a lone surrogate)",
        ),
    ],
)
def test_text_no_store_can_keep_is_refused(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], field: str, value: str, message: str
) -> None:
    arguments = VALID["create_agent_config"] | {field: value}
    text, artifact = call(tools["create_agent_config"], **arguments)
    assert f"  - {field}: {message}\n" in text
    assert artifact["errors"] == [{"field": field, "message": message}]
    assert repo.list_names() == []


def test_create_existing_agent(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    repo.create(make_config())
    config = make_config(description="A different description")
    text, artifact = call(
        tools["create_agent_config"],
        name=config.name,
        description=config.description,
        system_prompt=config.system_prompt,
    )
    assert text == (
        "ERROR: Agent 'lead_qualifier' already exists.\n\nOptions:\n"
        "  1. Choose a different name\n"
        "  2. Review the existing agent: get_agent_config('lead_qualifier')\n"
        "  3. Update the existing agent: update_agent_config('lead_qualifier', ...)\n"
        "  4. Delete the existing agent first: delete_agent_config('lead_qualifier', confirm=True)"
    )
    assert artifact == {"status": "error", "error": "already_exists", "name": "lead_qualifier"}
    assert repo.get("lead_qualifier").description != config.description


def test_update_reports_every_problem_and_changes_nothing(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    text = text_of(
        tools["update_agent_config"],
        name="lead_qualifier",
        description="short",
        tools=["crm", "fax"],
        stratum="XYZ",
        model="no-provider",
    )
    assert text == (
        "ERROR: Update validation failed for agent 'lead_qualifier'.\n\nValidation errors:\n"
        "  - description: String should have at least 10 characters\n"
        "  - tools: 'fax' is not a valid tool. Use: voice, websearch, calendar, communication, "
        "crm\n"
        "  - model: model must be in provider:model form, e.g. "
        "'anthropic:claude-opus-4-5-20251101'\n"
        "  - stratum: 'XYZ' is not a valid stratum. Use: RTI, RAI, ZACS, EEI, IGE\n\n"
        "The agent was NOT modified. Please fix the issues and try again."
    )
    assert repo.get("lead_qualifier").metadata.version == 1


def test_update_lists_only_values_that_changed(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    text, artifact = call(
        tools["update_agent_config"], name="lead_qualifier", stratum="RAI", tags=[]
    )
    assert '\n  - tags: ["sales", "qualification"] -> []\n\n' in text
    assert "stratum:" not in text.split("Agent Summary")[0]
    assert artifact["changed"] == ["tags"] and artifact["previous_version"] == 1
    text = text_of(tools["update_agent_config"], name="lead_qualifier", stratum="RAI")
    assert "(v2 -> v3)" in text
    assert "Changes applied:\n  - none: every value given equals the current one\n" in text


def test_update_preview_of_long_text(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    repo.create(make_config())
    prompt = "Line one of the new prompt.\n" + "word " * 100
    text = text_of(tools["update_agent_config"], name="lead_qualifier", system_prompt=prompt)
    assert (
        '  - system_prompt: "You are a professional lead..." -> '
        '"Line one of the new prompt. word word..."\n'
    ) in text
    assert repo.get("lead_qualifier").system_prompt == prompt


class RacingRepository(SqlAgentRepository):
    """A real store where another writer updates each agent just before our update begins."""

    def update_returning_previous(
        self,
        name: str,
        changes: AgentUpdate,
        expected_version: int | None = None,
        message: str | None = None,
    ) -> Any:
        super().update_returning_previous(name, AgentUpdate(tags=["raced"]))
        return super().update_returning_previous(name, changes, expected_version, message)


def test_update_applies_to_the_latest_version(repo: SqlAgentRepository, clock: FakeClock) -> None:
    """No expected version is given: a write that came first is built upon, never a conflict,
    and the changes reported are those from the version this update replaced."""
    repo.create(make_config())
    racing = RacingRepository(repo.engine, clock=clock)
    text, artifact = call(
        by_name(racing)["update_agent_config"], name="lead_qualifier", tags=["mine"]
    )
    assert text.startswith(
        "SUCCESS: Agent 'lead_qualifier' updated (v2 -> v3).\n\n"
        'Changes applied:\n  - tags: ["raced"] -> ["mine"]\n\n'
    )
    assert (artifact["previous_version"], artifact["changed"]) == (2, ["tags"])
    stored = repo.get("lead_qualifier")
    assert (stored.tags, stored.metadata.version) == (["mine"], 3)


def test_clone_overrides_are_validated_first(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    text = text_of(
        tools["clone_agent_config"],
        source_name="lead_qualifier",
        new_name="lead_copy",
        description="tiny",
        tags=["Not A Tag"],
    )
    assert text.startswith(
        "ERROR: Cannot clone 'lead_qualifier' to 'lead_copy' - validation failed.\n\n"
        "Validation errors:\n  - description: String should have at least 10 characters\n"
        "  - tags: 'Not A Tag' is not a valid tag"
    )
    assert text.endswith("No agent was created. Please fix the issues and try again.")
    assert not repo.exists("lead_copy")


def break_stored_system_prompt(repo: SqlAgentRepository, name: str) -> None:
    """Store a value today's rules refuse, as a row written by hand or by an older release."""
    with repo.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE agents SET system_prompt = :prompt WHERE name = :name"),
            {"prompt": "Too short.", "name": name},
        )


def test_update_names_a_stored_value_that_breaks_a_rule(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    """The merged configuration is validated: a stored value that breaks a rule is reported as a
    validation error of that field (never raised), and fixing it in the same update works."""
    repo.create(make_config())
    break_stored_system_prompt(repo, "lead_qualifier")
    text, artifact = call(tools["update_agent_config"], name="lead_qualifier", tags=["sales"])
    assert text == (
        "ERROR: Update validation failed for agent 'lead_qualifier'.\n\nValidation errors:\n"
        "  - system_prompt: String should have at least 50 characters\n\n"
        "The agent was NOT modified. Please fix the issues and try again."
    )
    assert artifact["error"] == "validation"
    assert artifact["errors"] == [
        {"field": "system_prompt", "message": "String should have at least 50 characters"}
    ]
    assert repo.get("lead_qualifier").metadata.version == 1
    prompt = make_config().system_prompt
    text = text_of(
        tools["update_agent_config"], name="lead_qualifier", system_prompt=prompt, tags=["sales"]
    )
    assert text.startswith("SUCCESS: Agent 'lead_qualifier' updated (v1 -> v2).")


def test_clone_names_a_stored_value_that_breaks_a_rule(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.create(make_config())
    break_stored_system_prompt(repo, "lead_qualifier")
    text, artifact = call(
        tools["clone_agent_config"], source_name="lead_qualifier", new_name="lead_copy"
    )
    assert text.startswith(
        "ERROR: Cannot clone 'lead_qualifier' to 'lead_copy' - validation failed.\n\n"
        "Validation errors:\n  - system_prompt: String should have at least 50 characters\n"
    )
    assert artifact["error"] == "validation"
    assert not repo.exists("lead_copy")


def test_clone_with_overrides(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    repo.create(make_config())
    repo.update("lead_qualifier", AgentUpdate(tags=["sales", "production"]))
    text, artifact = call(
        tools["clone_agent_config"],
        source_name="lead_qualifier",
        new_name="lead_copy",
        description="A variation for enterprise leads",
        tags=["template"],
    )
    assert "  Source: lead_qualifier (v2)\n  Target: lead_copy (v1)\n" in text
    assert "  Description: A variation for enterprise leads\n" in text
    assert (artifact["source"], artifact["source_version"]) == ("lead_qualifier", 2)
    copy = repo.get("lead_copy")
    assert (copy.tags, copy.metadata.version) == (["template"], 1)


# --------------------------------------------------------------------------------------------------
# search_agents: the semantics, through the tool
# --------------------------------------------------------------------------------------------------


def found(tools: dict[str, BaseTool], /, **arguments: object) -> list[str]:
    text, artifact = call(tools["search_agents"], **arguments)
    assert artifact["status"] == "success", text
    assert artifact["count"] == len(artifact["names"])
    return list(artifact["names"])


TOOLS_ALL = ["voice", "websearch", "calendar", "communication", "crm"]
TAGS = ["sales", "production"]


@pytest.fixture
def catalog(repo: SqlAgentRepository, clock: FakeClock) -> SqlAgentRepository:
    """Five agents created a day apart, with tools, tags and runs to filter on."""
    specs = [
        ("alpha_scheduler", "Books 100% of demo meetings", ["calendar"], "ZACS", ["sales"], 0),
        ("beta_researcher", "Researches markets_and trends", ["websearch", "crm"], "EEI", [], 3),
        ("gamma_qualifier", "Qualifies leads over SMS", ["communication", "crm"], "RAI", TAGS, 7),
        ("delta_auditor", "Audits calls for compliance", TOOLS_ALL, "IGE", ["production"], 1),
        ("epsilon_helper", "Plain helper without tools", [], None, [], 0),
    ]
    start = datetime(2025, 1, 1, 12, tzinfo=UTC)
    for day, (name, description, tools, stratum, tags, runs) in enumerate(specs):
        clock.set(start + timedelta(days=day))
        repo.create(
            make_config(name, description=description, tools=tools, stratum=stratum, tags=tags)
        )
        for _ in range(runs):
            record = ExecutionRecord(
                timestamp=clock(), task="t", result_summary="ok", success=True, duration_seconds=1
            )
            repo.record_execution(name, record)
    clock.set(start + timedelta(days=10))
    repo.update("alpha_scheduler", AgentUpdate(tags=["sales", "template"]))
    return repo


def test_search_filters(catalog: SqlAgentRepository) -> None:
    tools = by_name(catalog)
    assert found(tools) == [
        "alpha_scheduler",
        "beta_researcher",
        "delta_auditor",
        "epsilon_helper",
        "gamma_qualifier",
    ]
    assert found(tools, query="QUALIFIES") == ["gamma_qualifier"]  # case-insensitive
    assert found(tools, query="researcher") == ["beta_researcher"]  # in the name
    assert found(tools, stratum="ige") == ["delta_auditor"]
    assert found(tools, tools=["crm"]) == ["beta_researcher", "delta_auditor", "gamma_qualifier"]
    assert found(tools, tags=["production"]) == ["delta_auditor", "gamma_qualifier"]
    assert found(tools, created_after="2025-01-03") == [
        "delta_auditor",
        "epsilon_helper",
        "gamma_qualifier",
    ]
    assert found(tools, created_before="2025-01-02") == ["alpha_scheduler", "beta_researcher"]
    assert found(tools, created_after="2025-01-02T12:00:00", created_before="2025-01-03") == [
        "beta_researcher",
        "gamma_qualifier",
    ]
    assert found(tools, min_executions=3) == ["beta_researcher", "gamma_qualifier"]


def test_search_filters_combine_with_and(catalog: SqlAgentRepository) -> None:
    tools = by_name(catalog)
    assert found(tools, query="leads sms") == ["gamma_qualifier"]  # every word
    assert found(tools, query="leads audits") == []
    assert found(tools, tools=["crm", "communication"]) == ["delta_auditor", "gamma_qualifier"]
    assert found(tools, tags=["sales", "production"]) == ["gamma_qualifier"]
    assert found(tools, tools=["crm"], tags=["production"], min_executions=2) == ["gamma_qualifier"]
    assert found(tools, stratum="RAI", tools=["calendar"]) == []


def test_search_sorts(catalog: SqlAgentRepository) -> None:
    tools = by_name(catalog)
    assert found(tools, sort_by="created_at") == [
        "epsilon_helper",
        "delta_auditor",
        "gamma_qualifier",
        "beta_researcher",
        "alpha_scheduler",
    ]
    assert found(tools, sort_by="updated_at")[0] == "alpha_scheduler"
    assert found(tools, sort_by="execution_count")[:3] == [
        "gamma_qualifier",
        "beta_researcher",
        "delta_auditor",
    ]
    text = text_of(tools["search_agents"], sort_by="created_at", limit=1)
    assert "\nSort: created_at (descending)\nFound: 1 agent(s)\n" in text


def test_search_limit_bounds(catalog: SqlAgentRepository) -> None:
    tools = by_name(catalog)
    assert found(tools, limit=1) == ["alpha_scheduler"]
    assert len(found(tools, limit=100)) == 5
    for limit, message in [
        (0, "Input should be greater than or equal to 1"),
        (101, "Input should be less than or equal to 100"),
        ("many", "Input should be a valid integer, unable to parse string as an integer"),
    ]:
        text = text_of(tools["search_agents"], limit=limit)
        assert text == (
            "ERROR: Invalid search parameter.\n\nValidation errors:\n"
            f"  - limit: {message}\n\nPlease fix the issues and try again."
        )


def test_search_wildcards_are_literal(catalog: SqlAgentRepository) -> None:
    tools = by_name(catalog)
    assert found(tools, query="100%") == ["alpha_scheduler"]
    assert found(tools, query="%") == ["alpha_scheduler"]
    assert found(tools, query="markets_and") == ["beta_researcher"]
    assert found(tools, query="s_s") == []
    assert found(tools, query="_") == [
        "alpha_scheduler",
        "beta_researcher",
        "delta_auditor",
        "epsilon_helper",
        "gamma_qualifier",
    ]  # every name has an underscore, literally


def test_search_reports_every_invalid_parameter(tools: dict[str, BaseTool]) -> None:
    text, artifact = call(
        tools["search_agents"],
        sort_by="popularity",
        min_executions=-1,
        created_before="31/01/2025",
        query="x" * 501,
    )
    assert [e["field"] for e in artifact["errors"]] == [
        "query",
        "created_before",
        "min_executions",
        "sort_by",
    ]
    assert text.startswith("ERROR: Invalid search parameter.\n\nValidation errors:\n  - query: ")


@pytest.mark.timeout(60)
def test_search_for_more_tags_than_an_agent_has_is_invalid_input(
    tools: dict[str, BaseTool],
) -> None:
    """An agent has at most MAX_TAGS tags and a search asks for ALL its tags: more is bad input,
    told as such at once (issue 25: 1,000 tags ran for minutes on PostgreSQL, and SQLite's
    "Expression tree is too large" told the model the store itself needed attention)."""
    for count in (MAX_TAGS + 1, 1000):
        text, artifact = call(tools["search_agents"], tags=[f"tag-{i}" for i in range(count)])
        assert artifact["status"] == "error"
        assert [e["field"] for e in artifact["errors"]] == ["tags"]
        assert text.startswith("ERROR: Invalid search parameter.\n\nValidation errors:\n  - tags: ")
        assert f"at most {MAX_TAGS} tags" in text
        assert "store" not in text
    text, artifact = call(tools["search_agents"], tags=["sales"] * 1000)
    assert artifact["status"] == "success" and artifact["query"]["tags"] == ["sales"]


def test_search_without_results_counts_unclassified(catalog: SqlAgentRepository) -> None:
    text = text_of(by_name(catalog)["search_agents"], query="nothing like this")
    assert text.startswith("Search Results\n" + "=" * 50 + '\n\nQuery: "nothing like this"\n')
    assert text.endswith(
        "  - RTI: 0 agent(s)\n  - RAI: 1 agent(s)\n  - ZACS: 1 agent(s)\n"
        "  - EEI: 1 agent(s)\n  - IGE: 1 agent(s)\n  - UNCLASSIFIED: 1 agent(s)"
    )


def test_list_created_agents_puts_unclassified_last(catalog: SqlAgentRepository) -> None:
    text, artifact = call(by_name(catalog)["list_created_agents"])
    assert [line for line in text.splitlines() if line.startswith("[")] == [
        "[RAI] (1 agent(s))",
        "[ZACS] (1 agent(s))",
        "[EEI] (1 agent(s))",
        "[IGE] (1 agent(s))",
        "[UNCLASSIFIED] (1 agent(s))",
    ]
    assert (
        "  epsilon_helper\n    Description: Plain helper without tools\n    Tools: (none)\n" in text
    )
    assert artifact["total"] == 5
    assert artifact["groups"]["UNCLASSIFIED"] == ["epsilon_helper"]


# --------------------------------------------------------------------------------------------------
# get_agent_history parameters
# --------------------------------------------------------------------------------------------------


def test_history_limits_and_errors_only(stored: SqlAgentRepository) -> None:
    tool = by_name(stored)["get_agent_history"]
    text = text_of(tool, name="lead_qualifier", limit=1)
    assert "Recent Executions (showing 1 of 2):" in text
    assert text.count("Task: Qualify John") == 1
    assert "Recent Executions (showing 2 of 2):" in text_of(tool, name="lead_qualifier", limit=50)
    text, artifact = call(tool, name="lead_qualifier", include_errors_only=True)
    assert "Recent Failed Executions (showing 1 of 1 errors):" in text
    assert "[SUCCESS]" not in text
    assert "   Error: ExecutionError - Bad input\n" in text
    assert artifact["stats"]["error_count"] == 1
    assert [r["success"] for r in artifact["history"]["executions"]] == [False]
    for limit in (0, 51, 2.5, "ten"):
        text = text_of(tool, name="lead_qualifier", limit=limit)
        assert text.startswith(
            "ERROR: Invalid history parameter.\n\nValidation errors:\n  - limit: "
        )


def test_history_errors_only_without_errors(repo: SqlAgentRepository, clock: FakeClock) -> None:
    repo.create(make_config())
    repo.record_execution(
        "lead_qualifier",
        ExecutionRecord(
            timestamp=clock(), task="t", result_summary="ok", success=True, duration_seconds=2.0
        ),
    )
    text = text_of(
        by_name(repo)["get_agent_history"], name="lead_qualifier", include_errors_only=True
    )
    assert "  Success Rate: 100% (1/1)\n  Average Duration: 2.0s\n" in text
    assert "\n\nNo failed executions found.\n\n" in text
    assert text.endswith(f"Full history stored in: {repo.history_location_of('lead_qualifier')}")


# --------------------------------------------------------------------------------------------------
# execute_created_agent: the shell's own checks
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"task": ""}, "task", "String should have at least 1 character"),
        ({"task": "x" * 10_001}, "task", "String should have at most 10000 characters"),
        ({"task": 42}, "task", "Input should be a valid string"),
        ({"timeout": 0.5}, "timeout", "Input should be greater than or equal to 1"),
        ({"timeout": 300.5}, "timeout", "Input should be less than or equal to 300"),
        ({"timeout": math.nan}, "timeout", "Input should be a finite number"),
        ({"timeout": "soon"}, "timeout", "Input should be a valid number, unable to parse string"),
        ({"skip_unavailable_tools": "maybe"}, "skip_unavailable_tools", "Input should be a valid"),
    ],
)
def test_execute_parameters(
    stored: SqlAgentRepository, arguments: dict[str, object], field: str, message: str
) -> None:
    arguments = {"agent_name": "lead_qualifier", "task": "Qualify John"} | arguments
    text, artifact = call(by_name(stored)["execute_created_agent"], **arguments)
    assert text.startswith(
        f"ERROR: Invalid execution parameter.\n\nValidation errors:\n  - {field}: {message}"
    )
    assert artifact["error"] == "validation"
    assert stored.get_history("lead_qualifier").total_executions == 2  # nothing ran


def test_execute_without_the_agents_extra(
    stored: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "acti_store.execution", None)  # makes the import fail
    text, artifact = call(
        by_name(stored)["execute_created_agent"], agent_name="lead_qualifier", task="Qualify John"
    )
    assert text.startswith(
        "ERROR: Cannot execute agent 'lead_qualifier' - the agent runtime is not installed."
    )
    assert text.endswith('Install it with: pip install "acti-store[agents]"')
    assert artifact["error"] == "agents_extra_missing"


def test_execute_runs_through_the_runner(repo: SqlAgentRepository) -> None:
    from langchain_core.messages import AIMessage

    from acti_store.testing import ScriptedChatModel

    repo.create(make_config("plain_agent", tools=[], stratum=None))
    model = ScriptedChatModel(script=[AIMessage("Hello from the plain agent.")])
    tool = by_name(repo, model=model)["execute_created_agent"]
    text, artifact = call(tool, agent_name="plain_agent", task="Say hello", timeout=30)
    assert text.startswith("EXECUTION SUCCESS: Agent 'plain_agent' completed task.")
    assert "Hello from the plain agent." in text
    assert artifact["status"] == "success"
    assert repo.get_history("plain_agent").executions[0].task == "Say hello"


# --------------------------------------------------------------------------------------------------
# Never raises, whatever the input
# --------------------------------------------------------------------------------------------------

#: Valid arguments of each tool (but execute_created_agent), on the ``stored`` data.
VALID: dict[str, dict[str, object]] = {
    "create_agent_config": {
        "name": "new_agent",
        "description": "A valid description",
        "system_prompt": "You are a careful assistant. " * 3,
    },
    "get_agent_config": {"name": "lead_qualifier"},
    "update_agent_config": {"name": "lead_qualifier", "description": "Another description"},
    "delete_agent_config": {"name": "lead_qualifier"},
    "clone_agent_config": {"source_name": "lead_qualifier", "new_name": "lead_copy"},
    "list_available_tools": {},
    "list_created_agents": {},
    "search_agents": {"query": "lead"},
    "get_agent_history": {"name": "lead_qualifier"},
}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=80),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["lead_qualifier", "missing", "new_agent"]) | JSON
ERROR_PREFIXES = ("ERROR: ", "WARNING: ")


def arguments_for(tool: BaseTool) -> st.SearchStrategy[dict[str, Any]]:
    """Every argument of ``tool``, each a plausible name or any JSON value."""
    fields = tool.get_input_schema().model_fields
    return st.fixed_dictionaries(
        {name: NAMES if "name" in name else JSON for name in fields},
        optional={"unexpected": JSON},
    )


@pytest.mark.parametrize("tool_name", list(VALID))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_tools_never_raise(stored: SqlAgentRepository, tool_name: str, data: st.DataObject) -> None:
    tool = by_name(stored)[tool_name]
    arguments = data.draw(arguments_for(tool))
    text, artifact = call(tool, **arguments)
    assert artifact["status"] in ("success", "error")
    assert (artifact["status"] == "error") == text.startswith(ERROR_PREFIXES[0])


@given(arguments=st.fixed_dictionaries({"agent_name": JSON, "task": JSON, "timeout": JSON}))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_execute_never_raises_on_bad_arguments(
    stored: SqlAgentRepository, arguments: dict[str, Any]
) -> None:
    text, artifact = call(by_name(stored)["execute_created_agent"], **arguments)
    assert artifact["status"] == "error" and text.startswith("ERROR: ")


@pytest.mark.parametrize(
    "value",
    [
        "x" * 1_000_000,
        "a valid\x00 text with NUL",
        "\U0001f916 ünïcödé مرحبا ok",
        "surrogate \ud800 here",
        {"nested": [1, {}]},
    ],
    ids=["huge", "nul", "unicode", "surrogate", "nested"],
)
def test_hostile_values_in_every_argument(stored: SqlAgentRepository, value: object) -> None:
    for name, valid in VALID.items():
        tool = by_name(stored)[name]
        for field in tool.get_input_schema().model_fields:
            text, artifact = call(tool, **(valid | {field: value}))
            assert artifact["status"] in ("success", "error"), (name, field)
            assert len(text) < 20_000, (name, field)


def test_missing_arguments_and_non_mapping_input(tools: dict[str, BaseTool]) -> None:
    message = tools["create_agent_config"].invoke(
        {"type": "tool_call", "id": "1", "name": "create_agent_config", "args": {"name": "x"}}
    )
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert message.content == (
        "ERROR: Invalid arguments for create_agent_config.\n\nValidation errors:\n"
        "  - description: Field required\n  - system_prompt: Field required\n\n"
        "Please fix the issues and try again."
    )
    assert text_of(tools["get_agent_config"]).startswith(
        "ERROR: Invalid arguments for get_agent_config."
    )
    assert (
        tools["search_agents"]
        .invoke(None)
        .startswith("ERROR: Invalid arguments for search_agents.")
    )  # type: ignore[arg-type]
    # A bare string is the first argument, as LangChain does for any tool.
    assert (
        tools["get_agent_config"].invoke("missing").startswith("ERROR: Agent 'missing' not found.")
    )


def test_success_artifacts(stored: SqlAgentRepository) -> None:
    tools = by_name(stored)
    _, artifact = call(tools["get_agent_config"], name="lead_qualifier")
    assert artifact["status"] == "success"
    assert artifact["agent"]["_metadata"]["execution_count"] == 2
    _, artifact = call(tools["list_available_tools"])
    assert artifact == {
        "status": "success",
        "tools": ["voice", "websearch", "calendar", "communication", "crm"],
        "strata": ["RTI", "RAI", "ZACS", "EEI", "IGE"],
    }
    _, artifact = call(tools["get_agent_history"], name="lead_qualifier")
    assert artifact["history"]["total_executions"] == 2
    assert artifact["stats"]["success_count"] == 1
    assert artifact["location"] == stored.history_location_of("lead_qualifier")
