"""A long-lived AgentRunner (``keep_servers``): warm MCP sessions reused and shared by runs.

Real MCP servers over stdio (``tests/mcp_servers``), a scripted model, a real store on each
engine. The CRM and calendar servers append their process id to a file when they start, so each
test counts the processes started and checks by PID that none is left behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from langchain_core.messages import AIMessage
from run_harness import (
    SERVERS,
    make_agent,
    only_credentials,
    server_catalog,
    started_pids,
    stdio,
)

from acti_store import SqlAgentRepository, open_repository
from acti_store.execution import (
    AgentRunner,
    McpCatalog,
    RunnerClosedError,
)
from acti_store.execution.pool import session_key
from acti_store.testing import ScriptedChatModel, calls, tool_call
from acti_store.tools import make_builder_tools

CRM_TOKEN = "sentinel-crm-token-warm-1a2b3c"
OTHER_CRM_TOKEN = "sentinel-crm-token-other-9z8y7x"
GOOGLE_CREDENTIALS = "/secrets/sentinel-google-warm-4d5e.json"
LOOKUP = "Found: John Smith, VP Sales (contact_id 12345)"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the sentinel credentials are set; no catalog file is configured."""
    only_credentials(monkeypatch, CRM_TOKEN, GOOGLE_CREDENTIALS)


@pytest.fixture
def starts(tmp_path: Path) -> Path:
    return tmp_path / "starts.txt"


@pytest.fixture
def catalog(starts: Path) -> McpCatalog:
    return server_catalog(starts)


def lookup_model(_model: str = "") -> ScriptedChatModel:
    """A model that looks John up in the CRM, then answers with what the tool said."""
    return ScriptedChatModel(
        script=[
            calls(tool_call("crm_lookup_contact", company="Acme Corp")),
            lambda messages: AIMessage(messages[-1].text),
        ]
    )


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while running(pid):
        if time.monotonic() > deadline:
            pytest.fail(f"MCP server process {pid} is still running")
        time.sleep(0.05)


