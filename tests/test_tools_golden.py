# ruff: noqa: E501 - the contract's example texts are copied verbatim
"""Golden tests: each example text of the contract, produced by the tools from the same data.

The expected texts below are the contract's examples, copied verbatim (hence the long lines).
Where our text differs on purpose, the test says so next to the comparison: the v2 document in
``get_agent_config``, the change preview in ``update_agent_config`` and the elided ("...")
history entries. The contract's ``/path/to/outputs/agents`` is the store's JSON
mirror directory here, so every printed path is checked against the repository's own location.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from langchain_core.tools import BaseTool

from acti_store import AgentUpdate, ExecutionRecord, SqlAgentRepository, open_repository
from acti_store.tools import make_builder_tools

PATH = "/path/to/outputs/agents"

AVAILABLE_TOOLS = """\
Available MCP Tool Categories
==================================================

  voice
    Text-to-speech, voice synthesis (ElevenLabs)
    Capabilities:
      - Generate spoken audio from text
      - Clone and customize voices
      - Real-time voice synthesis for calls
    Best for strata: ZACS, RAI
    Use cases: Customer-facing agents, accessibility, audio content

  websearch
    Web research, fact-finding (Tavily)
    Capabilities:
      - Search the web for current information
      - Research topics and gather facts
      - Find documentation and references
    Best for strata: RTI, EEI
    Use cases: Research agents, fact-checkers, information gatherers

  calendar
    Scheduling, availability checks (Google Calendar)
    Capabilities:
      - Check availability and schedule meetings
      - Create, update, and delete calendar events
      - Send calendar invitations
    Best for strata: ZACS
    Use cases: Scheduling agents, appointment setters, coordinators

  communication
    SMS, calls (Twilio)
    Capabilities:
      - Send SMS messages
      - Make and receive phone calls
      - Manage communication workflows
    Best for strata: RAI, ZACS
    Use cases: Outreach agents, follow-up agents, notification systems

  crm
    Contact management, deals (HubSpot)
    Capabilities:
      - Access and update contact records
      - Manage deals and pipelines
      - Track customer interactions
    Best for strata: RTI, RAI, EEI
    Use cases: Sales agents, customer service, data management

==================================================
ACTi Stratum Reference & Tool Recommendations
==================================================

  RTI (Reality & Truth Intelligence)
    Purpose: Data gathering, fact verification, research
    Recommended tools: websearch, crm
    Example agents: Research assistant, fact-checker, data gatherer

  RAI (Readiness & Agreement Intelligence)
    Purpose: Lead qualification, rapport building, discovery
    Recommended tools: communication, crm
    Example agents: Lead qualifier, discovery agent, SDR assistant

  ZACS (Zone Action & Conversion Systems)
    Purpose: Scheduling, conversions, follow-ups, closings
    Recommended tools: calendar, communication, voice
    Example agents: Appointment scheduler, closer, follow-up agent

  EEI (Economic & Ecosystem Intelligence)
    Purpose: Analytics, market research, optimization
    Recommended tools: websearch, crm
    Example agents: Market analyst, pipeline optimizer, trend tracker

  IGE (Integrity & Governance Engine)
    Purpose: Compliance, quality control, auditing
    Recommended tools: all (for comprehensive auditing)
    Example agents: Compliance checker, QA agent, audit assistant"""

CREATE_SUCCESS = """\
SUCCESS: Agent configuration created and saved!

Agent Summary:
  Name: lead_qualifier
  Description: Qualifies inbound leads by assessing BANT criteria
  Tools: communication, crm
  Stratum: RAI
  Model: anthropic:claude-opus-4-5-20251101

Saved to: /path/to/outputs/agents/lead_qualifier.json

Next steps:
  - Use get_agent_config('lead_qualifier') to review the full configuration
  - The agent can be instantiated with MCP tools using the FastAPI backend"""

CREATE_VALIDATION = """\
ERROR: Agent configuration validation failed.

