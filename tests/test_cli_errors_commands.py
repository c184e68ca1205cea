"""``acti-store`` never prints a traceback: every command, given bad input, in a real process.

An error is one ``error: ...`` line on stderr and status 1 (argparse's usage errors: status 2); a
tool's refusal too (its ``ERROR:`` text on one line), with nothing on stdout; a closed stdout ends
quietly with status 1; Ctrl-C ends with status 130. The processes run in parallel to keep this
quick.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import open_repository
from acti_store.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
BAD_URL = "not a url"
#: Runs ``acti_store``'s command line as if the ``postgres`` extra were not installed.
WITHOUT_PSYCOPG = (
    "import sys; sys.modules['psycopg'] = None; from acti_store.cli import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def environment() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACTI_STORE_EXPORT_DIR": ""}
    env.pop("ACTI_STORE_URL", None)
    return env


def acti_store(argv: Sequence[str], *, python: Sequence[str] = ("-m", "acti_store")) -> Result:
    done = subprocess.run(
        [sys.executable, *python, *argv],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        check=False,
    )
    return Result(list(argv), done.returncode, done.stdout, done.stderr)


class Result:
    def __init__(self, argv: list[str], status: int, stdout: str, stderr: str) -> None:
        self.argv, self.status, self.stdout, self.stderr = argv, status, stdout, stderr

    def problems(self, status: int, stderr_start: str | None) -> list[str]:
        """What is wrong with this run, expecting ``status`` and (if given) one stderr line."""
        found = []
        if "Traceback" in self.stderr or "Exception ignored" in self.stderr:
            found.append("traceback")
        if self.status != status:
            found.append(f"status {self.status}")
        lines = self.stderr.splitlines()
        if stderr_start is not None:
            if len(lines) != 1 or not lines[0].startswith(stderr_start):
                found.append(f"stderr {self.stderr[-300:]!r}")
        elif status == 2:  # argparse: the usage, then one "error:" line
            if sum("error:" in line for line in lines) != 1:
                found.append(f"stderr {self.stderr[-300:]!r}")
        elif self.stderr:
            found.append(f"stderr {self.stderr[-300:]!r}")
        return [f"{' '.join(self.argv)[:80]}: {p}" for p in found]


@pytest.mark.slow  # 18 processes: 15-60 s on a loaded 2-core machine
def test_every_command_answers_a_bad_url_with_one_error_line(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(make_config("new_agent").model_dump_json())
    record = ["--task", "Qualify John", "--success", "--duration", "1.5"]
    commands = {
        "migrate": [],
        "quickstart": [],
        "list": [],
        "show": ["lead_qualifier"],
        "search": ["lead"],
        "history": ["lead_qualifier"],
        "create": [str(agent_file)],
        "update": ["lead_qualifier", "--model", "openai:gpt-4o"],
        "clone": ["lead_qualifier", "lead_copy"],
        "delete": ["lead_qualifier", "--yes"],
        "record": ["lead_qualifier", *record],
        "export": [str(folder)],
        "import": [str(folder)],
        "migrate-agents": [str(folder)],
        "run": ["lead_qualifier", "Qualify John"],
        "versions": ["lead_qualifier"],
        "diff": ["lead_qualifier", "1", "2"],
        "rollback": ["lead_qualifier", "1", "--yes"],
        "label": ["lead_qualifier", "production", "1"],
        "labels": ["lead_qualifier"],
        "protect": ["lead_qualifier", "production", "--min-runs", "5"],
        "compare": ["lead_qualifier", "1", "2"],
        "serve-mcp": [],
        "tenants": [],
        "changes": ["--follow"],
        # A secret that is set (any variable will do): what fails is the URL.
        "relay": ["--webhook", "http://127.0.0.1:9/", "--secret-env", "PATH", "--name", "relay"],
    }
    # doctor reports what it finds, a URL it cannot use too, as its one finding on stdout.
    assert sorted([*commands, "doctor"]) == sorted(_commands())  # a new command gets a case here
    doctor = acti_store(["doctor", "--url", BAD_URL])
    assert (doctor.status, doctor.stderr) == (1, ""), doctor.stderr
    assert doctor.stdout.startswith("error   options: the store URL 'not a url' is not a database")
    assert "sqlite:///relative/path.db" in doctor.stdout
    runs = [[command, *args, "--url", BAD_URL] for command, args in commands.items()]
    runs += [
        ["list", "--url", "mysql+mysqlconnector://acti@db.example/agents"],
        ["list", "--url", "postgresql+psycopg2://acti@db.example/agents"],
        ["show", "lead_qualifier", "--url", "sqlite:///" + str(folder / "file.txt" / "x.db")],
    ]
    (folder / "file.txt").write_text("a file, not a folder")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(acti_store, runs))
        no_driver = pool.submit(
            acti_store,
            ["list", "--url", "postgresql+psycopg://acti@127.0.0.1:1/agents"],
            python=("-c", WITHOUT_PSYCOPG),
        ).result()
    problems = [p for r in results for p in r.problems(1, "error: ")]
    problems += no_driver.problems(1, "error: the postgresql driver 'psycopg' is not installed")
    assert problems == []
    assert no_driver.stderr.rstrip().endswith('pip install "acti-store[postgres]"')
    assert all("sqlite:///relative/path.db" in r.stderr for r in results[: len(commands) + 2])


def _commands() -> list[str]:
    parser = build_parser()
    (action,) = (a for a in parser._actions if a.dest == "command")
    return list(action.choices)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = open_repository(url)
    repo.create(make_config())
    repo.close()
    return url


@pytest.mark.slow  # 43 processes
def test_bad_folders_and_bad_arguments(store: str, tmp_path: Path) -> None:
    a_file = tmp_path / "a_file.db"
    a_file.write_text("precious")
    files = {
        "not_utf8.json": b"\xff\xfe{}",
        "a_list.json": b"[1, 2]",
        "unknown_key.json": b'{"name": "new_agent", "colour": "red"}',
        "no_description.json": b'{"name": "new_agent"}',
        "taken_name.json": make_config().model_dump_json().encode(),
    }
    for file_name, content in files.items():
        (tmp_path / file_name).write_bytes(content)
    record = ["--task", "Qualify John", "--success", "--duration", "1.5"]
    one_line = [
        (["create", str(tmp_path / "missing.json")], f"error: {tmp_path / 'missing.json'}: cannot"),
        (["create", str(tmp_path)], f"error: {tmp_path}: cannot read it"),
        (["create", str(tmp_path / "not_utf8.json")], "error: "),
        (["create", str(tmp_path / "a_list.json")], "error: "),
        (["create", str(tmp_path / "unknown_key.json")], "error: "),
        (["export", str(a_file)], f"error: cannot export to {a_file}: it is a file, not a folder"),
        (["export", str(a_file / "sub")], f"error: cannot export to {a_file / 'sub'}: a part of"),
        (["export", "/proc/acti_store_export"], "error: cannot export to /proc/acti_store_export"),
        (["import", str(tmp_path / "missing")], "error: "),
        (["migrate-agents", str(a_file)], "error: "),
    ]
    refusals = [  # the tool's ERROR text as one error line on stderr, status 1, nothing on stdout
        ["show", "Bad Name"],
        ["show", "ghost"],
        ["history", "lead_qualifier", "--limit", "0"],
        ["history", "lead_qualifier", "--limit", "500"],
        ["search", "--created-after", "yesterday"],
        ["search", "--limit", "1000"],
        ["create", str(tmp_path / "no_description.json")],
        ["create", str(tmp_path / "taken_name.json")],
        ["update", "ghost", "--model", "openai:gpt-4o"],
        ["update", "Bad Name", "--model", "openai:gpt-4o"],
        ["update", "lead_qualifier"],  # no changes
        ["update", "lead_qualifier", "--tools", "nonsense"],
        ["update", "lead_qualifier", "--add-tag", "NOT A TAG"],
        ["update", "lead_qualifier", "--description", "x"],
        ["clone", "ghost", "lead_copy"],
        ["clone", "lead_qualifier", "Bad Name"],
        ["clone", "lead_qualifier", "lead_qualifier"],
        ["delete", "ghost", "--yes"],
        ["delete", "Bad Name", "--yes"],
        ["record", "ghost", *record],
        ["record", "Bad Name", *record],
        ["record", "lead_qualifier", "--task", "Go", "--success", "--duration", "1e300"],
    ]
    usage = [  # argparse: status 2
        ["history", "lead_qualifier", "--limit", "many"],
        ["search", "--sort-by", "colour"],
        ["run", "lead_qualifier", "Go", "--timeout", "0"],
        ["import", "--on-conflict", "merge"],
        ["serve-mcp", "--transport", "sse"],
        ["serve-mcp", "--transport", "http", "--port", "0"],
        ["changes", "--after", "-1"],
        ["relay", "--webhook", "ftp://hooks.example.com/", "--secret-env", "PATH", "--name", "r"],
        ["relay", "--webhook", "http://hooks.example/", "--secret-env", "PATH", "--name", "R 1"],
        ["no-such-command"],
        [],
        *(
            [*argv, "--url", store]
            for argv in (
                ["create"],
                ["update", "lead_qualifier", "--read-only"],  # write commands: no --read-only
                ["delete", "lead_qualifier", "--yes", "--read-only"],
                ["clone", "lead_qualifier"],
                ["record", "lead_qualifier", "--task", "Go", "--duration", "1"],  # no outcome
                ["record", "lead_qualifier", "--task", "Go", "--success", "--failure"],
                ["record", "lead_qualifier", "--task", "Go", "--success", "--duration", "-1"],
                ["record", "lead_qualifier", *record, "--tool-calls", "99999999999"],
            )
        ),
    ]
    reader = open_repository(store)
    before = reader.get("lead_qualifier")
    reader.close()
    with ThreadPoolExecutor(4) as pool:
        errors = list(pool.map(acti_store, [[*argv, "--url", store] for argv, _ in one_line]))
        refused = list(pool.map(acti_store, [[*argv, "--url", store] for argv in refusals]))
        misused = list(pool.map(acti_store, usage))
    problems = [
        p for r, (_, start) in zip(errors, one_line, strict=True) for p in r.problems(1, start)
    ]
    problems += [p for r in refused for p in r.problems(1, "error: ")]
    problems += [p for r in misused for p in r.problems(2, None)]
    assert problems == []
    assert [r.argv for r in refused if r.stdout] == []
    assert a_file.read_text() == "precious"
    after = open_repository(store)  # nothing was written
    assert after.list_names() == ["lead_qualifier"] and after.get("lead_qualifier") == before
    assert after.get_history("lead_qualifier").total_executions == 0
    after.close()


def fill(path: Path) -> None:
    """Write ``path`` until the disk is full."""
    with path.open("wb", buffering=0) as file:
        try:
            while True:
                file.write(b"\0" * 1024)
        except OSError:
            pass


def test_a_full_disk_is_one_error_line(store: str, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or 'not root'}")
    try:
        fill(disk / "filler")
        result = acti_store(["export", str(disk), "--url", store])
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert result.problems(1, f"error: cannot export to {disk}: No space left on device") == []


@pytest.mark.parametrize("command", [["quickstart"], ["search"], ["list"]])
def test_a_closed_stdout_ends_quietly(store: str, command: list[str]) -> None:
    """``acti-store quickstart | head -1``, with the reader gone before anything is written."""
    process = subprocess.Popen(
        [sys.executable, "-m", "acti_store", *command, "--url", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader went away
    stderr = process.stderr.read().decode()
    assert (process.wait(timeout=120), stderr) == (1, "")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_without_a_traceback() -> None:
    """Interrupted while connecting to a server that never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "acti_store",
                "list",
                "--url",
                f"postgresql+psycopg://acti@127.0.0.1:{port}/agents?connect_timeout=60",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
            # As a terminal's foreground job gets it: a test run started in the background (a
            # shell's ``&``) inherits SIGINT ignored, and Python then installs no handler for it.
            preexec_fn=_default_sigint,
        )
        ready, _, _ = select.select([silent], [], [], 60)  # it is connecting: a pending connection
        assert ready, "the command never connected"
        time.sleep(0.2)  # past the TCP handshake, into waiting for the server's answer
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (130, "", "interrupted\n")
