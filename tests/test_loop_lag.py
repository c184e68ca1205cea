"""The async paths never hold the caller's event loop.

The measurement runs in a fresh process (``benchmarks/loop_lag.py``), so that nothing is imported
or opened beforehand except what an async app imports at its top (``ASYNC_TOOLS``): a heartbeat
task sleeps 5 ms in a loop and records how late it wakes, while 20 agents run at once through the
async ``execute_created_agent`` tool (scripted model, the CRM test server over HTTP) and 20 callers
use the other async tools on a default store that does not exist yet (the first call creates and
migrates it). Twenty Python server processes starting at once would load a 2-core machine so much
that the OS, not the loop, would delay the heartbeat: the runs share one server, started first.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, BaseMessage

from acti_store import SqlAgentRepository
from acti_store.execution import AgentRunner, CategorySpec, McpCatalog
from acti_store.execution.background import THREAD_NAME
from acti_store.testing import ScriptedChatModel, calls, tool_call

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).parent / "mcp_servers"

#: The longest lag allowed beyond the baseline. The target is 50 ms (docs/guarantees.md); a loaded
#: CI machine gets twice that, and a measurement is repeated once before it fails, since the OS
#: can deschedule the process for a while. A blocking step of a run is not noise: it stalls every
#: attempt.
MAX_LAG_MS = 100.0
ATTEMPTS = 2


def measure(store_url: str) -> dict[str, object]:
    """The lags of 20 runs and 20 store calls, in a fresh process."""
    return _loop_lag(
        "--runs", "20", "--store-calls", "20", "--transport", "http", "--url", store_url
    )


def baseline() -> float:
    """How late the same heartbeat wakes in a fresh process running no agent (one Python process
    started beside it), measured just before an attempt: what the machine's load costs now (4 ms
    on a quiet 2-CPU machine). The bound is that plus ``MAX_LAG_MS``: a slow neighbour must not
    fail the test, a blocking step of a run still does (it comes on top of the baseline)."""
    return float(str(_loop_lag("--baseline", "--runs", "1")["max_lag_ms"]))


def _loop_lag(*arguments: str) -> dict[str, object]:
    command = [sys.executable, "-m", "benchmarks.loop_lag", *arguments]
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.slow
def test_twenty_runs_and_a_cold_store_keep_the_loop_free(store_url: str) -> None:
    attempts = []
    for _ in range(ATTEMPTS):
        idle = baseline()
        result = measure(store_url if not attempts else fresh(store_url, len(attempts)))
        attempts.append({"baseline_max_lag_ms": idle, **result})
        assert result["outcomes"] == {"create ok": 20, "run ok": 20, "store call": 80}
        # Deterministic: the loop's thread imported nothing while the work went on.
        assert result["imported_on_loop"] == []
        # A pass of the garbage collector stops every thread, the loop's too: its pause is the
        # heap's, reported apart (``gc_longest_ms``), not a step of acti_store's that held the
        # loop; the lag left once it is taken out is what this test bounds.
        if float(str(result["max_lag_outside_gc_ms"])) < MAX_LAG_MS + idle:
            return
    pytest.fail(
        f"the event loop stalled over {MAX_LAG_MS} ms past the baseline in every attempt: "
        f"{attempts}"
    )


def fresh(store_url: str, attempt: int) -> str:
    """Another new store for a second attempt: a new SQLite file, or the PostgreSQL schema or
    the MariaDB database emptied (dropping it is the fixture's job)."""
    if store_url.startswith("sqlite"):
        return store_url.replace("store.db", f"store{attempt}.db")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    if store_url.startswith(("mysql", "mariadb")):
        database = make_url(store_url).database
        engine = create_engine(store_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f"DROP DATABASE `{database}`"))
            conn.execute(text(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4"))
        engine.dispose()
        return store_url
    schema = make_url(store_url).query["options"]
    assert isinstance(schema, str)
    name = schema.removeprefix("-csearch_path=")
    engine = create_engine(store_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
        conn.execute(text(f'CREATE SCHEMA "{name}"'))
    engine.dispose()
    return store_url


# --------------------------------------------------------------------------------------------------
# Where a run goes on
# --------------------------------------------------------------------------------------------------

TRACE: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="unset")


def crm_catalog(starts: Path) -> McpCatalog:
    return McpCatalog(
        {
            "crm": CategorySpec(
                "HubSpot",
                {
                    "transport": "stdio",
                    "command": sys.executable,
                    "args": [str(SERVERS / "crm_server.py"), "--starts", str(starts)],
                },
                env=("PRIVATE_APP_ACCESS_TOKEN",),
            )
        }
    )


async def test_a_run_goes_on_the_runs_loop_with_the_callers_context(
    repo: SqlAgentRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRIVATE_APP_ACCESS_TOKEN", "sentinel-token-for-loop-tests")
    repo.create(make_config("plain_agent", tools=["crm"]))
    seen: list[tuple[str, str]] = []

    def reply(messages: Sequence[BaseMessage]) -> AIMessage:
        seen.append((threading.current_thread().name, TRACE.get()))
        return AIMessage("Done.")

    runner = AgentRunner(
        repo,
        model=ScriptedChatModel(script=[reply], loop=True),
        catalog=crm_catalog(tmp_path / "s"),
    )
    TRACE.set("request-42")
    report = await runner.run(repo.get("plain_agent"), "Greet me")
    assert report.artifact["status"] == "success", report.text
    assert seen == [(THREAD_NAME, "request-42")]
    # The synchronous path goes there too (one way of running a run), the context with it.
    report = await asyncio.to_thread(runner.run_sync, repo.get("plain_agent"), "Greet me")
    assert report.artifact["status"] == "success", report.text
    assert seen[1] == (THREAD_NAME, "request-42")
    assert repo.get_history("plain_agent").total_executions == 2


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_cancelling_a_run_stops_it_and_its_server_before_returning(
    repo: SqlAgentRepository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRIVATE_APP_ACCESS_TOKEN", "sentinel-token-for-loop-tests")
    repo.create(make_config("slow_agent", tools=["crm"]))
    starts = tmp_path / "starts.txt"
    model = ScriptedChatModel(script=[calls(tool_call("crm_slow_report", seconds=60))], loop=True)
    runner = AgentRunner(repo, model=model, catalog=crm_catalog(starts))
    run = asyncio.create_task(runner.run(repo.get("slow_agent"), "Build the report", timeout=120))
    deadline = time.monotonic() + 60
    while not model.calls:  # the server answered and the model asked for the slow tool
        assert time.monotonic() < deadline and not run.done()
        await asyncio.sleep(0.02)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    (pid,) = (int(line) for line in starts.read_text().split())
    assert gone(pid), "the run's MCP server outlived the cancelled run"
    assert repo.get_history("slow_agent").total_executions == 0