Validation errors:
  - name: name must be snake_case: lowercase letters, numbers, and underscores only, starting with a letter

Requirements:
  - name: snake_case (lowercase, numbers, underscores, starts with letter)
  - description: 10-500 characters
  - system_prompt: minimum 50 characters
  - tools: valid options are [voice, websearch, calendar, communication, crm]

Please fix the issues and try again."""

CREATE_INVALID_STRATUM = """\
ERROR: Invalid stratum 'INVALID'.

Valid stratum options:
  - RTI: Reality & Truth Intelligence (data gathering)
  - RAI: Readiness & Agreement Intelligence (qualification)
  - ZACS: Zone Action & Conversion Systems (scheduling)
  - EEI: Economic & Ecosystem Intelligence (analytics)
  - IGE: Integrity & Governance Engine (compliance)

Please use one of: RTI, RAI, ZACS, EEI, IGE"""

GET_SUCCESS = """\
Agent Configuration: lead_qualifier
==================================================

Quick Summary:
  Tools: communication, crm
  Stratum: RAI
  Model: anthropic:claude-opus-4-5-20251101

Full Configuration:
{
  "name": "lead_qualifier",
  "description": "Qualifies inbound leads by assessing BANT criteria",
  "system_prompt": "You are a professional lead qualification specialist...",
  "tools": ["communication", "crm"],
  "model": "anthropic:claude-opus-4-5-20251101",
  "stratum": "RAI",
  "_metadata": {
    "created_at": "2025-01-09T14:30:22.123456+00:00",
    "version": "1.0.0",
    "builder": "acti-agent-builder"
  }
}"""

GET_NOT_FOUND = """\
ERROR: Agent 'invalid_name' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

Use one of the names above, or create a new agent with create_agent_config()."""

GET_NOT_FOUND_EMPTY = """\
ERROR: Agent 'invalid_name' not found.

No agents have been created yet. Use create_agent_config() to create one."""

LIST_AGENTS = """\
Created Agents
==================================================

[RTI] (1 agent(s))
----------------------------------------
  research_assistant
    Description: Researches topics and gathers facts from the web
    Tools: websearch
    Created: 2025-01-09T12:00:00+00:00

[RAI] (1 agent(s))
----------------------------------------
  lead_qualifier
    Description: Qualifies inbound leads by assessing BANT criteria
    Tools: communication, crm
    Created: 2025-01-09T14:30:22+00:00

[ZACS] (1 agent(s))
----------------------------------------
  appointment_scheduler
    Description: Schedules appointments and manages calendar availability
    Tools: calendar, communication
    Created: 2025-01-09T15:45:10+00:00

==================================================
Total: 3 agent(s)

Use get_agent_config('<name>') to see full configuration details."""

LIST_EMPTY = """\
No agents have been created yet.

To create your first agent:
  1. Call list_available_tools() to see available tool options
  2. Call create_agent_config() with the agent's details

Example:
  create_agent_config(
    name='my_first_agent',
    description='A helpful agent that...',
    system_prompt='You are...',
    tools=['websearch'],
    stratum='RTI'
  )"""

EXECUTE_NOT_FOUND = """\
ERROR: Agent 'invalid_agent' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

Use one of the names above, or create a new agent with create_agent_config()."""

UPDATE_SUCCESS = """\
SUCCESS: Agent 'lead_qualifier' updated (v1 -> v2).

Changes applied:
  - description: "Qualifies inbound leads..." -> "Enhanced lead qualification with MEDDIC..."
  - tools: ["communication", "crm"] -> ["communication", "crm", "websearch"]
  - tags: ["sales"] -> ["sales", "meddic", "production"]

Agent Summary:
  Name: lead_qualifier
  Description: Enhanced lead qualification with MEDDIC framework
  Tools: communication, crm, websearch
  Stratum: RAI
  Version: 2
  Last Updated: 2025-01-10T09:15:00+00:00

