"""``acti-store`` for label routing (issue 30) as a person uses it, on every engine: ``label``
with a split, ``--rollback`` and ``--force``, ``protect`` (and ``--off``), ``compare``,
``labels`` with splits, gates and the log's marks, and ``run --key``'s refusals.

A person's session of commands runs in one process (``session``: the CLI's ``main`` per command
line, each with its own stdout, stderr and exit status), to keep the file quick; the refusals
that must be one line on stderr also run as real ``acti-store`` processes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from contextlib import closing
from shlex import quote

import pytest
from conftest import make_config
from langchain_core.messages import AIMessage, SystemMessage
from test_cli_errors_commands import acti_store, environment

from acti_store import ExecutionRecord, open_repository
from acti_store.cli import main
from acti_store.routing import pick
from acti_store.testing import ScriptedChatModel

NAME = "lead_qualifier"

#: Runs each command line of stdin's JSON list through the CLI's ``main``, capturing what it
#: prints; usage errors (argparse's ``SystemExit``) keep their status, anything that escapes
#: ``main`` is reported as a traceback.
_SESSION = """
import contextlib, io, json, sys, traceback
from acti_store.cli import main
results = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:
            status = exc.code
        except BaseException:
            traceback.print_exc()
            status = -1
    results.append([status, out.getvalue(), err.getvalue()])
