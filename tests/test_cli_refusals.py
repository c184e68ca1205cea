"""Every ``acti-store`` command keeps the CLI's word, run as a person runs it (a real process).

Results go to stdout; a refusal (no such agent, a name taken, a bad version, a busy port...) is
one ``error: ...`` line on stderr and status 1, never a traceback. A command that only reads
creates no store where there is none.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import make_config
from test_cli_errors_commands import _commands, acti_store, environment

from acti_store import open_repository

pytestmark = pytest.mark.slow  # a process per command

RECORD = ["--task", "Qualify John", "--success", "--duration", "1.5"]
#: A relay whose secret is not in the environment.
RELAY_NO_SECRET = [
    "--webhook",
    "http://127.0.0.1:9/",
    "--secret-env",
    "ACTI_NO_SUCH_SECRET",
    "--name",
    "relay",
]


def one_error_line(argv: Sequence[str], status: int, stdout: str, stderr: str) -> list[str]:
    """What is wrong with a refusal: status 1 and one ``error:`` line on stderr."""
    problems = []
    if "Traceback" in stderr:
        problems.append("traceback")
    if status != 1:
        problems.append(f"status {status}")
    if len(stderr.splitlines()) != 1 or not stderr.startswith("error: "):
        problems.append(f"stderr {stderr[-300:]!r}")
    return [f"{' '.join(argv)[:60]}: {p}" for p in problems]


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = open_repository(url)
    repo.create(make_config())
    repo.close()
    return url


def test_every_command_refuses_with_one_error_line_on_stderr(store: str, tmp_path: Path) -> None:
    taken = tmp_path / "taken.json"
    taken.write_text(make_config().model_dump_json())
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder, not a database")
    invalid = tmp_path / "invalid"
    invalid.mkdir()
    (invalid / "broken.json").write_text("{")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = str(busy.getsockname()[1])
    missing = f"sqlite:///{tmp_path / 'no_folder' / 'x.db'}"
    # command -> (its arguments, what stdout may hold: "" for nothing, else how it starts)
    refusals: dict[str, tuple[list[str], str]] = {
        "migrate": (["--to", "0999_nowhere", "--url", store], ""),
        "quickstart": (["--url", f"sqlite:///{a_file}"], ""),
        "list": (["--url", missing], ""),
        "show": (["ghost", "--url", store], ""),
        "search": (["--limit", "1000", "--url", store], ""),
        "history": (["ghost", "--url", store], ""),
        "create": ([str(taken), "--url", store], ""),
        "update": (["ghost", "--model", "openai:gpt-4o", "--url", store], ""),
        "clone": (["ghost", "lead_copy", "--url", store], ""),
        "delete": (["ghost", "--yes", "--url", store], ""),
        "record": (["ghost", *RECORD, "--url", store], ""),
        "export": ([str(a_file), "--url", store], ""),
        "import": ([str(invalid), "--url", store], "1 file(s) in "),  # the report: a result
        "migrate-agents": ([str(tmp_path / "no_such_folder"), "--url", store], ""),
        "run": (["ghost", "Qualify John", "--url", store], ""),
        "versions": (["ghost", "--url", store], ""),
        "diff": (["lead_qualifier", "1", "9", "--url", store], ""),
        "rollback": (["lead_qualifier", "9", "--yes", "--url", store], ""),
        "label": (["lead_qualifier", "production", "9", "--url", store], ""),
        "labels": (["ghost", "--url", store], ""),
        "protect": (["ghost", "production", "--min-runs", "5", "--url", store], ""),
        "compare": (["lead_qualifier", "1", "9", "--url", store], ""),
        "serve-mcp": (["--transport", "http", "--port", port, "--url", store], ""),
        "tenants": (["--url", missing], ""),  # --tenant before it: tests/test_cli_entry.py
        "changes": (["--after", "999", "--url", store], ""),  # beyond the newest: a reset store
        "relay": ([*RELAY_NO_SECRET, "--url", store], ""),
    }
    # doctor refuses nothing: what is wrong is its finding, on stdout, and its status 1.
    assert sorted([*refusals, "doctor"]) == sorted(_commands())  # a new command gets a case here
    doctor = acti_store(["doctor", "--url", missing])
    assert (doctor.status, doctor.stderr) == (1, ""), doctor.stderr
    assert doctor.stdout.startswith("error   store: there is no store at ")
    runs = [[command, *args] for command, (args, _) in refusals.items()]
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(acti_store, runs))
    finally:
        busy.close()
    problems = [p for r in results for p in one_error_line(r.argv, r.status, r.stdout, r.stderr)]
    problems += [
        f"{r.argv[0]}: stdout {r.stdout[:200]!r}"
        for r, (_, start) in zip(results, refusals.values(), strict=True)
        if (r.stdout and not start) or not r.stdout.startswith(start)
    ]
    assert problems == []
    by_command = {r.argv[0]: r.stderr for r in results}
    assert by_command["show"].startswith("error: Agent 'ghost' not found. Available agents (1): ")
    assert by_command["diff"].startswith("error: Agent 'lead_qualifier' has no version 9")
    assert by_command["compare"].startswith("error: Agent 'lead_qualifier' has no version 9")
    assert by_command["protect"].startswith("error: Agent 'ghost' not found.")
    assert "Address already in use" in by_command["serve-mcp"]
    assert by_command["import"] == "error: 1 invalid file(s), listed above: nothing was imported\n"
    assert by_command["relay"].startswith("error: the environment variable ACTI_NO_SUCH_SECRET is")


READS = {
    "list": [],
    "show": ["lead_qualifier"],
    "search": ["lead"],
    "history": ["lead_qualifier"],
    "versions": ["lead_qualifier"],
    "diff": ["lead_qualifier", "1", "2"],
    "labels": ["lead_qualifier"],
    "compare": ["lead_qualifier", "1", "2"],
    "export": ["EXPORT"],
    "changes": [],
}


def test_a_read_command_where_there_is_no_store_creates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "nothing_here"
    url = f"sqlite:///{folder / 'x.db'}"
    runs = [
        ["--url", url, command, *[str(tmp_path / "out") if a == "EXPORT" else a for a in args]]
        for command, args in READS.items()
    ]
    runs.append([*runs[0][2:], "--url", url])  # --url after the command
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(acti_store, runs))
    problems = [p for r in results for p in one_error_line(r.argv, r.status, r.stdout, r.stderr)]
    problems += [f"{r.argv}: stdout {r.stdout!r}" for r in results if r.stdout]
    assert problems == []
    assert results[0].stderr == (
        f"error: there is no store at {folder / 'x.db'}: create one with acti-store --url {url} "
        "migrate, or with any command that writes (e.g. quickstart, create, import)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder, no file, no export

    done = acti_store(["quickstart", "--url", url])  # a command that writes makes the store
    assert done.status == 0 and (folder / "x.db").is_file()
    done = acti_store(["list", "--url", url])
    assert done.status == 0 and "Total: 3 agent(s)" in done.stdout


def test_serve_mcp_says_it_serves_once_the_port_accepts_connections(store: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = ["serve-mcp", "--transport", "http", "--port", str(port), "--url", store]
    process = subprocess.Popen(
        [sys.executable, "-m", "acti_store", *serve],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith(f"acti-store: serving MCP at http://127.0.0.1:{port}/mcp")
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # no "refused"
            pass
        assert time.monotonic() - started < 5
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_run_names_commands_not_tool_calls(tmp_path: Path) -> None:
    """A run that cannot start its model: the fix names ``acti-store update``, not a tool call."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_repository(url) as repo:
        repo.create(make_config(tools=[], model="anthropic:claude-sonnet-4-5-20250929"))
    env = environment()
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(
        [sys.executable, "-m", "acti_store", "run", "lead_qualifier", "Qualify John", "--url", url],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    problems = one_error_line(["run"], done.returncode, done.stdout, done.stderr)
    assert problems == [] and done.stdout == ""
    assert done.stderr.startswith("error: Cannot execute agent 'lead_qualifier' - model unavail")
    assert (
        "Or choose another model: acti-store update lead_qualifier --model PROVIDER:MODEL"
        in done.stderr
    )
    assert "update_agent_config" not in done.stderr