Saved to: /path/to/outputs/agents/lead_qualifier.json"""

UPDATE_NOT_FOUND = """\
ERROR: Agent 'invalid_name' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

Use one of the names above, or create a new agent with create_agent_config()."""

UPDATE_NO_CHANGES = """\
ERROR: No changes specified for agent 'lead_qualifier'.

At least one of the following parameters must be provided:
  - description
  - system_prompt
  - tools
  - model
  - stratum
  - tags

Example:
  update_agent_config('lead_qualifier', description='New description')"""

UPDATE_VALIDATION = """\
ERROR: Update validation failed for agent 'lead_qualifier'.

Validation errors:
  - description: String should have at least 10 characters

The agent was NOT modified. Please fix the issues and try again."""

DELETE_DRY_RUN = """\
WARNING: This will permanently delete agent 'lead_qualifier'.

Agent Details:
  Description: Qualifies inbound leads by assessing BANT criteria
  Tools: communication, crm
  Stratum: RAI
  Version: 3
  Created: 2025-01-09T14:30:22+00:00
  Executions: 47 total (45 success, 2 errors)

Files to be deleted:
  - /path/to/outputs/agents/lead_qualifier.json
  - /path/to/outputs/agents/lead_qualifier_history.json

To confirm deletion, call:
  delete_agent_config('lead_qualifier', confirm=True)"""

DELETE_CONFIRMED = """\
SUCCESS: Agent 'lead_qualifier' has been permanently deleted.

Deleted files:
  - /path/to/outputs/agents/lead_qualifier.json
  - /path/to/outputs/agents/lead_qualifier_history.json

This action cannot be undone. To recreate the agent, use create_agent_config()."""

DELETE_KEEP_HISTORY = """\
SUCCESS: Agent 'lead_qualifier' configuration deleted.

Deleted files:
  - /path/to/outputs/agents/lead_qualifier.json

Preserved:
  - /path/to/outputs/agents/lead_qualifier_history.json (execution history retained)

Note: History file retained for audit purposes. Delete manually if not needed."""

DELETE_NOT_FOUND = """\
ERROR: Agent 'invalid_name' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

No files were deleted."""

CLONE_SUCCESS = """\
SUCCESS: Agent 'lead_qualifier' cloned to 'lead_qualifier_v2'.

Clone Summary:
  Source: lead_qualifier (v3)
  Target: lead_qualifier_v2 (v1)

New Agent Details:
  Name: lead_qualifier_v2
  Description: Qualifies inbound leads by assessing BANT criteria (clone)
  Tools: communication, crm
  Stratum: RAI
  Tags: sales, qualification

Metadata reset:
  - version: 1 (new)
  - created_at: 2025-01-10T10:30:00+00:00 (new)
  - execution_count: 0 (reset)
  - success_count: 0 (reset)
  - error_count: 0 (reset)

Saved to: /path/to/outputs/agents/lead_qualifier_v2.json

Next steps:
  - Use update_agent_config('lead_qualifier_v2', ...) to customize
  - Use execute_created_agent('lead_qualifier_v2', ...) to test"""

CLONE_SOURCE_NOT_FOUND = """\
ERROR: Source agent 'invalid_name' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

Use one of the names above as the source_name parameter."""

CLONE_EXISTS = """\
ERROR: Cannot clone to 'lead_qualifier' - agent already exists.

Options:
  1. Choose a different name: clone_agent_config('source', 'new_unique_name')
  2. Delete existing agent first: delete_agent_config('lead_qualifier', confirm=True)
  3. Update existing agent: update_agent_config('lead_qualifier', ...)"""

CLONE_INVALID_NAME = """\
ERROR: Invalid new_name 'Lead-Qualifier-V2'.

Name must be snake_case:
  - Only lowercase letters, numbers, and underscores
  - Must start with a letter
  - Maximum 64 characters

Example valid names: lead_qualifier_v2, research_agent_new, test_clone_1"""

SEARCH_RESULTS = """\
Search Results
==================================================

