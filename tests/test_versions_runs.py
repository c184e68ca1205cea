"""Pinned runs on both engines: ``AgentRunner.run(name_or_agent, task, version=, label=)`` and
``acti-store run --version/--label`` run a saved version's configuration and count the run for
that version; the version CLI commands print the version tools' texts."""

from __future__ import annotations

from shlex import quote

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, SystemMessage

from acti_store import LabelNotFoundError, SqlAgentRepository, VersionNotFoundError
from acti_store.cli import main
from acti_store.execution import AgentRunner
from acti_store.testing import ScriptedChatModel

OLD_PROMPT = make_config().system_prompt
NEW_PROMPT = "You are the second version of the lead qualifier. Ask about the budget first."


def _two_versions(repo: SqlAgentRepository) -> None:
    repo.create(make_config(tools=[]))
    repo.update("lead_qualifier", {"system_prompt": NEW_PROMPT})
    repo.set_label("lead_qualifier", "production", 1)


def _system_prompt(model: ScriptedChatModel) -> str:
    system = [m for m in model.calls[0] if isinstance(m, SystemMessage)]
    return str(system[0].content)


def _runs(repo: SqlAgentRepository) -> dict[int, int]:
    return {v: s.total_executions for v, s in repo.version_stats("lead_qualifier").items()}


async def test_a_pinned_run_uses_that_version_and_counts_for_it(repo: SqlAgentRepository) -> None:
    _two_versions(repo)
    model = ScriptedChatModel(script=[AIMessage("v1 answers")])
    report = await AgentRunner(repo, model=model).run("lead_qualifier", "Go", version=1)
    assert report.success and OLD_PROMPT in _system_prompt(model)
    model = ScriptedChatModel(script=[AIMessage("production answers")])
    agent = repo.get("lead_qualifier")
    report = await AgentRunner(repo, model=model).run(agent, "Go", label="production")
    assert report.success and OLD_PROMPT in _system_prompt(model)
    model = ScriptedChatModel(script=[AIMessage("current answers")])
    report = AgentRunner(repo, model=model).run_sync("lead_qualifier", "Go")
    assert NEW_PROMPT in _system_prompt(model)
    assert _runs(repo) == {1: 2, 2: 1}
    assert repo.get("lead_qualifier").metadata.execution_count == 3


def test_a_pin_that_does_not_exist_runs_nothing(repo: SqlAgentRepository) -> None:
    _two_versions(repo)
    runner = AgentRunner(repo, model=ScriptedChatModel(script=[AIMessage("never")]))
    with pytest.raises(VersionNotFoundError):
        runner.run_sync("lead_qualifier", "Go", version=7)
    with pytest.raises(LabelNotFoundError):
        runner.run_sync("lead_qualifier", "Go", label="staging")
    assert repo.get_history("lead_qualifier").total_executions == 0


def test_cli_run_with_a_label(
    repo: SqlAgentRepository,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _two_versions(repo)
    model = ScriptedChatModel(script=[AIMessage("Qualified by v1.")])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setattr("acti_store.execution.runner.init_chat_model", lambda name: model)
    argv = ["run", "lead_qualifier", "Qualify John", "--url", store_url]
    assert main([*argv, "--label", "production"]) == 0
    assert "Qualified by v1." in capsys.readouterr().out and OLD_PROMPT in _system_prompt(model)
    assert main([*argv, "--version", "9"]) == 1
    assert "has no version 9" in capsys.readouterr().err
    assert _runs(repo) == {1: 1}


def test_cli_version_commands(
    repo: SqlAgentRepository, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_versions(repo)
    url = ["--url", store_url]
    assert main(["versions", "lead_qualifier", *url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Versions of agent 'lead_qualifier' (current: v2, newest first)")
    assert f"acti-store --url {quote(store_url)} diff lead_qualifier FROM TO" in out
    assert main(["diff", "lead_qualifier", "1", "2", *url]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out and f"  +{NEW_PROMPT}" in out  # not a terminal: no colour
    assert main(["rollback", "lead_qualifier", "1", *url]) == 0
    assert f"acti-store --url {quote(store_url)} rollback lead_qualifier 1 --confirm " in (
        capsys.readouterr().out
    )
    assert repo.get("lead_qualifier").metadata.version == 2
    assert main(["rollback", "lead_qualifier", "1", "--yes", *url]) == 0
    assert repo.get("lead_qualifier").system_prompt == OLD_PROMPT
    capsys.readouterr()
    assert main(["label", "lead_qualifier", "staging", "3", "--note", "try it", *url]) == 0
    assert main(["label", "lead_qualifier", "production", "--remove", *url]) == 0
    assert "removed (it was on v1)" in capsys.readouterr().out
    assert main(["labels", "lead_qualifier", *url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Labels of agent 'lead_qualifier': staging -> v3")
    assert "staging: set on v3 (it was not set) (try it)" in out
    assert main(["label", "lead_qualifier", "production", "--remove", *url]) == 1
    out, err = capsys.readouterr()  # a refusal: one error line on stderr
    assert out == "" and err.startswith("error: Agent 'lead_qualifier' has no label 'production'")
    assert main(["label", "lead_qualifier", "staging", *url]) == 2
    assert main(["diff", "lead_qualifier", "1", "9", *url]) == 1


def test_cli_diff_colours_a_terminal(
    repo: SqlAgentRepository,
    store_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _two_versions(repo)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["diff", "lead_qualifier", "1", "2", "--url", store_url]) == 0
    out = capsys.readouterr().out
    assert f"\x1b[32m  +{NEW_PROMPT}\x1b[0m" in out and f"\x1b[31m  -{OLD_PROMPT}\x1b[0m" in out
    assert "\x1b[36m  @@ -1 +1 @@\x1b[0m" in out and "\n  --- lead_qualifier v1" in out
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["diff", "lead_qualifier", "1", "2", "--url", store_url]) == 0
    assert "\x1b[" not in capsys.readouterr().out
