"""AgentRunner end to end: real MCP servers over stdio, a scripted model, a real store.

The servers in ``tests/mcp_servers`` are started with this interpreter: a CRM and a calendar that
need their credential, one that exits at startup, one that never answers. Credentials are sentinel
values that must never show up in a text, an artifact, a history record or a log line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import FakeClock
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from run_harness import SERVERS, make_agent, only_credentials, server_catalog, started_pids

from acti_store import SqlAgentRepository
from acti_store.cli import main
from acti_store.execution import (
    AgentRunner,
    McpCatalog,
    RunReport,
)
from acti_store.testing import ScriptedChatModel, Step, calls, tool_call

CRM_TOKEN = "sentinel-crm-token-5f1e9a"
GOOGLE_CREDENTIALS = "/secrets/sentinel-google-oauth-8c2d.json"
ANTHROPIC_KEY = "sentinel-anthropic-key-3b7d"
LEAD_TASK = "Qualify this lead: John from Acme Corp, $50k budget, Q2 timeline"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the sentinel credentials are set; no catalog file is configured."""
    only_credentials(monkeypatch, CRM_TOKEN, GOOGLE_CREDENTIALS)


@pytest.fixture
def starts(tmp_path: Path) -> Path:
    """The file where the CRM and calendar servers note each process start (one pid a line)."""
    return tmp_path / "starts.txt"


@pytest.fixture
def catalog(starts: Path) -> McpCatalog:
    return server_catalog(starts)


def scripted(*script: Step, delay: float = 0.0) -> ScriptedChatModel:
    return ScriptedChatModel(script=list(script), delay=delay)


def assert_gone(pid: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"MCP server process {pid} is still running after the run")


def normalised(text: str) -> str:
    return re.sub(r"(Duration(?: before error)?): \d+\.\d+s", r"\1: X.Xs", text)


def history_records(
    repo: SqlAgentRepository, name: str = "lead_qualifier"
) -> list[dict[str, object]]:
    return [r.model_dump(mode="json") for r in repo.get_history(name, limit=50).executions]


# --------------------------------------------------------------------------------------------------
# Success
# --------------------------------------------------------------------------------------------------

SUCCESS_WITH_TOOLS = f"""\
EXECUTION SUCCESS: Agent 'lead_qualifier' completed task.

Task: {LEAD_TASK}

Agent Response:
{"=" * 80}
Lead qualified as HIGH priority - meets BANT criteria
{"=" * 80}

Execution Details:
  Duration: X.Xs
  Tool Calls: 2
    1. crm_lookup_contact(company="Acme Corp") -> Found: John Smith, VP Sales (contact_id 12345)
    2. crm_get_deal_history(contact_id="12345") -> No previous deals

MCP Tools Used: crm (HubSpot)"""


async def test_success_with_tool_calls_traces_records_and_holds_one_session(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path, clock: FakeClock
) -> None:
    agent = make_agent(repo, ["crm"])
    started_at = clock.current
    model = scripted(
        calls(tool_call("crm_lookup_contact", company="Acme Corp")),
        calls(tool_call("crm_get_deal_history", contact_id="12345")),
        AIMessage("Lead qualified as HIGH priority - meets BANT criteria"),
    )

    report = await AgentRunner(repo, model=model, catalog=catalog).run(agent, LEAD_TASK)

    assert normalised(report.text) == SUCCESS_WITH_TOOLS
    artifact = report.artifact
    assert artifact["status"] == "success" and artifact["success"] is True
    assert artifact["tools_used"] == ["crm"] and artifact["degraded_mode"] is False
    assert [c["tool_name"] for c in artifact["tool_calls"]] == [
        "crm_lookup_contact",
        "crm_get_deal_history",
    ]
    assert all(c["duration_ms"] > 0 for c in artifact["tool_calls"])
    # The model saw the real tool result.
    assert isinstance(model.calls[1][-1], ToolMessage)
    assert "John Smith" in model.calls[1][-1].text
    # One server process served both calls, and it is gone after the run.
    pids = started_pids(starts)
    assert len(pids) == 1
    assert_gone(pids[0])
    # Recorded: history and counters per the Metadata Update Rules.
    (record,) = repo.get_history("lead_qualifier").executions
    assert record == report.record
    assert record.success and record.error_type is None and record.tool_calls_count == 2
    assert record.task == LEAD_TASK and record.timestamp == started_at
    assert record.result_summary == "Lead qualified as HIGH priority - meets BANT criteria"
    meta = repo.get("lead_qualifier").metadata
    assert (meta.execution_count, meta.success_count, meta.error_count) == (1, 1, 0)
    assert meta.version == 1 and meta.updated_at == agent.metadata.updated_at
    assert meta.last_executed_at == started_at