Query: "lead"
Filters: stratum=RAI, tools=[communication]
Sort: execution_count (descending)
Found: 2 agent(s)

----------------------------------------
1. lead_qualifier
   Description: Qualifies inbound leads by assessing BANT criteria
   Stratum: RAI
   Tools: communication, crm
   Tags: sales, qualification, production
   Executions: 47 (95.7% success rate)
   Created: 2025-01-09T14:30:22+00:00
   Last Updated: 2025-01-10T09:15:00+00:00

2. lead_researcher
   Description: Researches lead information before outreach
   Stratum: RAI
   Tools: communication, websearch
   Tags: sales, research
   Executions: 12 (100% success rate)
   Created: 2025-01-08T10:00:00+00:00
   Last Updated: 2025-01-08T10:00:00+00:00

==================================================
Use get_agent_config('<name>') for full details."""

SEARCH_NO_RESULTS = """\
Search Results
==================================================

Query: "nonexistent"
Filters: stratum=IGE
Found: 0 agent(s)

No agents match the search criteria.

Suggestions:
  - Broaden your search by removing filters
  - Use list_created_agents() to see all agents
  - Create a new agent with create_agent_config()

Current agents by stratum:
  - RTI: 2 agent(s)
  - RAI: 3 agent(s)
  - ZACS: 1 agent(s)
  - EEI: 0 agent(s)
  - IGE: 0 agent(s)"""

SEARCH_INVALID = """\
ERROR: Invalid search parameter.

Validation errors:
  - stratum: 'INVALID' is not a valid stratum. Use: RTI, RAI, ZACS, EEI, IGE
  - tools: 'invalid_tool' is not a valid tool. Use: voice, websearch, calendar, communication, crm
  - created_after: Invalid date format. Use ISO 8601: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS

Please fix the issues and try again."""

HISTORY_SUCCESS = """\
Execution History: lead_qualifier
==================================================

Statistics:
  Total Executions: 47
  Success Rate: 95.7% (45/47)
  Average Duration: 3.1s
  Last Executed: 2025-01-10T09:20:45+00:00

Recent Executions (showing 10 of 47):
----------------------------------------

1. [SUCCESS] 2025-01-10T09:20:45Z (3.2s)
   Task: Qualify this lead: John from Acme Corp, $50k budget
   Result: Lead qualified as HIGH priority - meets BANT criteria
   Tools: 2 calls

2. [SUCCESS] 2025-01-10T08:15:30Z (2.8s)
   Task: Qualify lead: Jane from StartupXYZ
   Result: Lead qualified as MEDIUM priority - needs budget confirmation
   Tools: 1 call

3. [ERROR] 2025-01-09T16:45:00Z (1.2s)
   Task: Qualify this lead: [corrupted data]
   Error: ExecutionError - Invalid input format
   Tools: 0 calls

...

==================================================
Full history stored in: outputs/agents/lead_qualifier_history.json"""

HISTORY_EMPTY = """\
Execution History: lead_qualifier
==================================================

No execution history found.

This agent has not been executed yet. To test it:
  execute_created_agent('lead_qualifier', 'Your test task here')"""

HISTORY_NOT_FOUND = """\
ERROR: Agent 'invalid_name' not found.

Available agents (3):
  - appointment_scheduler
  - lead_qualifier
  - research_assistant

