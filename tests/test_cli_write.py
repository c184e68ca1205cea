"""The writing commands of ``acti-store`` (create, update, clone, delete, record), run as a person
or a script runs them: a real process per command, on a real store, checking exit status, stdout
and stderr. Also: ``--url`` before the command, ``--version``, ``run`` on a missing agent, and the
CLI wording of the tools' texts (commands, never tool calls).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from shlex import quote

import pytest

from acti_store import open_repository
from acti_store.cli.store import QUICKSTART_AGENTS
from acti_store.documents import agent_document, dumps
from acti_store.repository import SqlAgentRepository

ROOT = Path(__file__).resolve().parents[1]
#: Tool-call syntax that must never reach a person at the command line.
TOOL_CALL = re.compile(
    r"\b(get_agent_config|create_agent_config|update_agent_config|delete_agent_config|"
    r"clone_agent_config|search_agents|list_created_agents|list_available_tools|"
    r"execute_created_agent)\("
)


def acti(
    *argv: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``acti-store ARGV`` in a fresh process that imports this worktree's code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACTI_STORE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
        timeout=120,
    )


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a refused command (status 1, nothing on stdout)."""
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr.rstrip("\n")


@pytest.fixture
def store(store_url: str) -> Iterator[SqlAgentRepository]:
    """A store holding the quickstart's three agents (no runs)."""
    repo = open_repository(store_url)
    try:
        for config in QUICKSTART_AGENTS:
            repo.create(config)
        yield repo
    finally:
        repo.close()


def test_create_from_an_exported_file_and_from_stdin(
    store: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    exported = agent_document(store.get("lead_qualifier"))
    exported["name"] = "lead_copy"
    file = tmp_path / "lead_copy.json"
    file.write_text(dumps(exported), encoding="utf-8")

    done = acti("create", str(file), "--url", store_url)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("SUCCESS: Agent configuration created and saved!")
    # a printed command names the store it was printed for (issue 49)
    shown = (
        f"  - Use acti-store --url {quote(store_url)} show lead_copy to review the full "
        "configuration\n"
    )
    assert shown in done.stdout
    assert not TOOL_CALL.search(done.stdout)
    created = store.get("lead_copy")
    assert created.metadata.version == 1 and created.tags == exported["tags"]

    document = {k: exported[k] for k in ("description", "system_prompt")} | {"name": "from_stdin"}
    done = acti("create", "-", "--url", store_url, stdin=json.dumps(document))
    assert (done.returncode, done.stderr) == (0, "") and store.exists("from_stdin")

    done = acti("create", str(file), "--url", store_url)  # exists already: the tool's error
    assert refusal(done) == (
        "error: Agent 'lead_copy' already exists. Options: Choose a different name; "
        f"Review the existing agent: acti-store --url {quote(store_url)} show lead_copy; "
        f"Update the existing agent: acti-store --url {quote(store_url)} update lead_copy ...; "
        f"Delete the existing agent first: acti-store --url {quote(store_url)} delete lead_copy"
    )  # the delete is its preview, which prints the bound confirmation


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{", "invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("[1]", "an agent file holds one JSON object"),
        ('{"name": "x", "colour": 1}', "unknown key(s) 'colour'"),
    ],
    ids=["syntax", "not-an-object", "unknown-key"],
)
def test_create_refuses_a_file_that_is_not_an_agent(
    tmp_path: Path, content: str, reason: str
) -> None:
    file = tmp_path / "bad.json"
    file.write_text(content, encoding="utf-8")
    done = acti("create", str(file), "--url", f"sqlite:///{tmp_path / 's.db'}")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"error: {file}: {reason}")


def test_create_with_an_invalid_config_prints_the_tools_validation_text(
    store_url: str, tmp_path: Path
) -> None:
    done = acti("create", "-", "--url", store_url, stdin='{"name": "short", "description": "x"}')
    line = refusal(done)
    assert line.startswith("error: Agent configuration validation failed.")
    assert "; system_prompt: Field required" in line