sys.__stdout__.write(json.dumps(results))
"""


def session(url: str, *commands: Sequence[str]) -> list[tuple[int, str, str]]:
    """Each command line (``--url`` added) in turn: ``(status, stdout, stderr)`` of each."""
    done = subprocess.run(
        [sys.executable, "-c", _SESSION],
        input=json.dumps([[*command, "--url", url] for command in commands]),
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        check=True,
    )
    results = [tuple(r) for r in json.loads(done.stdout)]
    assert not [r for r in results if "Traceback" in r[2]], results
    return results  # type: ignore[return-value]


@pytest.fixture
def url(store_url: str) -> str:
    """A store with two versions of ``lead_qualifier``; v1 ran 4 times (3 successes)."""
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config())
        repo.update(
            NAME,
            {
                "system_prompt": "You are a lead qualification specialist.\n"
                "Assess budget first, then authority."
            },
        )
        for index in range(4):
            record = ExecutionRecord(
                timestamp=repo.now(),
                task=f"Qualify lead {index}",
                result_summary="done",
                success=index < 3,
                duration_seconds=2.0,
                error_type=None if index < 3 else "ExecutionError",
            )
            repo.record_execution(NAME, record, version=1)
    return store_url


def test_compare_split_roll_back_and_read_the_log(url: str) -> None:
    results = session(
        url,
        ["compare", NAME, "1", "2"],
        ["label", NAME, "production", "1=90", "2=20"],
        ["label", NAME, "production", "1=90", "2"],
        ["label", NAME, "production", "1=x"],
        ["label", NAME, "production"],
        ["label", NAME, "production", "1", "--rollback"],
        ["label", NAME, "production", "--rollback"],
        ["protect", NAME, "production", "--min-success-rate", "95"],
        ["protect", NAME, "production", "--off", "--min-runs", "3"],
        ["protect", NAME, "production"],
        ["run", NAME, "Qualify John", "--key", "user-42"],
        # Nothing above changed the store: the session starts here.
        ["label", NAME, "production", "1"],
        ["label", NAME, "production", "1=90", "2=10", "--note", "canary"],
        ["label", NAME, "production", "--rollback", "--note", "too early"],
        ["labels", NAME],
    )
    status, out, err = results[0]
    assert status == 0 and err == ""
    assert out.startswith(
        "Version Comparison: lead_qualifier (v1 vs v2)\n"
        "==================================================\n\n"
        "v1:\n  Runs: 4\n  Success Rate: 75% (3/4), 95% interval 30.1%-95.4%\n"
        "  Average Duration: 2.0s\n\nv2:\n  Runs: 0\n  Success Rate: no runs yet\n"
    )
    assert out.endswith(
        "Let both versions run first, e.g. split a label between them: acti-store "
        f"--url {quote(url)} label lead_qualifier <label> 1=90 2=10\n"
    )

    refusals = results[1:11]
    assert [status for status, _, _ in refusals] == [1, 1, 2, 2, 2, 1, 1, 2, 2, 1]
    assert all(out == "" for _, out, _ in refusals)
    assert refusals[0][2].startswith("error: Invalid label parameter.")
    assert "3=90 4=10" in refusals[1][2]
    assert "'1=x' is neither a version (3) nor a version's share (3=90)" in refusals[2][2]
    assert "give either a VERSION (or a split), --remove or --rollback" in refusals[3][2]
    assert refusals[5][2] == (
        "error: Label 'production' of agent 'lead_qualifier' has no move to roll back. Nothing "
        f"was changed. See the labels with acti-store --url {quote(url)} versions lead_qualifier.\n"
    )
    assert refusals[6][2].startswith("error: Invalid protect parameter.")
    assert "error: give the gate: --min-runs" in refusals[8][2]
    assert refusals[9][2] == "error: --key picks a version of a label's split: give --label too\n"

    moves = results[11:]
    assert [status for status, _, _ in moves] == [0, 0, 0, 0]
    assert all(err == "" for _, _, err in moves)
    assert moves[1][1] == (
        "SUCCESS: Label 'production' of agent 'lead_qualifier' moved from v1 to v1 90 % / v2 "
        "10 %.\n\nLabels now: production -> v1 90 % / v2 10 %\n"
    )
    assert moves[2][1].startswith(
        "SUCCESS: Label 'production' of agent 'lead_qualifier' rolled back from v1 90 % / v2 "
        "10 % to v1."
    )
    report = moves[3][1]
    assert report.startswith("Labels of agent 'lead_qualifier': production -> v1\n")
    log = report.split("Label moves (newest first):\n")[1].splitlines()
    assert log[0].endswith("production: moved from v1 90 % / v2 10 % to v1 [rollback] (too early)")
    assert log[1].endswith("production: moved from v1 to v1 90 % / v2 10 % (canary)")
    assert log[2].endswith("production: set on v1 (it was not set)")
    with closing(open_repository(url)) as repo:
        assert repo.label_weights(NAME) == {"production": {1: 100}}
        assert repo.label_gates(NAME) == {}


def test_a_gate_refuses_until_a_person_forces_it_with_a_note(url: str) -> None:
    gate = ["--min-runs", "3", "--min-success-rate", "0.7", "--max-mean-duration", "3"]
    results = session(
        url,
        ["protect", NAME, "production", *gate],
        ["label", NAME, "production", "2"],
        ["label", NAME, "production", "1"],
        ["label", NAME, "production", "2", "--force"],
        ["label", NAME, "production", "2", "--force", "--note", "hotfix, runs come later"],
        ["labels", NAME],
        ["protect", NAME, "production", "--off"],
        ["protect", NAME, "production", "--off"],
    )
    statuses = [status for status, _, _ in results]
    assert statuses == [0, 1, 0, 2, 0, 0, 0, 0]
    assert results[0][1] == (
        "SUCCESS: Label 'production' of agent 'lead_qualifier' is protected: a move sends it a "
        "share only with at least 3 runs, a success rate of at least 70.0%, a mean duration of "
        "at most 3 s.\n"
    )
    _, out, err = results[1]
    assert out == "" and len(err.splitlines()) == 1
    assert re.sub("--confirm [0-9a-f]{8}", "--confirm CODE", err) == (
        "error: Label 'production' of agent 'lead_qualifier' is protected: a version gets a "
        "share of it only with at least 3 runs, a success rate of at least 70.0%, a mean duration "
        "of at most 3 s. Nothing was moved; the gate refused: v2 (0 runs): 0 runs (at least "
        "3 wanted), no success rate yet (at least 70.0% wanted), no duration yet "
        f"(at most 3 s wanted). To move it anyway, run: acti-store --url {quote(url)} label "
        f'lead_qualifier production 2 --force --confirm CODE --note "why". Compare the versions '
        f"with acti-store --url {quote(url)} compare lead_qualifier <a> 2, or let v2 run more "
        "first.\n"
    )  # a person gets commands, not tool calls
    assert results[3][2].endswith('error: --force needs --note "why" (the label log keeps it)\n')
    report = results[5][1]
    assert (
        "\nProtected: production (needs at least 3 runs, a success rate of at least 70.0%, a mean "
        "duration of at most 3 s)\n"
    ) in report
    assert "production: moved from v1 to v2 [forced] (hotfix, runs come later)" in report
    assert (
        results[6][1]
        == "SUCCESS: Label 'production' of agent 'lead_qualifier' is no longer protected.\n"
    )
    assert "was not protected: nothing changed" in results[7][1]
    with closing(open_repository(url)) as repo:
        assert repo.label_weights(NAME) == {"production": {2: 100}}
        assert repo.label_history(NAME)[0].forced
        assert repo.label_gates(NAME) == {}


def test_a_gate_refusal_is_one_line_in_a_real_process(url: str) -> None:
    with closing(open_repository(url)) as repo:
        repo.protect_label(NAME, "production", min_runs=10)
    done = acti_store(["label", NAME, "production", "2", "--url", url])
    assert (
        done.problems(1, "error: Label 'production' of agent 'lead_qualifier' is protected") == []
    )
    assert done.stdout == "" and re.search(
        '--force --confirm [0-9a-f]{8} --note "why"', done.stderr
    )


def test_run_with_a_key_runs_the_version_its_key_is_sticky_to(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --label L --key K`` on a split label: each key runs its version, every time, and
    the run counts for that version (in this process: the model is scripted)."""
    with closing(open_repository(url)) as repo:
        repo.set_label(NAME, "production", {1: 50, 2: 50})
        before = {v: s.total_executions for v, s in repo.version_stats(NAME).items()}
    # A key that goes to each version, as the split's hash sends them.
    keys = {pick({1: 50, 2: 50}, NAME, "production", f"user-{i}"): f"user-{i}" for i in range(20)}
    model = ScriptedChatModel(script=[AIMessage("Qualified.")], loop=True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setattr("acti_store.execution.runner.init_chat_model", lambda name: model)
    for version in (1, 2, 2, 1):
        argv = ["run", NAME, "Qualify John", "--label", "production", "--key", keys[version]]
        assert main([*argv, "--url", url]) == 0
        assert "Qualified." in capsys.readouterr().out
        system = next(m for m in model.calls[-1] if isinstance(m, SystemMessage)).content
        assert ("Assess budget first" in str(system)) is (version == 2)
    with closing(open_repository(url)) as repo:
        after = {v: s.total_executions for v, s in repo.version_stats(NAME).items()}
    assert {v: after[v] - before.get(v, 0) for v in after} == {1: 2, 2: 2}