Use one of the names above."""


# --------------------------------------------------------------------------------------------------
# The data of the examples, built through the repository with the clock set
# --------------------------------------------------------------------------------------------------

PROMPT = (
    "You are a professional lead qualification specialist. Assess budget, authority, need and "
    "timeline for every lead."
)

#: name: (description, tools, stratum, created_at) of the three agents the examples list.
EXAMPLE_AGENTS = {
    "research_assistant": (
        "Researches topics and gathers facts from the web",
        ["websearch"],
        "RTI",
        "2025-01-09T12:00:00+00:00",
    ),
    "lead_qualifier": (
        "Qualifies inbound leads by assessing BANT criteria",
        ["communication", "crm"],
        "RAI",
        "2025-01-09T14:30:22.123456+00:00",
    ),
    "appointment_scheduler": (
        "Schedules appointments and manages calendar availability",
        ["calendar", "communication"],
        "ZACS",
        "2025-01-09T15:45:10+00:00",
    ),
}


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    return tmp_path / "outputs" / "agents"


@pytest.fixture
def mirrored(store_url: str, clock: FakeClock, export_dir: Path) -> Iterator[SqlAgentRepository]:
    """A store mirrored to JSON files in ``export_dir``: the contract's file paths exist."""
    repository = open_repository(store_url, clock=clock, export_dir=export_dir)
    try:
        yield repository
    finally:
        repository.close()


class Tools:
    """The builder tools of one repository, called by name; each call returns the text."""

    def __init__(self, repo: SqlAgentRepository) -> None:
        self._tools: dict[str, BaseTool] = {t.name: t for t in make_builder_tools(repo)}

    def __call__(self, name: str, /, **arguments: object) -> str:
        text = self._tools[name].invoke(arguments)
        assert isinstance(text, str)
        return text


def at(clock: FakeClock, moment: str) -> None:
    clock.set(datetime.fromisoformat(moment))


def add_example_agents(repo: SqlAgentRepository, clock: FakeClock) -> None:
    for name, (description, tools, stratum, created) in EXAMPLE_AGENTS.items():
        at(clock, created)
        repo.create(make_config(name, description=description, tools=tools, stratum=stratum))


def record(
    repo: SqlAgentRepository,
    name: str,
    moment: str,
    *,
    success: bool = True,
    duration: float = 3.15,
    task: str = "Routine qualification",
    result: str = "Done",
    calls: int = 0,
    error_type: str | None = None,
) -> None:
    repo.record_execution(
        name,
        ExecutionRecord(
            timestamp=datetime.fromisoformat(moment),
            task=task,
            result_summary=result,
            success=success,
            duration_seconds=duration,
            tool_calls_count=calls,
            error_type=error_type,
        ),
    )


def add_runs(repo: SqlAgentRepository, name: str, successes: int, errors: int) -> None:
    """Routine runs, one a minute from 2025-01-09T00:00, the errors first."""
    for i in range(successes + errors):
        failed = i < errors
        record(
            repo,
            name,
            f"2025-01-09T{i // 60:02d}:{i % 60:02d}:00+00:00",
            success=not failed,
            error_type="ExecutionError" if failed else None,
        )


def lead_qualifier_at_v3(repo: SqlAgentRepository, clock: FakeClock) -> None:
    """The delete and clone examples' agent: version 3, 47 runs (45 success, 2 errors)."""
    add_example_agents(repo, clock)
    for prompt in (PROMPT + " Be concise.", PROMPT + " Be concise and polite."):
        repo.update("lead_qualifier", AgentUpdate(system_prompt=prompt))
    add_runs(repo, "lead_qualifier", successes=45, errors=2)


def in_dir(text: str, directory: Path) -> str:
    return text.replace(PATH, str(directory))


# --------------------------------------------------------------------------------------------------
# create_agent_config
# --------------------------------------------------------------------------------------------------