def test_update_changes_fields_and_tags(store: SqlAgentRepository, store_url: str) -> None:
    done = acti(
        "update",
        "lead_qualifier",
        "--description",
        "Scores inbound leads by BANT",
        "--tools",
        "crm,websearch",
        "--stratum",
        "RTI",
        "--add-tag",
        "urgent",
        "--remove-tag",
        "production",
        "--url",
        store_url,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("SUCCESS: Agent 'lead_qualifier' updated (v1 -> v2).")
    agent = store.get("lead_qualifier")
    assert agent.description == "Scores inbound leads by BANT"
    assert (agent.tools, agent.stratum) == (["crm", "websearch"], "RTI")
    assert agent.tags == ["sales", "qualification", "urgent"]

    done = acti("update", "lead_qualifier", "--tools", "", "--url", store_url)
    assert done.returncode == 0 and store.get("lead_qualifier").tools == []

    done = acti("update", "lead_qualifier", "--url", store_url)  # nothing to change
    line = refusal(done)
    assert line.endswith(
        f'Example: acti-store --url {quote(store_url)} update lead_qualifier --description "New '
        'description"'
    )
    assert "; --add-tag;" in line and not TOOL_CALL.search(line)

    done = acti("update", "ghost", "--add-tag", "x1", "--url", store_url)
    assert refusal(done).startswith("error: Agent 'ghost' not found. Available agents (3): ")


def test_update_options_named_by_the_no_changes_text_exist() -> None:
    from acti_store.cli import build_parser
    from acti_store.tools.texts import CLI_CALLS

    named = re.findall(r"^  - (--[a-z-]+)$", CLI_CALLS.updatable, flags=re.MULTILINE)
    parser = build_parser()
    (commands,) = (a for a in parser._actions if a.dest == "command")
    options = {o for a in commands.choices["update"]._actions for o in a.option_strings}
    assert named and set(named) <= options


def test_clone(store: SqlAgentRepository, store_url: str) -> None:
    done = acti(
        "clone", "lead_qualifier", "lead_v2", "--tag", "beta", "--tag", "sales", "--url", store_url
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("SUCCESS: Agent 'lead_qualifier' cloned to 'lead_v2'.")
    assert (
        f'  - Use acti-store --url {quote(store_url)} run lead_v2 "TASK" to test\n' in done.stdout
    )
    clone = store.get("lead_v2")
    assert clone.tags == ["beta", "sales"]
    assert clone.description == "Qualifies inbound leads by assessing BANT criteria (clone)"

    done = acti("clone", "lead_qualifier", "lead_v2", "--url", store_url)
    shown = (
        f"Options: Choose a different name: acti-store --url {quote(store_url)} clone SOURCE "
        "NEW_NAME; "
    )
    assert shown in refusal(done)

    done = acti("clone", "ghost", "lead_v3", "--url", store_url)
    assert refusal(done).endswith("Use one of the names above as SOURCE.")


def test_delete_previews_without_yes_and_deletes_with_it(
    store: SqlAgentRepository, store_url: str
) -> None:
    done = acti("delete", "research_assistant", "--keep-history", "--url", store_url)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("WARNING: This will permanently delete agent")
    assert re.search(
        f"To confirm deletion, run:\n  acti-store --url {re.escape(quote(store_url))} delete "
        "research_assistant --keep-history --confirm [0-9a-f]{8}\n\\Z",
        done.stdout,
    )
    assert store.exists("research_assistant")

    done = acti("delete", "research_assistant", "--keep-history", "--yes", "--url", store_url)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("SUCCESS: Agent 'research_assistant' configuration deleted.")
    assert not store.exists("research_assistant")

    done = acti("delete", "research_assistant", "--yes", "--url", store_url)
    assert refusal(done).startswith("error: Agent 'research_assistant' not found.")


def test_record_appends_a_run_and_moves_the_counters(
    store: SqlAgentRepository, store_url: str
) -> None:
    done = acti(
        "record",
        "lead_qualifier",
        "--task",
        "Qualify John from Acme",
        "--failure",
        "--duration",
        "2.5",
        "--result",
        "CRM timed out",
        "--tool-calls",
        "3",
        "--error-type",
        "ExecutionTimeout",
        "--url",
        store_url,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("Recorded a failed run of 'lead_qualifier' (2.5s, started ")
    assert "Executions: 1 total (0 success, 1 errors)" in done.stdout
    (record,) = store.get_history("lead_qualifier").executions
    assert (record.task, record.result_summary, record.success) == (
        "Qualify John from Acme",
        "CRM timed out",
        False,
    )
    assert (record.duration_seconds, record.tool_calls_count, record.error_type) == (
        2.5,
        3,
        "ExecutionTimeout",
    )
    assert done.stdout.rstrip().endswith(record.execution_id)
    meta = store.get("lead_qualifier").metadata
    assert (meta.execution_count, meta.error_count) == (1, 1)
    assert meta.last_executed_at == record.timestamp

    done = acti(
        "record", "ghost", "--task", "t", "--success", "--duration", "1", "--url", store_url
    )
    assert refusal(done).startswith("error: Agent 'ghost' not found. Available agents (3): ")

    done = acti("record", "lead_qualifier", "--task", "t", "--success", "--duration", "-1")
    assert done.returncode == 2 and "argument --duration: Input should be greater" in done.stderr


def test_run_of_a_missing_agent_lists_the_names(store: SqlAgentRepository, store_url: str) -> None:
    done = acti("run", "ghost", "Qualify John", "--url", store_url)
    assert refusal(done) == (
        "error: Agent 'ghost' not found. Available agents (3): appointment_scheduler; "
        "lead_qualifier; research_assistant. "
        "Use one of the names above, or create a new agent with acti-store create FILE."
    )


def test_url_before_the_command_and_after_it(
    store: SqlAgentRepository, store_url: str, tmp_path: Path
) -> None:
    done = acti("--url", store_url, "list")
    assert (done.returncode, done.stderr) == (0, "")
    assert "Total: 3 agent(s)" in done.stdout
    assert done.stdout.endswith("Use acti-store show NAME to see full configuration details.\n")

    other = f"sqlite:///{tmp_path / 'other.db'}"
    open_repository(other).close()
    done = acti("--url", store_url, "list", "--url", other)  # the command's own --url wins
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("No agents have been created yet.\n\nTo create your first agent")
    assert not TOOL_CALL.search(done.stdout)


def test_version() -> None:
    from acti_store.cli.options import package_version

    done = acti("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"acti-store {package_version()}\n",
        "",
    )
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", package_version())


def test_update_message_is_saved_with_the_new_version(
    store: SqlAgentRepository, store_url: str
) -> None:
    done = acti(
        "update",
        "lead_qualifier",
        "--model",
        "openai:gpt-4o",
        "--message",
        "cheaper model",
        "--url",
        store_url,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert store.get_version("lead_qualifier").message == "cheaper model"
    assert store.get_version("lead_qualifier", 1).message is None
    done = acti("versions", "lead_qualifier", "--url", store_url)
    assert "    Message: cheaper model\n" in done.stdout

    done = acti("update", "lead_qualifier", "--model", "x:y", "--message", "m" * 501)
    assert done.returncode == 2 and "argument --message: at most 500 characters" in done.stderr