async def test_success_without_tool_calls(repo: SqlAgentRepository, catalog: McpCatalog) -> None:
    agent = make_agent(repo, ["crm"])
    model = scripted(AIMessage("Machine learning lets systems learn from data."))

    report = await AgentRunner(repo, model=model, catalog=catalog).run(agent, "Summarize ML")

    assert report.success
    assert report.text.endswith(
        "Execution Details:\n"
        f"  Duration: {report.result.duration_seconds:.1f}s\n"
        "  Tool Calls: 0 (agent used internal knowledge)\n"
        "\n"
        "MCP Tools Available: crm (not needed for this task)"
    )
    assert "crm_lookup_contact" in model.bound_tools
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.success and record.tool_calls_count == 0


# --------------------------------------------------------------------------------------------------
# Unavailable tools
# --------------------------------------------------------------------------------------------------

DEGRADED = f"""\
WARNING: Some MCP tools unavailable, proceeding with available tools.

Unavailable tools:
  - calendar: Missing credentials (GOOGLE_OAUTH_CREDENTIALS not set)

EXECUTION SUCCESS: Agent 'lead_qualifier' completed task (degraded mode).

Task: Check my availability for next week

Agent Response:
{"=" * 80}
I cannot access your calendar at the moment.
{"=" * 80}

Execution Details:
  Duration: X.Xs
  Tool Calls: 0 (calendar unavailable)
  Tools Requested: calendar, crm
  Tools Available: crm
  Tools Unavailable: calendar

Note: Agent ran in degraded mode. Set GOOGLE_OAUTH_CREDENTIALS to enable full functionality."""


async def test_degraded_mode_when_a_credential_is_missing(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_OAUTH_CREDENTIALS")
    agent = make_agent(repo, ["calendar", "crm"])
    model = scripted(AIMessage("I cannot access your calendar at the moment."))

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, "Check my availability for next week"
    )

    assert normalised(report.text) == DEGRADED
    assert report.artifact["degraded_mode"] is True
    assert report.artifact["tools_unavailable"] == ["calendar"]
    assert "calendar_check_availability" not in model.bound_tools
    assert "crm_lookup_contact" in model.bound_tools
    assert len(started_pids(starts)) == 1  # the CRM only
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.success


MISSING_TOOLS = """\
ERROR: Cannot execute agent 'lead_qualifier' - required tools unavailable.

Missing tools:
  - calendar: Missing credentials (GOOGLE_OAUTH_CREDENTIALS not set)

To fix this:
  1. Set the required environment variable: GOOGLE_OAUTH_CREDENTIALS
  2. Or use skip_unavailable_tools=True to run with available tools only

Use list_available_tools() to check current tool status."""


async def test_missing_tools_error_is_not_a_run(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_OAUTH_CREDENTIALS")
    agent = make_agent(repo, ["calendar", "crm"])
    model = scripted(AIMessage("unused"))

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, "Check my availability", skip_unavailable_tools=False
    )

    assert report.text == MISSING_TOOLS
    assert report.artifact["status"] == "error" and report.artifact["error_type"] == "mcp_error"
    assert report.record is None and model.calls == [] and started_pids(starts) == []
    assert repo.get_history("lead_qualifier").executions == []
    assert repo.get("lead_qualifier").metadata.execution_count == 0


async def test_server_that_fails_to_start_is_an_mcp_connection_error(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["communication"])
    model = scripted(AIMessage("unused"))

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, "Text John", skip_unavailable_tools=False
    )

    assert report.text.startswith(
        "ERROR: Cannot execute agent 'lead_qualifier' - MCP server connection failed.\n\n"
        "Task: Text John\n\n"
        "Failed servers:\n"
        "  - communication (Twilio): MCP server failed to start (Connection closed - fatal: "
        "cannot reach api.example.test (connection refused))\n\n"
        "Error type: MCPConnectionError\n"
    )
    assert f"Check that the MCP server starts: {sys.executable}" in report.text
    assert report.artifact["error_type"] == "mcp_error" and model.calls == []
    (record,) = repo.get_history("lead_qualifier").executions
    assert not record.success and record.error_type == "MCPConnectionError"
    assert repo.get("lead_qualifier").metadata.error_count == 1


