"""The ``acti-store`` commands of the store itself: quickstart, list, show, search, history."""

from __future__ import annotations

import pytest

from acti_store import open_repository
from acti_store.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().out


def test_quickstart_then_the_read_commands(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(capsys, "quickstart", "--url", store_url)
    assert status == 0
    assert "created lead_qualifier" in out and "recorded 4 executions" in out
    assert "Total: 3 agent(s)" in out and "Executions: 3 (66.7% success rate)" in out

    status, out = run(capsys, "quickstart", "--url", store_url)  # idempotent
    assert status == 0 and "nothing created" in out
    repo = open_repository(store_url)
    try:
        assert repo.get("lead_qualifier").metadata.execution_count == 3
    finally:
        repo.close()

    status, out = run(capsys, "list", "--url", store_url)
    assert status == 0 and out.startswith("Created Agents")
    status, out = run(capsys, "show", "lead_qualifier", "--url", store_url)
    assert status == 0 and '"name": "lead_qualifier"' in out
    status, out = run(
        capsys, "search", "research", "--stratum", "RTI", "--tool", "websearch", "--url", store_url
    )
    assert status == 0 and "1. research_assistant" in out and "Found: 1 agent(s)" in out
    status, out = run(capsys, "history", "lead_qualifier", "--errors-only", "--url", store_url)
    assert status == 0 and "[ERROR]" in out and "[SUCCESS]" not in out


def test_errors_exit_non_zero(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A refusal is one ``error:`` line on stderr, nothing on stdout."""
    open_repository(store_url).close()
    assert main(["show", "ghost", "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: Agent 'ghost' not found.")
    assert err.count("\n") == 1
    assert main(["search", "--stratum", "NOPE", "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: Invalid search parameter. Validation errors: ")
    assert err.count("\n") == 1


def test_migrate_command(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "migrate", "--url", store_url)
    assert status == 0 and "latest revision" in out


def test_quickstart_runs_come_after_the_agents_creation(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo data is plausible: no run is stamped before its agent was created."""
    status, out = run(capsys, "quickstart", "--url", store_url)
    assert status == 0
    repo = open_repository(store_url)
    try:
        for agent in repo.list_agents():
            created = agent.metadata.created_at
            for record in repo.get_history(agent.name, limit=50).executions:
                assert record.timestamp >= created, (agent.name, record.timestamp, created)
            last = agent.metadata.last_executed_at
            assert last is None or last >= created
    finally:
        repo.close()
    # The history quickstart prints: "Last Executed" is not earlier than the agent's creation.
    assert "Use acti-store show NAME" in out and "get_agent_config(" not in out
