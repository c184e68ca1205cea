"""Every text the builder tools print, each defined once: the contract's templates.

Templates are ``str.format`` strings; user data only ever goes into the arguments, never into a
template. Limits and choices come from ``acti_store.models`` and are filled in here, once, so a
template can never disagree with the rule it describes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, NamedTuple

from ..models import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    NAME_MAX_LENGTH,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TOOL_CATEGORIES,
    UPDATABLE_FIELDS,
)

RULE: Final = "=" * 50
THIN_RULE: Final = "-" * 40
#: Shown where a value is empty or not set (no tools, no stratum, no tags).
NONE: Final = "(none)"
#: The group of agents without a stratum, listed after the strata.
UNCLASSIFIED: Final = "UNCLASSIFIED"
#: How many names a "not found" text lists before it summarises the rest.
NOT_FOUND_NAMES_SHOWN: Final = 50
#: Longest preview of a text value in "Changes applied" (whole words, then "...").
CHANGE_PREVIEW_LENGTH: Final = 40
#: How far before the first difference a preview of two texts that begin alike starts (it
#: starts at a word).
CHANGE_CONTEXT_LENGTH: Final = 15
#: Longest user value quoted back in an error text.
QUOTED_VALUE_LENGTH: Final = 80
#: Longest single validation message line.
ERROR_MESSAGE_LENGTH: Final = 300
#: How many agents list_created_agents shows per stratum before summarising the rest.
LIST_AGENTS_PER_STRATUM: Final = 20
#: Most characters of entries in one text about many agents or records: search results and
#: history records stop before passing it; list_created_agents shares it among its groups.
ENTRIES_BUDGET: Final = 24_000
#: Most characters of JSON get_agent_config shows of a system prompt (the artifact has it all).
PROMPT_SHOWN_LENGTH: Final = 20_000


def _bullets(lines: Iterable[str]) -> str:
    return "\n".join(f"  - {line}" for line in lines)


#: The strata with their meanings, one bullet each (error texts, tool descriptions, the prompt).
STRATA_LINES: Final = _bullets(f"{code}: {meaning}" for code, meaning in STRATA.items())


# --------------------------------------------------------------------------------------------------
# How a text names the next step: a tool call for the model, a command for a person
# --------------------------------------------------------------------------------------------------


class Calls(NamedTuple):
    """The "how to call it" fragments the templates take: one table per kind of reader.

    Each fragment is a template of its own: ``{name}`` is the agent's name (validated snake_case)
    ``{keep_history}`` the ``keep_history`` fragment or nothing, ``{stratum}`` a stratum to search
    (the list's "and N more" lines). ``fill`` formats them all, and
    the templates below take the result as arguments (``{show}``, ``{create}``, ...).
    """

    show: str
    show_any: str
    create: str
    update: str
    update_example: str
    updatable: str
    delete: str
    confirm_delete: str
    keep_history: str
    clone: str
    source_parameter: str
    execute: str
    execute_example: str
    runtime: str
    search: str
    search_stratum: str
    list: str
    first_agent: str
    #: Not a template but a value the fragments take as ``{program}``: the command a printed
    #: command starts with, with the options that chose the store, schema and tenant
    #: (``acti_store.cli.confirm``).
    program: str = "acti-store"
    #: Not a template but a value: ``{code}``, the code of a printed confirmation (``--confirm
    #: CODE``), bound to what the text shows (``acti_store.cli.confirm``).
    code: str = ""

    def fill(
        self, name: str = "", *, keep_history: bool = False, stratum: str = ""
    ) -> dict[str, str]:
        """Every fragment with ``name`` (and the keep-history fragment if asked) filled in."""
        values = {
            "name": name,
            "keep_history": self.keep_history if keep_history else "",
            "stratum": stratum,
            "program": self.program,
            "code": self.code,
        }
        return {
            field: getattr(self, field).format(**values)
            for field in self._fields
            if field not in CALL_VALUES
        }


#: The fields of ``Calls`` (and ``VersionCalls``) that are values, not templates.
CALL_VALUES: Final = frozenset({"program", "code"})


#: The builder tools' wording (the contract's): calls of the tools, for the model.
TOOL_CALLS: Final = Calls(
    show="get_agent_config('{name}')",
    show_any="get_agent_config('<name>')",
    create="create_agent_config()",
    update="update_agent_config('{name}', ...)",
    update_example="update_agent_config('{name}', description='New description')",
    updatable="At least one of the following parameters must be provided:\n"
    + _bullets(UPDATABLE_FIELDS),
    delete="delete_agent_config('{name}', confirm=True)",
    confirm_delete="To confirm deletion, call:\n  delete_agent_config('{name}', confirm=True"
    "{keep_history})",
    keep_history=", delete_history=False",
    clone="clone_agent_config('source', 'new_unique_name')",
    source_parameter="the source_name parameter",
    execute="execute_created_agent('{name}', ...)",
    execute_example="execute_created_agent('{name}', 'Your test task here')",
    runtime="The agent can be instantiated with MCP tools using the FastAPI backend",
    search="search_agents()",
    search_stratum='search_agents(stratum="{stratum}")',
    list="list_created_agents()",
    first_agent="""To create your first agent:
  1. Call list_available_tools() to see available tool options
  2. Call create_agent_config() with the agent's details

Example:
  create_agent_config(
    name='my_first_agent',
    description='A helpful agent that...',
    system_prompt='You are...',
    tools=['websearch'],
    stratum='RTI'
  )""",
)

#: The wording of ``acti-store``: the commands a person runs (names are snake_case: no quoting),
#: each starting with ``{program}``. A preview's command confirms with ``--confirm {code}``; the
#: clone refusal's delete is the preview, which prints the confirmation.
CLI_CALLS: Final = Calls(
    show="{program} show {name}",
    show_any="{program} show NAME",
    create="{program} create FILE",
    update="{program} update {name} ...",
    update_example='{program} update {name} --description "New description"',
    updatable="At least one of the following options must be given:\n"
    + _bullets(
        (
            "--description",
            "--system-prompt",
            "--tools",
            "--model",
            "--stratum",
            "--add-tag",
            "--remove-tag",
        )
    ),
    delete="{program} delete {name}",
    confirm_delete="To confirm deletion, run:\n  {program} delete {name}{keep_history} "
    "--confirm {code}",
    keep_history=" --keep-history",
    clone="{program} clone SOURCE NEW_NAME",
    source_parameter="SOURCE",
    execute='{program} run {name} "TASK"',
    execute_example='{program} run {name} "Your test task here"',
    runtime='Run it with its MCP tools: {program} run {name} "TASK"',
    search="{program} search",
    search_stratum="{program} search --stratum {stratum}",
    list="{program} list",
    first_agent="""To create your first agent, write its configuration to a JSON file (an exported
{{name}}.json works too) and run: {program} create FILE

Example my_first_agent.json:
  {{
    "name": "my_first_agent",
    "description": "Researches topics on the web",
    "system_prompt": "You are a research assistant. Search the web and answer with sources.",
    "tools": ["websearch"],
    "stratum": "RTI"
  }}""",
)


# --------------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------------

VALIDATION_ERROR_LINE: Final = "  - {field}: {message}"

NOT_FOUND: Final = "ERROR: Agent '{name}' not found."
SOURCE_NOT_FOUND: Final = "ERROR: Source agent '{name}' not found."
AVAILABLE_AGENTS: Final = "Available agents ({count}):\n{names}"
AVAILABLE_AGENT_LINE: Final = "  - {name}"
MORE_AGENTS_LINE: Final = "  ... and {count} more (use {search} to find one)"
MORE_IN_STRATUM_LINE: Final = "  ... and {count} more (use {search_stratum} to see them)"
NO_AGENTS_YET: Final = "No agents have been created yet. Use {create} to create one."
USE_NAMES_OR_CREATE: Final = "Use one of the names above, or create a new agent with {create}."
USE_NAMES_AS_SOURCE: Final = "Use one of the names above as {source_parameter}."
USE_NAMES: Final = "Use one of the names above."

INVALID_NAME: Final = f"""ERROR: Invalid {{parameter}} '{{value}}'.

Name must be snake_case:
  - Only lowercase letters, numbers, and underscores
  - Must start with a letter
  - Maximum {NAME_MAX_LENGTH} characters

Example valid names: lead_qualifier_v2, research_agent_new, test_clone_1"""

INVALID_PARAMETERS: Final = """ERROR: Invalid {subject} parameter.

Validation errors:
{errors}

Please fix the issues and try again."""

INVALID_ARGUMENTS: Final = """ERROR: Invalid arguments for {tool}.

Validation errors:
{errors}

Please fix the issues and try again."""

NOT_UNICODE: Final = "text must be valid Unicode (it contains a lone surrogate)"

#: A store error trying again can help with (a lock, a lost connection, a conflict).
STORE_ERROR: Final = """ERROR: The agent store could not complete the request.

Reason: {reason}

Nothing was changed. This is temporary: try again in a moment; if it keeps failing, report the \
reason to the user."""

#: A store error that lasts (a corrupt or read-only file, a full disk, no permission, ...).
STORE_ERROR_LASTING: Final = """ERROR: The agent store could not complete the request.

Reason: {reason}

Nothing was changed. Trying again will not help: the store itself needs attention. Tell the \
user the reason above; do not retry this request until it is fixed."""

#: How to install the ``agents`` extra (deepagents, LangChain, MCP): one text for every message.
INSTALL_AGENTS_EXTRA: Final = 'pip install "acti-store[agents]"'
AGENTS_EXTRA_MISSING: Final = (
    "ERROR: Cannot execute agent '{name}' - the agent runtime is not installed.\n\n"
    "Reason: {reason}\n\n"
    f"Install it with: {INSTALL_AGENTS_EXTRA}"
)
#: What ``create_builder_agent`` raises (``MissingExtraError``) without the ``agents`` extra.
BUILDER_AGENT_NEEDS_EXTRA: Final = (
    f"create_builder_agent needs the agents extra ({{reason}}): {INSTALL_AGENTS_EXTRA}"
)

# --------------------------------------------------------------------------------------------------
# create_agent_config
# --------------------------------------------------------------------------------------------------

CREATED: Final = """SUCCESS: Agent configuration created and saved!

Agent Summary:
  Name: {name}
  Description: {description}
  Tools: {tools}
  Stratum: {stratum}
  Model: {model}

Saved to: {location}

Next steps:
  - Use {show} to review the full configuration
  - {runtime}"""

CONFIG_REQUIREMENTS: Final = _bullets(
    [
        "name: snake_case (lowercase, numbers, underscores, starts with letter)",
        f"description: {DESCRIPTION_MIN_LENGTH}-{DESCRIPTION_MAX_LENGTH} characters",
        f"system_prompt: minimum {SYSTEM_PROMPT_MIN_LENGTH} characters",
        f"tools: valid options are [{', '.join(TOOL_CATEGORIES)}]",
    ]
)

CONFIG_INVALID: Final = f"""ERROR: Agent configuration validation failed.

Validation errors:
{{errors}}

Requirements:
{CONFIG_REQUIREMENTS}

Please fix the issues and try again."""

INVALID_STRATUM: Final = f"""ERROR: Invalid stratum '{{value}}'.

Valid stratum options:
{STRATA_LINES}

Please use one of: {", ".join(STRATA)}"""

ALREADY_EXISTS: Final = """ERROR: Agent '{name}' already exists.

Options:
  1. Choose a different name
  2. Review the existing agent: {show}
  3. Update the existing agent: {update}
  4. Delete the existing agent first: {delete}"""

# --------------------------------------------------------------------------------------------------
# list_available_tools
# --------------------------------------------------------------------------------------------------


class CategoryGuide(NamedTuple):
    """What ``list_available_tools`` says about one MCP tool category."""

    summary: str
    capabilities: tuple[str, ...]
    best_for: tuple[str, ...]
    use_cases: str


class StratumGuide(NamedTuple):
    """What ``list_available_tools`` says about one ACTi stratum."""

    purpose: str
    recommended_tools: str
    examples: str


CATEGORY_GUIDES: Final[Mapping[str, CategoryGuide]] = {
    "voice": CategoryGuide(
        "Text-to-speech, voice synthesis (ElevenLabs)",
        (
            "Generate spoken audio from text",
            "Clone and customize voices",
            "Real-time voice synthesis for calls",
        ),
        ("ZACS", "RAI"),
        "Customer-facing agents, accessibility, audio content",
    ),
    "websearch": CategoryGuide(
        "Web research, fact-finding (Tavily)",
        (
            "Search the web for current information",
            "Research topics and gather facts",
            "Find documentation and references",
        ),
        ("RTI", "EEI"),
        "Research agents, fact-checkers, information gatherers",
    ),
    "calendar": CategoryGuide(
        "Scheduling, availability checks (Google Calendar)",
        (
            "Check availability and schedule meetings",
            "Create, update, and delete calendar events",
            "Send calendar invitations",
        ),
        ("ZACS",),
        "Scheduling agents, appointment setters, coordinators",
    ),
    "communication": CategoryGuide(
        "SMS, calls (Twilio)",
        (
            "Send SMS messages",
            "Make and receive phone calls",
            "Manage communication workflows",
        ),
        ("RAI", "ZACS"),
        "Outreach agents, follow-up agents, notification systems",
    ),
    "crm": CategoryGuide(
        "Contact management, deals (HubSpot)",
        (
            "Access and update contact records",
            "Manage deals and pipelines",
            "Track customer interactions",
        ),
        ("RTI", "RAI", "EEI"),
        "Sales agents, customer service, data management",
    ),
}

STRATUM_GUIDES: Final[Mapping[str, StratumGuide]] = {
    "RTI": StratumGuide(
        "Data gathering, fact verification, research",
        "websearch, crm",
        "Research assistant, fact-checker, data gatherer",
    ),
    "RAI": StratumGuide(
        "Lead qualification, rapport building, discovery",
        "communication, crm",
        "Lead qualifier, discovery agent, SDR assistant",
    ),
    "ZACS": StratumGuide(
        "Scheduling, conversions, follow-ups, closings",
        "calendar, communication, voice",
        "Appointment scheduler, closer, follow-up agent",
    ),
    "EEI": StratumGuide(
        "Analytics, market research, optimization",
        "websearch, crm",
        "Market analyst, pipeline optimizer, trend tracker",
    ),
    "IGE": StratumGuide(
        "Compliance, quality control, auditing",
        "all (for comprehensive auditing)",
        "Compliance checker, QA agent, audit assistant",
    ),
}

if set(CATEGORY_GUIDES) != set(TOOL_CATEGORIES) or set(STRATUM_GUIDES) != set(STRATA):
    raise RuntimeError("every tool category and stratum needs its guide")  # pragma: no cover

CATEGORY_ENTRY: Final = """  {name}
    {summary}
    Capabilities:
{capabilities}
    Best for strata: {best_for}
    Use cases: {use_cases}"""

STRATUM_ENTRY: Final = """  {code} ({title})
    Purpose: {purpose}
    Recommended tools: {recommended_tools}
    Example agents: {examples}"""

AVAILABLE_TOOLS: Final = f"""Available MCP Tool Categories
{RULE}

{{categories}}

{RULE}
ACTi Stratum Reference & Tool Recommendations
{RULE}

{{strata}}"""

# --------------------------------------------------------------------------------------------------
# get_agent_config
# --------------------------------------------------------------------------------------------------

AGENT_CONFIG: Final = f"""Agent Configuration: {{name}}
{RULE}

Quick Summary:
  Tools: {{tools}}
  Stratum: {{stratum}}
  Model: {{model}}

Full Configuration:
{{document}}"""

# --------------------------------------------------------------------------------------------------
# list_created_agents
# --------------------------------------------------------------------------------------------------

AGENT_LIST: Final = f"""Created Agents
{RULE}

{{groups}}

{RULE}
Total: {{total}} agent(s)

Use {{show_any}} to see full configuration details."""

AGENT_GROUP: Final = f"""[{{label}}] ({{count}} agent(s))
{THIN_RULE}
{{entries}}"""

AGENT_LIST_ENTRY: Final = """  {name}
    Description: {description}
    Tools: {tools}
    Created: {created}"""

PROMPT_CUT_NOTE: Final = (
    "Note: the system_prompt has {length} characters; only its beginning is shown above."
)

NO_AGENTS: Final = """No agents have been created yet.

{first_agent}"""

# --------------------------------------------------------------------------------------------------
# update_agent_config
# --------------------------------------------------------------------------------------------------

UPDATED: Final = """SUCCESS: Agent '{name}' updated (v{old_version} -> v{new_version}).

Changes applied:
{changes}

Agent Summary:
  Name: {name}
  Description: {description}
  Tools: {tools}
  Stratum: {stratum}
  Version: {new_version}
  Last Updated: {updated}

Saved to: {location}"""

CHANGE_LINE: Final = "  - {field}: {old} -> {new}"
NO_VALUE_CHANGED: Final = "  - none: every value given equals the current one"

NO_CHANGES: Final = """ERROR: No changes specified for agent '{name}'.

{updatable}

Example:
  {update_example}"""

UPDATE_INVALID: Final = """ERROR: Update validation failed for agent '{name}'.

Validation errors:
{errors}

The agent was NOT modified. Please fix the issues and try again."""

# --------------------------------------------------------------------------------------------------
# delete_agent_config
# --------------------------------------------------------------------------------------------------

DELETE_PREVIEW: Final = """WARNING: This will permanently delete agent '{name}'.

Agent Details:
  Description: {description}
  Tools: {tools}
  Stratum: {stratum}
  Version: {version}
  Created: {created}
  Executions: {executions} total ({successes} success, {errors} errors)

{targets}

{confirm_delete}"""

KEEP_HISTORY_ARGUMENT: Final = ", delete_history=False"

DELETED: Final = """SUCCESS: Agent '{name}' has been permanently deleted.

{targets}

This action cannot be undone. To recreate the agent, use {create}."""

DELETED_KEEPING_HISTORY: Final = """SUCCESS: Agent '{name}' configuration deleted.

{targets}

{note}"""


class DeleteWording(NamedTuple):
    """How the delete texts name what is deleted: mirror files, or records in the store."""

    to_delete: str
    deleted: str
    config_item: str
    history_item: str
    preserved: str
    note: str
    nothing_deleted: str
    #: The agent's versions (``{versions}``: ``3 versions (v1-v3)``), deleted with its history
    #: or archived beside it; "" where the wording names files only (the contract's).
    versions_item: str = ""
    #: The agent's labels (``{labels}``: ``production -> v2, staging -> v3``), always deleted.
    labels_item: str = ""
    #: The versions archived with a kept history, in the preserved list.
    versions_preserved: str = ""


#: With a file mirror: the contract's wording, naming the files.
FILE_WORDING: Final = DeleteWording(
    to_delete="Files to be deleted:",
    deleted="Deleted files:",
    config_item="  - {config}",
    history_item="  - {history}",
    preserved="Preserved:\n  - {history} (execution history retained)",
    note="Note: History file retained for audit purposes. Delete manually if not needed.",
    nothing_deleted="No files were deleted.",
)

#: Without a mirror the records live only in the store: name it, and the records.
STORE_WORDING: Final = DeleteWording(
    to_delete="Records to be deleted from the store at {location}:",
    deleted="Deleted from the store at {location}:",
    config_item="  - agent configuration '{name}'",
    history_item="  - execution history of '{name}'",
    preserved="Preserved:\n  - execution history of '{name}' (archived in the store)",
    note="Note: History archived in the store for audit purposes.",
    nothing_deleted="Nothing was deleted.",
    versions_item="  - its {versions}",
    labels_item="  - its labels: {labels}",
    versions_preserved="  - its {versions}, archived with it",
)

#: How a delete text counts an agent's versions: ``3 versions (v1-v3)``, ``1 version (v1)``.
VERSION_COUNT: Final = "{count} version{s} ({numbers})"
#: A label and the version it points at (its largest share's, for a split).
LABEL_TARGET: Final = "{label} -> v{version}"

# --------------------------------------------------------------------------------------------------
# clone_agent_config
# --------------------------------------------------------------------------------------------------

CLONED: Final = """SUCCESS: Agent '{source}' cloned to '{name}'.

Clone Summary:
  Source: {source} (v{source_version})
  Target: {name} (v{version})

New Agent Details:
  Name: {name}
  Description: {description}
  Tools: {tools}
  Stratum: {stratum}
  Tags: {tags}

Metadata reset:
  - version: {version} (new)
  - created_at: {created} (new)
  - execution_count: {execution_count} (reset)
  - success_count: {success_count} (reset)
  - error_count: {error_count} (reset)

Saved to: {location}

Next steps:
  - Use {update} to customize
  - Use {execute} to test"""

CLONE_TARGET_EXISTS: Final = """ERROR: Cannot clone to '{name}' - agent already exists.

Options:
  1. Choose a different name: {clone}
  2. Delete existing agent first: {delete}
  3. Update existing agent: {update}"""

CLONE_INVALID: Final = """ERROR: Cannot clone '{source}' to '{name}' - validation failed.

Validation errors:
{errors}

No agent was created. Please fix the issues and try again."""

# --------------------------------------------------------------------------------------------------
# search_agents
# --------------------------------------------------------------------------------------------------

SEARCH_HEADER: Final = f"Search Results\n{RULE}"
SEARCH_QUERY_LINE: Final = 'Query: "{query}"'
SEARCH_FILTERS_LINE: Final = "Filters: {filters}"
SEARCH_SORT_LINE: Final = "Sort: {field} ({direction})"
SEARCH_FOUND_LINE: Final = "Found: {count} agent(s)"

SEARCH_RESULT: Final = """{rank}. {name}
   Description: {description}
   Stratum: {stratum}
   Tools: {tools}
   Tags: {tags}
   Executions: {executions}
   Created: {created}
   Last Updated: {updated}"""

SEARCH_RESULTS_FOOTER: Final = f"""{RULE}
Use {{show_any}} for full details."""

SEARCH_NO_RESULTS: Final = """No agents match the search criteria.

Suggestions:
  - Broaden your search by removing filters
  - Use {list} to see all agents
  - Create a new agent with {create}

Current agents by stratum:
{counts}"""

SEARCH_MORE_LINE: Final = (
    "... and {count} more result(s) not shown (this text has room for {shown}): "
    "lower the limit or narrow the search to see them."
)
STRATUM_COUNT_LINE: Final = "  - {label}: {count} agent(s)"
EXECUTIONS_WITH_RATE: Final = "{count} ({rate}% success rate)"

# --------------------------------------------------------------------------------------------------
# get_agent_history
# --------------------------------------------------------------------------------------------------

HISTORY_HEADER: Final = f"Execution History: {{name}}\n{RULE}"

HISTORY_STATISTICS: Final = """Statistics:
  Total Executions: {total}
  Success Rate: {rate}% ({successes}/{total})
  Average Duration: {average}
  Last Executed: {last_executed}"""

HISTORY_RECENT: Final = "Recent Executions (showing {shown} of {total}):"
HISTORY_RECENT_ERRORS: Final = "Recent Failed Executions (showing {shown} of {total} errors):"
HISTORY_MORE_LINE: Final = (
    "... and {count} older record(s) not shown (this text has room for {shown})."
)
HISTORY_NO_ERRORS: Final = "No failed executions found."

HISTORY_SUCCESS_ENTRY: Final = """{rank}. [SUCCESS] {timestamp} ({duration})
   Task: {task}
   Result: {result}
   Tools: {calls}"""

HISTORY_ERROR_ENTRY: Final = """{rank}. [ERROR] {timestamp} ({duration})
   Task: {task}
   Error: {error}
   Tools: {calls}"""

HISTORY_FOOTER: Final = f"""{RULE}
Full history stored in: {{location}}"""

NO_HISTORY: Final = """No execution history found.

This agent has not been executed yet. To test it:
  {execute_example}"""