async def test_server_that_fails_to_start_degrades_when_skipping(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["communication"])
    report = await AgentRunner(repo, model=scripted(AIMessage("Drafted.")), catalog=catalog).run(
        agent, "Text John"
    )

    assert report.success and report.result.degraded_mode
    assert "  - communication: MCP server failed to start (Connection closed" in report.text
    assert report.text.endswith(
        "Note: Agent ran in degraded mode. Check the MCP server for communication to enable full "
        "functionality."
    )


async def test_server_that_hangs_is_bounded_by_the_timeout(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["websearch"])
    began = time.monotonic()

    report = await AgentRunner(repo, model=scripted(AIMessage("x")), catalog=catalog).run(
        agent, "Research", timeout=2.0, skip_unavailable_tools=False
    )

    assert time.monotonic() - began < 4
    assert report.text.startswith(
        "ERROR: Cannot execute agent 'lead_qualifier' - MCP server connection timed out after "
        "1.0 seconds.\n\nTask: Research\n\nUnresponsive servers:\n"
        "  - websearch (Tavily): MCP server did not respond within 1.0s\n"
    )
    assert "Increase timeout: execute_created_agent(..., timeout=4.0)" in report.text
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.error_type == "MCPTimeoutError"


async def test_server_that_hangs_degrades_when_skipping(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["websearch"])
    model = scripted(AIMessage("Answered from memory."))

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, "Research", timeout=2.0
    )

    assert report.success and report.result.tools_unavailable == ["websearch"]
    assert "  - websearch: MCP server did not respond within 1.0s" in report.text
    assert report.result.response == "Answered from memory."


# --------------------------------------------------------------------------------------------------
# Timeouts and errors
# --------------------------------------------------------------------------------------------------


async def test_run_timeout_with_a_slow_tool_stops_the_server(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])
    model = scripted(calls(tool_call("crm_slow_report", seconds=30)), AIMessage("never"))
    began = time.monotonic()

    runner = AgentRunner(repo, model=model, catalog=catalog, connect_timeout=3.5)
    report = await runner.run(agent, "Build the Q2 report", timeout=4.0)

    assert time.monotonic() - began < 8
    assert report.text == (
        "ERROR: Agent execution timed out after 4.0 seconds.\n\n"
        "Task: Build the Q2 report\n\n"
        "The agent did not complete within the specified timeout. This may happen for:\n"
        "  - Complex tasks requiring multiple tool calls\n"
        "  - Slow network connections to MCP servers\n"
        "  - Large data processing operations\n\n"
        "Suggestions:\n"
        "  1. Increase timeout: execute_created_agent(..., timeout=8.0)\n"
        "  2. Simplify the task into smaller sub-tasks\n"
        "  3. Check MCP server health with /tools command"
    )
    assert report.artifact["error_type"] == "timeout"
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.error_type == "ExecutionTimeout" and record.tool_calls_count == 1
    assert 4.0 <= record.duration_seconds < 8
    assert_gone(started_pids(starts)[0])


async def test_run_timeout_with_a_slow_model(repo: SqlAgentRepository) -> None:
    agent = make_agent(repo, [])
    began = time.monotonic()

    report = await AgentRunner(repo, model=scripted(AIMessage("late"), delay=30)).run(
        agent, "Think hard", timeout=1.0
    )

    assert time.monotonic() - began < 3
    assert report.text.startswith("ERROR: Agent execution timed out after 1.0 seconds.")
    assert repo.get("lead_qualifier").metadata.error_count == 1


async def test_agent_error_reports_the_partial_trace(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["crm"])

    def fail(messages: Sequence[BaseMessage]) -> AIMessage:
        raise ValueError("Invalid input format - could not parse lead information.")

    model = scripted(calls(tool_call("crm_lookup_contact", company=None)), fail)

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, "Qualify this lead: [corrupted input]"
    )

    text = normalised(report.text)
    assert text.startswith(
        "ERROR: Agent 'lead_qualifier' encountered an error during execution.\n\n"
        "Task: Qualify this lead: [corrupted input]\n\n"
        "Error: Invalid input format - could not parse lead information.\n\n"
        "Partial execution details:\n"
        "  Duration before error: X.Xs\n"
        "  Tool Calls Attempted: 1\n"
        "    1. crm_lookup_contact(company=null) -> ERROR: "
    )
    assert text.endswith(
        "\n\nThe agent configuration may need adjustment, or the task input was malformed.\n"
        "Use get_agent_config('lead_qualifier') to review the agent's configuration."
    )
    assert report.artifact["error_type"] == "execution_error"
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.error_type == "ExecutionError" and record.tool_calls_count == 1
    assert record.result_summary == "Invalid input format - could not parse lead information."