def server_children() -> list[psutil.Process]:
    """This process's MCP server children still running (test servers, by script name)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            # A server's script is an argument of its own (a forkserver's sys.path is not).
            if child.status() != psutil.STATUS_ZOMBIE and any(
                Path(part).parent == SERVERS for part in child.cmdline()
            ):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


# --------------------------------------------------------------------------------------------------
# Reuse, sharing and shutdown
# --------------------------------------------------------------------------------------------------


async def test_runs_reuse_one_warm_server_and_aclose_stops_it(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])
    async with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=60) as runner:
        reports = [await runner.run(agent, f"Qualify John, take {i}") for i in range(3)]
        (pid,) = started_pids(starts)
        assert running(pid)  # kept between runs

    assert [r.result.response for r in reports] == [LOOKUP] * 3
    assert all(r.result.tool_calls[0].result == LOOKUP for r in reports)
    assert started_pids(starts) == [pid]
    wait_gone(pid)  # aclose() waited for it: already gone, checked by PID
    assert repo.get_history("lead_qualifier").total_executions == 3
    with pytest.raises(RunnerClosedError):
        await runner.run(agent, "One more")


async def test_concurrent_runs_share_one_session_per_server(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agents = [make_agent(repo, ["crm", "calendar"], f"agent_{i}") for i in range(5)]

    def slow_model(_model: str) -> ScriptedChatModel:
        return ScriptedChatModel(
            script=[
                calls(tool_call("crm_slow_report", seconds=1.0)),
                calls(tool_call("calendar_check_availability", day="Monday")),
                AIMessage("done"),
            ]
        )

    async with AgentRunner(repo, model=slow_model, catalog=catalog, keep_servers=60) as runner:
        began = time.monotonic()
        reports = await asyncio.gather(
            *(runner.run(agents[i % 5], f"Report {i}", timeout=120) for i in range(20))
        )
        elapsed = time.monotonic() - began
        pids = started_pids(starts)

    assert all(r.success for r in reports), [r.text for r in reports if not r.success]
    assert all(r.result.tool_calls[0].result == "report ready" for r in reports)
    assert len(pids) == 2  # 20 runs, one CRM and one calendar server
    # The 20 one-second reports went through one CRM session at once: one after another they
    # could not have finished in under 20 seconds.
    assert elapsed < 20, elapsed
    for pid in pids:
        wait_gone(pid)
    assert sum(repo.get(a.name).metadata.execution_count for a in agents) == 20


async def test_an_idle_server_stops_after_keep_servers_seconds(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])
    async with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=0.5) as runner:
        assert (await runner.run(agent, "First")).success
        (first,) = started_pids(starts)
        wait_gone(first)  # idle for 0.5 s: stopped without a run or a close
        report = await runner.run(agent, "Second")
        assert report.result.response == LOOKUP
        first_again, second = started_pids(starts)
        assert first_again == first and second != first and running(second)
    wait_gone(second)


def test_a_sync_runner_closes_with_its_with_block(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])
    with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=60) as runner:
        first = runner.run_sync(agent, "First")
        second = runner.run_sync(agent, "Second")
        (pid,) = started_pids(starts)
        assert running(pid)
    assert first.result.response == second.result.response == LOOKUP
    wait_gone(pid)
    with pytest.raises(RunnerClosedError):
        runner.run_sync(agent, "Closed")


async def test_keep_servers_zero_stops_each_server_when_its_last_run_ends(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path
) -> None:
    agent = make_agent(repo, ["crm"])
    async with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=0) as runner:
        await runner.run(agent, "First")
        wait_gone(started_pids(starts)[0])
        await runner.run(agent, "Second")
        assert len(started_pids(starts)) == 2


@pytest.mark.parametrize("keep", [-1.0, math.nan, math.inf])
def test_keep_servers_must_be_seconds(repo: SqlAgentRepository, keep: float) -> None:
    with pytest.raises(ValueError, match="keep_servers"):
        AgentRunner(repo, keep_servers=keep)


# --------------------------------------------------------------------------------------------------
# Credentials
# --------------------------------------------------------------------------------------------------


def process_environment(pid: int) -> dict[str, str]:
    return psutil.Process(pid).environ()


async def test_two_credential_sets_get_two_sessions_and_never_cross(
    repo: SqlAgentRepository,
    catalog: McpCatalog,
    starts: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = make_agent(repo, ["crm"])

    def model(_model: str) -> ScriptedChatModel:
        return ScriptedChatModel(
            script=[calls(tool_call("crm_account_status")), AIMessage("checked")]
        )

    async with AgentRunner(repo, model=model, catalog=catalog, keep_servers=60) as runner:
        first = await runner.run(agent, "Check the account")
        monkeypatch.setenv("PRIVATE_APP_ACCESS_TOKEN", OTHER_CRM_TOKEN)
        second = await runner.run(agent, "Check the account")
        monkeypatch.setenv("PRIVATE_APP_ACCESS_TOKEN", CRM_TOKEN)
        third = await runner.run(agent, "Check the account")
        pid_a, pid_b = started_pids(starts)
        # Each server process holds its own token and not the other one.
        env_a, env_b = process_environment(pid_a), process_environment(pid_b)
        assert env_a["PRIVATE_APP_ACCESS_TOKEN"] == CRM_TOKEN
        assert env_b["PRIVATE_APP_ACCESS_TOKEN"] == OTHER_CRM_TOKEN
        assert OTHER_CRM_TOKEN not in json.dumps(env_a) and CRM_TOKEN not in json.dumps(env_b)
        assert GOOGLE_CREDENTIALS not in json.dumps(env_a) + json.dumps(env_b)
        pool_text = repr(runner._warm) + repr(runner._warm.keys if runner._warm else [])
    # The third run (the first token again) went back to the first server.
    assert len(started_pids(starts)) == 2
    # Each run's server quoted its own token in an error; every text has it scrubbed.
    for report in (first, second, third):
        assert "[redacted]" in (report.result.tool_calls[0].error or "")
    outputs = [
        *(r.text for r in (first, second, third)),
        *(json.dumps(r.artifact) for r in (first, second, third)),
        json.dumps([r.model_dump(mode="json") for r in repo.get_history(agent.name).executions]),
        caplog.text,
        pool_text,
    ]
    for output in outputs:
        assert CRM_TOKEN not in output and OTHER_CRM_TOKEN not in output
    assert "crm@" in pool_text  # the keys show a category and a fingerprint, never a value
    wait_gone(pid_a)
    wait_gone(pid_b)


def test_the_session_key_is_a_fingerprint_of_connection_and_variables() -> None:
    connection = {"transport": "stdio", "command": "crm", "env": {"TOKEN": CRM_TOKEN}}
    key = session_key("crm", connection, {"TOKEN": CRM_TOKEN})
    assert key == session_key("crm", dict(connection), {"TOKEN": CRM_TOKEN})
    assert key != session_key("crm", connection, {"TOKEN": OTHER_CRM_TOKEN})
    assert key != session_key("calendar", connection, {"TOKEN": CRM_TOKEN})
    other = {**connection, "env": {"TOKEN": OTHER_CRM_TOKEN}}
    assert key != session_key("crm", other, {"TOKEN": CRM_TOKEN})
    for shown in (repr(key), str(key), f"{[key]}"):
        assert CRM_TOKEN not in shown and key.fingerprint not in shown


# --------------------------------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_a_killed_warm_server_is_restarted_by_the_next_run(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path, sig: signal.Signals
) -> None:
    agent = make_agent(repo, ["crm"])
    async with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=60) as runner:
        assert (await runner.run(agent, "First")).success
        (dead,) = started_pids(starts)
        os.kill(dead, sig)
        wait_gone(dead)

        report = await runner.run(agent, "Second", skip_unavailable_tools=False)

        assert report.success and not report.result.degraded_mode
        assert report.result.tool_calls[0].result == LOOKUP
        _, fresh = started_pids(starts)
        assert running(fresh)
        assert (await runner.run(agent, "Third")).success
        assert len(started_pids(starts)) == 2  # the fresh one is warm in turn
    wait_gone(fresh)


async def test_a_hanging_server_is_cut_off_by_the_runs_timeout(
    repo: SqlAgentRepository, catalog: McpCatalog
) -> None:
    agent = make_agent(repo, ["websearch"])
    model = ScriptedChatModel(script=[AIMessage("x")])
    async with AgentRunner(repo, model=model, catalog=catalog, keep_servers=60) as runner:
        began = time.monotonic()
        report = await runner.run(agent, "Research", timeout=2.0, skip_unavailable_tools=False)
        assert time.monotonic() - began < 4
        deadline = time.monotonic() + 5
        while server_children() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert server_children() == []  # stopped at the timeout, not kept warm
    assert report.text.startswith(
        "ERROR: Cannot execute agent 'lead_qualifier' - MCP server connection timed out after "
        "1.0 seconds.\n\nTask: Research\n\nUnresponsive servers:\n"
        "  - websearch (Tavily): MCP server did not respond within 1.0s\n"
    )
    (record,) = repo.get_history("lead_qualifier").executions
    assert record.error_type == "MCPTimeoutError"


# --------------------------------------------------------------------------------------------------
# The builder tools and interpreter exit
# --------------------------------------------------------------------------------------------------


async def test_builder_tools_run_agents_with_the_given_runner(
    repo: SqlAgentRepository, catalog: McpCatalog, starts: Path, tmp_path: Path
) -> None:
    make_agent(repo, ["crm"])
    async with AgentRunner(repo, model=lookup_model, catalog=catalog, keep_servers=60) as runner:
        tools = {t.name: t for t in make_builder_tools(repo, runner=runner)}
        execute = tools["execute_created_agent"]
        for _ in range(2):
            text = await execute.ainvoke({"agent_name": "lead_qualifier", "task": "Qualify John"})
            assert text.startswith("EXECUTION SUCCESS") and LOOKUP in text
        assert len(started_pids(starts)) == 1
    wait_gone(started_pids(starts)[0])
    other = open_repository(f"sqlite:///{tmp_path / 'other.db'}")
    with pytest.raises(ValueError, match="another repository"):
        make_builder_tools(repo, runner=AgentRunner(other))
    other.close()
    with pytest.raises(ValueError, match="to the runner"):
        make_builder_tools(repo, runner=runner, model=lookup_model())


UNCLOSED = """
import sys
from langchain_core.messages import AIMessage
from acti_store import open_repository
from acti_store.execution import AgentRunner, CategorySpec, McpCatalog
from acti_store.testing import ScriptedChatModel

repo = open_repository(sys.argv[1])
spec = CategorySpec("HubSpot", {connection}, env=("PRIVATE_APP_ACCESS_TOKEN",))
catalog = McpCatalog({{"crm": spec}})
model = ScriptedChatModel(script=[AIMessage("done")])
runner = AgentRunner(repo, model=model, catalog=catalog, keep_servers=300)
print(runner.run_sync(repo.get("lead_qualifier"), "Go").result.response, flush=True)
"""


def test_a_runner_left_open_stops_its_servers_at_exit_with_a_warning(
    repo: SqlAgentRepository, store_url: str, starts: Path, tmp_path: Path
) -> None:
    make_agent(repo, ["crm"])
    script = tmp_path / "unclosed.py"
    connection = stdio("crm_server.py", "--starts", str(starts))
    script.write_text(textwrap.dedent(UNCLOSED.format(connection=repr(connection))))

    done = subprocess.run(
        [sys.executable, str(script), store_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "UnclosedRunnerWarning" in done.stderr and "was not closed" in done.stderr
    (pid,) = started_pids(starts)
    wait_gone(pid)
    assert CRM_TOKEN not in done.stderr + done.stdout