def test_create_success(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    text = Tools(mirrored)(
        "create_agent_config",
        name="lead_qualifier",
        description="Qualifies inbound leads by assessing BANT criteria",
        system_prompt=PROMPT,
        tools=["communication", "crm"],
        stratum="RAI",
        tags=["sales", "qualification", "b2b"],
    )
    assert text == in_dir(CREATE_SUCCESS, export_dir)
    assert mirrored.location_of("lead_qualifier") == str(export_dir / "lead_qualifier.json")
    assert mirrored.get("lead_qualifier").tags == ["sales", "qualification", "b2b"]


def test_create_validation_error(repo: SqlAgentRepository) -> None:
    text = Tools(repo)(
        "create_agent_config",
        name="Lead-Qualifier",
        description="Qualifies inbound leads by assessing BANT criteria",
        system_prompt=PROMPT,
    )
    assert text == CREATE_VALIDATION
    assert repo.list_names() == []


def test_create_invalid_stratum(repo: SqlAgentRepository) -> None:
    text = Tools(repo)(
        "create_agent_config",
        name="lead_qualifier",
        description="Qualifies inbound leads by assessing BANT criteria",
        system_prompt=PROMPT,
        stratum="INVALID",
    )
    assert text == CREATE_INVALID_STRATUM
    assert repo.list_names() == []


# --------------------------------------------------------------------------------------------------
# list_available_tools, get_agent_config, list_created_agents
# --------------------------------------------------------------------------------------------------


def test_list_available_tools(repo: SqlAgentRepository) -> None:
    assert Tools(repo)("list_available_tools") == AVAILABLE_TOOLS


def test_get_success(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)("get_agent_config", name="lead_qualifier")
    # Everything up to the document is the contract's text; the document is the v2 one (the
    # contract's example still shows a v1 ``_metadata``), exactly as export writes it.
    heading, document = GET_SUCCESS.split("{\n", 1)[0], text.split("Full Configuration:\n", 1)[1]
    assert text.startswith(heading)
    assert json.loads(document) == {
        "name": "lead_qualifier",
        "description": "Qualifies inbound leads by assessing BANT criteria",
        "system_prompt": PROMPT,
        "tools": ["communication", "crm"],
        "model": "anthropic:claude-opus-4-5-20251101",
        "stratum": "RAI",
        "tags": ["sales", "qualification"],
        "_metadata": {
            "created_at": "2025-01-09T14:30:22.123456+00:00",
            "updated_at": "2025-01-09T14:30:22.123456+00:00",
            "last_executed_at": None,
            "version": 1,
            "builder": "acti-agent-builder",
            "execution_count": 0,
            "success_count": 0,
            "error_count": 0,
        },
    }
    assert document == json.dumps(json.loads(document), indent=2, ensure_ascii=False)


def test_get_not_found(repo: SqlAgentRepository, clock: FakeClock) -> None:
    tools = Tools(repo)
    assert tools("get_agent_config", name="invalid_name") == GET_NOT_FOUND_EMPTY
    add_example_agents(repo, clock)
    assert tools("get_agent_config", name="invalid_name") == GET_NOT_FOUND


def test_list_created_agents(repo: SqlAgentRepository, clock: FakeClock) -> None:
    tools = Tools(repo)
    assert tools("list_created_agents") == LIST_EMPTY
    add_example_agents(repo, clock)
    assert tools("list_created_agents") == LIST_AGENTS


# --------------------------------------------------------------------------------------------------
# update_agent_config
# --------------------------------------------------------------------------------------------------


def test_update_success(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    at(clock, "2025-01-09T14:30:22.123456+00:00")
    mirrored.create(make_config(tags=["sales"]))
    at(clock, "2025-01-10T09:15:00+00:00")
    text = Tools(mirrored)(
        "update_agent_config",
        name="lead_qualifier",
        description="Enhanced lead qualification with MEDDIC framework",
        tools=["communication", "crm", "websearch"],
        tags=["sales", "meddic", "production"],
    )
    # The contract previews the old description as "Qualifies inbound leads..." but the new one
    # as "Enhanced lead qualification with MEDDIC...": no single rule gives both. Ours: whole
    # words up to 40 characters, which reproduces the second exactly.
    expected = in_dir(UPDATE_SUCCESS, export_dir).replace(
        '"Qualifies inbound leads..."', '"Qualifies inbound leads by assessing..."'
    )
    assert text == expected
    assert mirrored.get("lead_qualifier").metadata.version == 2


def test_update_not_found(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)("update_agent_config", name="invalid_name", description="A new text here")
    assert text == UPDATE_NOT_FOUND


def test_update_no_changes(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    assert Tools(repo)("update_agent_config", name="lead_qualifier") == UPDATE_NO_CHANGES
    assert repo.get("lead_qualifier").metadata.version == 1


def test_update_validation_error(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)("update_agent_config", name="lead_qualifier", description="Too short")
    assert text == UPDATE_VALIDATION
    assert repo.get("lead_qualifier").metadata.version == 1


# --------------------------------------------------------------------------------------------------
# delete_agent_config
# --------------------------------------------------------------------------------------------------


def test_delete_dry_run(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    lead_qualifier_at_v3(mirrored, clock)
    text = Tools(mirrored)("delete_agent_config", name="lead_qualifier")
    assert text == in_dir(DELETE_DRY_RUN, export_dir)
    assert mirrored.exists("lead_qualifier")
    assert mirrored.history_location_of("lead_qualifier") == str(
        export_dir / "lead_qualifier_history.json"
    )


def test_delete_confirmed(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    lead_qualifier_at_v3(mirrored, clock)
    text = Tools(mirrored)("delete_agent_config", name="lead_qualifier", confirm=True)
    assert text == in_dir(DELETE_CONFIRMED, export_dir)
    assert not mirrored.exists("lead_qualifier")
    assert mirrored.archived_history("lead_qualifier").executions == []


def test_delete_keeping_history(
    mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path
) -> None:
    lead_qualifier_at_v3(mirrored, clock)
    text = Tools(mirrored)(
        "delete_agent_config", name="lead_qualifier", confirm=True, delete_history=False
    )
    assert text == in_dir(DELETE_KEEP_HISTORY, export_dir)
    assert not mirrored.exists("lead_qualifier")
    assert mirrored.archived_history("lead_qualifier").total_executions == 47


def test_delete_not_found(mirrored: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(mirrored, clock)
    text = Tools(mirrored)("delete_agent_config", name="invalid_name", confirm=True)
    assert text == DELETE_NOT_FOUND
    assert mirrored.list_names() == sorted(EXAMPLE_AGENTS)


# --------------------------------------------------------------------------------------------------
# clone_agent_config
# --------------------------------------------------------------------------------------------------


def test_clone_success(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    lead_qualifier_at_v3(mirrored, clock)
    at(clock, "2025-01-10T10:30:00+00:00")
    text = Tools(mirrored)(
        "clone_agent_config", source_name="lead_qualifier", new_name="lead_qualifier_v2"
    )
    assert text == in_dir(CLONE_SUCCESS, export_dir)
    assert mirrored.get_history("lead_qualifier_v2").executions == []


def test_clone_source_not_found(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)("clone_agent_config", source_name="invalid_name", new_name="fresh_copy")
    assert text == CLONE_SOURCE_NOT_FOUND
    assert not repo.exists("fresh_copy")


def test_clone_target_exists(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)(
        "clone_agent_config", source_name="research_assistant", new_name="lead_qualifier"
    )
    assert text == CLONE_EXISTS
    assert repo.get("lead_qualifier").description == EXAMPLE_AGENTS["lead_qualifier"][0]


def test_clone_invalid_name(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)(
        "clone_agent_config", source_name="lead_qualifier", new_name="Lead-Qualifier-V2"
    )
    assert text == CLONE_INVALID_NAME
    assert repo.list_names() == sorted(EXAMPLE_AGENTS)


# --------------------------------------------------------------------------------------------------
# search_agents
# --------------------------------------------------------------------------------------------------


def test_search_results(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    at(clock, "2025-01-10T09:15:00+00:00")
    repo.update("lead_qualifier", AgentUpdate(tags=["sales", "qualification", "production"]))
    add_runs(repo, "lead_qualifier", successes=45, errors=2)
    at(clock, "2025-01-08T10:00:00+00:00")
    repo.create(
        make_config(
            "lead_researcher",
            description="Researches lead information before outreach",
            tools=["communication", "websearch"],
            tags=["sales", "research"],
        )
    )
    add_runs(repo, "lead_researcher", successes=12, errors=0)
    # Near misses: RAI and "lead" without communication; communication without "lead".
    repo.create(make_config("lead_scorer", description="Scores leads from CRM data", tools=["crm"]))
    text = Tools(repo)(
        "search_agents",
        query="lead",
        stratum="RAI",
        tools=["communication"],
        sort_by="execution_count",
    )
    assert text == SEARCH_RESULTS


def test_search_no_results(repo: SqlAgentRepository) -> None:
    for name, stratum in [
        ("fact_checker", "RTI"),
        ("web_researcher", "RTI"),
        ("lead_qualifier", "RAI"),
        ("lead_researcher", "RAI"),
        ("discovery_agent", "RAI"),
        ("appointment_scheduler", "ZACS"),
    ]:
        repo.create(make_config(name, stratum=stratum))
    text = Tools(repo)("search_agents", query="nonexistent", stratum="IGE")
    assert text == SEARCH_NO_RESULTS


def test_search_invalid_filter(repo: SqlAgentRepository) -> None:
    text = Tools(repo)(
        "search_agents",
        stratum="INVALID",
        tools=["invalid_tool"],
        created_after="last tuesday",
    )
    assert text == SEARCH_INVALID


# --------------------------------------------------------------------------------------------------
# get_agent_history and execute_created_agent
# --------------------------------------------------------------------------------------------------


def test_history_success(mirrored: SqlAgentRepository, clock: FakeClock, export_dir: Path) -> None:
    add_example_agents(mirrored, clock)
    add_runs(mirrored, "lead_qualifier", successes=43, errors=1)  # average 3.1s with the three
    record(
        mirrored,
        "lead_qualifier",
        "2025-01-09T16:45:00+00:00",
        success=False,
        duration=1.2,
        task="Qualify this lead: [corrupted data]",
        result="Invalid input format",
        error_type="ExecutionError",
    )
    record(
        mirrored,
        "lead_qualifier",
        "2025-01-10T08:15:30+00:00",
        duration=2.8,
        task="Qualify lead: Jane from StartupXYZ",
        result="Lead qualified as MEDIUM priority - needs budget confirmation",
        calls=1,
    )
    record(
        mirrored,
        "lead_qualifier",
        "2025-01-10T09:20:45.123456+00:00",
        duration=3.2,
        task="Qualify this lead: John from Acme Corp, $50k budget",
        result="Lead qualified as HIGH priority - meets BANT criteria",
        calls=2,
    )
    text = Tools(mirrored)("get_agent_history", name="lead_qualifier")
    # The contract elides entries 4-10 with "..." and prints a relative path; we print all ten
    # entries and the history file's location.
    shown, footer = HISTORY_SUCCESS.split("\n\n...\n\n")
    history_file = mirrored.history_location_of("lead_qualifier")
    assert history_file == str(export_dir / "lead_qualifier_history.json")
    assert text.startswith(shown + "\n\n4. [SUCCESS] 2025-01-09T00:43:00Z (3.1s)")
    assert text.endswith(footer.replace("outputs/agents/lead_qualifier_history.json", history_file))
    assert text.count("[SUCCESS]") + text.count("[ERROR]") == 10


def test_history_without_runs(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    assert Tools(repo)("get_agent_history", name="lead_qualifier") == HISTORY_EMPTY


def test_history_not_found(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    assert Tools(repo)("get_agent_history", name="invalid_name") == HISTORY_NOT_FOUND


def test_execute_not_found(repo: SqlAgentRepository, clock: FakeClock) -> None:
    add_example_agents(repo, clock)
    text = Tools(repo)("execute_created_agent", agent_name="invalid_agent", task="Say hello")
    assert text == EXECUTE_NOT_FOUND