async def test_history_keeps_50_runs_and_counters_count_all(repo: SqlAgentRepository) -> None:
    agent = make_agent(repo, [])
    runner = AgentRunner(repo, model=lambda _model: scripted(AIMessage("done")))

    for i in range(51):
        report = await runner.run(agent, f"task {i}")
        assert report.success

    history = repo.get_history("lead_qualifier", limit=50)
    assert len(history.executions) == 50 and history.total_executions == 51
    assert history.executions[0].task == "task 50" and history.executions[-1].task == "task 1"
    meta = repo.get("lead_qualifier").metadata
    assert (meta.execution_count, meta.success_count, meta.error_count) == (51, 51, 0)


# --------------------------------------------------------------------------------------------------
# The config is the source of truth; credentials stay isolated and hidden
# --------------------------------------------------------------------------------------------------


async def test_only_enabled_tools_run_and_secrets_never_leak(
    repo: SqlAgentRepository,
    catalog: McpCatalog,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ELEVENLABS_API_KEY", "sentinel-elevenlabs-key-77aa")
    agent = make_agent(repo, ["crm", "calendar"])
    model = scripted(
        calls(
            tool_call("crm_account_status"),
            tool_call("crm_credentials_seen"),
            tool_call("calendar_credentials_seen"),
            tool_call("crm_slow_report", seconds=0),
        ),
        calls(tool_call("text_to_speech", text=f"my token is {CRM_TOKEN}")),
        lambda messages: AIMessage(" / ".join(m.text for m in messages[-5:])),
    )

    report = await AgentRunner(repo, model=model, catalog=catalog).run(
        agent, f"Check the account (token {CRM_TOKEN})"
    )

    assert report.success
    status, crm_seen, calendar_seen, _, refused = report.result.tool_calls
    # The voice category is not in the agent's config: its tool is refused, and logged.
    assert refused.tool_name == "text_to_speech" and refused.result is None
    assert (
        refused.error is not None and "is not enabled for agent 'lead_qualifier'" in refused.error
    )
    assert "refused call to tool 'text_to_speech'" in caplog.text
    assert "text_to_speech" not in model.bound_tools
    # Each server saw its own credential and no other.
    assert json.loads(crm_seen.result or "") == ["PRIVATE_APP_ACCESS_TOKEN"]
    assert json.loads(calendar_seen.result or "") == ["GOOGLE_OAUTH_CREDENTIALS"]
    # The CRM server quoted its token in an error: scrubbed everywhere, before the model too.
    assert status.error is not None and "[redacted]" in status.error
    tool_results_seen_by_model = [
        m.text for call in model.calls for m in call if isinstance(m, ToolMessage)
    ]
    outputs = [
        report.text,
        json.dumps(report.artifact),
        json.dumps(history_records(repo)),
        caplog.text,
        json.dumps(tool_results_seen_by_model),
    ]
    for output in outputs:
        for secret in (CRM_TOKEN, GOOGLE_CREDENTIALS, ANTHROPIC_KEY):
            assert secret not in output


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


async def test_missing_model_key_is_not_a_run(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])

    report = await AgentRunner(repo, catalog=catalog).run(agent, "Qualify John")

    assert report.text == (
        "ERROR: Cannot execute agent 'lead_qualifier' - model unavailable.\n\n"
        "Model: anthropic:claude-opus-4-5-20251101\n"
        "Problem: Missing credentials (ANTHROPIC_API_KEY not set)\n\n"
        "To fix this:\n"
        "  1. Set the required environment variable: ANTHROPIC_API_KEY\n"
        "  2. Or choose another model: update_agent_config('lead_qualifier', "
        "model='provider:model')"
    )
    assert report.artifact["error_type"] == "model_error" and report.record is None
    assert started_pids(starts) == [] and repo.get_history("lead_qualifier").executions == []


async def test_agent_model_string_goes_to_init_chat_model(
    repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    requested: list[str] = []

    def init_chat_model(model: str) -> ScriptedChatModel:
        requested.append(model)
        return scripted(AIMessage("hello"))

    monkeypatch.setattr("acti_store.execution.runner.init_chat_model", init_chat_model)
    agent = make_agent(repo, [])

    report = await AgentRunner(repo).run(agent, "Say hello")

    assert report.success and requested == ["anthropic:claude-opus-4-5-20251101"]


def test_run_sync_without_an_event_loop(repo: SqlAgentRepository) -> None:
    agent = make_agent(repo, [])
    report = AgentRunner(repo, model=scripted(AIMessage("sync"))).run_sync(agent, "Go")
    assert isinstance(report, RunReport) and report.result.response == "sync"


async def test_run_sync_inside_a_running_loop(repo: SqlAgentRepository) -> None:
    agent = make_agent(repo, [])
    report = AgentRunner(repo, model=scripted(AIMessage("threaded"))).run_sync(agent, "Go")
    assert report.result.response == "threaded"


@pytest.mark.parametrize(("task", "timeout"), [("", 60.0), ("x" * 10_001, 60.0), ("ok", 0.5)])
async def test_task_and_timeout_outside_the_contract_are_refused(
    repo: SqlAgentRepository, task: str, timeout: float
) -> None:
    agent = make_agent(repo, [])
    with pytest.raises(ValueError):
        await AgentRunner(repo, model=scripted()).run(agent, task, timeout=timeout)
    assert repo.get_history("lead_qualifier").executions == []


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 300.5, 0.999])
def test_a_timeout_that_is_not_a_number_within_the_range_is_refused_before_running(
    repo: SqlAgentRepository, timeout: float
) -> None:
    agent = make_agent(repo, [])
    model = scripted(AIMessage("never"))
    with pytest.raises(ValueError, match="timeout"):
        AgentRunner(repo, model=model).run_sync(agent, "Go", timeout=timeout)
    assert model.calls == []
    assert repo.get_history("lead_qualifier").executions == []


@pytest.mark.parametrize("timeout", [None, 300, 1])
def test_the_bounds_of_the_timeout_and_none_for_the_default_are_accepted(
    repo: SqlAgentRepository, timeout: float | None
) -> None:
    agent = make_agent(repo, [])
    report = AgentRunner(repo, model=scripted(AIMessage("in time"))).run_sync(
        agent, "Go", timeout=timeout
    )
    # A run that started is recorded (success, or a timeout on a machine slower than 1 second).
    assert report.record is not None
    assert repo.get_history("lead_qualifier").executions == [report.record]


# --------------------------------------------------------------------------------------------------
# acti-store run
# --------------------------------------------------------------------------------------------------


def test_cli_run_prints_the_report(
    repo: SqlAgentRepository,
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "mcp.toml"
    config.write_text(
        "[categories.crm]\n"
        'provider = "HubSpot"\n'
        'env = ["PRIVATE_APP_ACCESS_TOKEN"]\n'
        "[categories.crm.connection]\n"
        'transport = "stdio"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVERS / 'crm_server.py'))}]\n"
    )
    make_agent(repo, ["crm"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setattr(
        "acti_store.execution.runner.init_chat_model",
        lambda model: scripted(
            calls(tool_call("crm_lookup_contact", company="Acme Corp")), AIMessage("Qualified.")
        ),
    )
    argv = ["run", "lead_qualifier", LEAD_TASK, "--url", store_url, "--timeout", "20"]

    assert main([*argv, "--mcp-config", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("EXECUTION SUCCESS: Agent 'lead_qualifier' completed task.")
    assert '1. crm_lookup_contact(company="Acme Corp") -> Found: John Smith' in out

    monkeypatch.delenv("PRIVATE_APP_ACCESS_TOKEN")
    assert main([*argv, "--mcp-config", str(config), "--no-skip-unavailable"]) == 1
    out, err = capsys.readouterr()  # an error: one line on stderr, in the command line's terms
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: Cannot execute agent 'lead_qualifier' - required tools")
    assert "PRIVATE_APP_ACCESS_TOKEN" in err
    assert "Or leave out --no-skip-unavailable to run with the available tools only" in err
    assert err.endswith(
        "Check the MCP catalog (--mcp-config FILE, else $ACTI_STORE_MCP_CONFIG) "
        "for the categories' servers.\n"
    )
    assert "skip_unavailable_tools" not in err and "list_available_tools" not in err
    assert repo.get("lead_qualifier").metadata.execution_count == 1


async def test_a_category_missing_from_the_catalog_is_logged_and_never_exposed(
    repo: SqlAgentRepository, caplog: pytest.LogCaptureFixture
) -> None:
    agent = make_agent(repo, ["crm"])
    model = scripted(AIMessage("No CRM today."))

    report = await AgentRunner(repo, model=model, catalog=McpCatalog({})).run(agent, "Look up")

    assert report.success and report.result.tools_unavailable == ["crm"]
    assert "  - crm: No MCP server configured for this category" in report.text
    assert "which the MCP catalog does not know" in caplog.text
    assert not any(name.startswith("crm") for name in model.bound_tools)
