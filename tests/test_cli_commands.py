"""What the ``acti-store`` commands pass on: options to the tools, run values to the model's rule.

The reading commands print exactly what the builder tool answers for the same arguments (a
refusal: its text on one ``error:`` line of stderr, ``cli.options.one_line``); the run
command checks its task and timeout with ``ExecutionRequest`` and works without the ``agents``
extra as far as saying it is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acti_store import open_repository
from acti_store.cli import build_parser, main
from acti_store.cli.options import one_line
from acti_store.models import MAX_TAGS, TASK_MAX_LENGTH, TIMEOUT_DEFAULT, TIMEOUT_MAX, TIMEOUT_MIN
from acti_store.repository import SqlAgentRepository
from acti_store.tools.builder import BuilderTools
from acti_store.tools.texts import CLI_CALLS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def quickstarted(store_url: str, capsys: pytest.CaptureFixture[str]) -> Iterator[BuilderTools]:
    """The quickstart store, and the tools' logic bound to it in CLI wording (to compare with)."""
    assert main(["quickstart", "--url", store_url]) == 0
    capsys.readouterr()
    repo: SqlAgentRepository = open_repository(store_url)
    try:
        yield BuilderTools(lambda: repo, calls=CLI_CALLS)
    finally:
        repo.close()


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "arguments"),
    [
        (
            ["--min-executions", "1", "--sort-by", "execution_count", "--limit", "1"],
            {"min_executions": 1, "sort_by": "execution_count", "limit": 1},
        ),
        (
            ["--tag", "sales", "--tag", "production", "--created-after", "2000-01-01"],
            {"tags": ["sales", "production"], "created_after": "2000-01-01"},
        ),
        (
            ["agent", "--created-before", "2000-01-01"],
            {"query": "agent", "created_before": "2000-01-01"},
        ),
        (["--limit", "0"], {"limit": 0}),
    ],
    ids=["usage", "tags-and-dates", "no-match", "refused"],
)
def test_search_prints_what_the_tool_answers_for_the_same_arguments(
    quickstarted: BuilderTools,
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    arguments: dict[str, object],
) -> None:
    text, artifact = quickstarted.search_agents(**arguments)
    status = main(["search", *argv, "--url", store_url])
    out, err = capsys.readouterr()
    if artifact["status"] != "success":
        assert (status, out, err) == (1, "", f"error: {one_line(text)}\n")
        return
    # The "usage" search is cut by its limit (1 of 2): the CLI says so on a line of its own.
    cut = "showing 1 of 2 matching agents: narrow the search, or raise --limit (at most 100)\n"
    assert (status, err) == (0, "")
    assert out == text + "\n" + (cut if argv[-2:] == ["--limit", "1"] else "")


def test_the_search_options_reach_the_tool(
    quickstarted: BuilderTools, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = cli(
        capsys,
        "search",
        "--min-executions",
        "1",
        "--sort-by",
        "execution_count",
        "--url",
        store_url,
    )
    assert status == 0 and "Found: 2 agent(s)" in out
    assert out.index("1. lead_qualifier") < out.index("2. research_assistant")
    status, out = cli(capsys, "search", "--tag", "sales", "--tag", "research", "--url", store_url)
    assert status == 0 and "Filters: tags=[sales, research]\nFound: 0 agent(s)" in out


def test_a_search_for_more_tags_than_an_agent_has_is_refused(
    quickstarted: BuilderTools, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tag`` x 120 (issue 25: 5.1 s on PostgreSQL): refused at once, as the tool refuses it."""
    tags = [f"tag-{i}" for i in range(120)]
    assert main(["search", *(f"--tag={t}" for t in tags), "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: Invalid search parameter.")
    assert f"at most {MAX_TAGS} tags" in err
    assert err == f"error: {one_line(quickstarted.search_agents(tags=tags)[0])}\n"


def test_history_options_reach_the_tool(
    quickstarted: BuilderTools, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, _ = quickstarted.get_agent_history(name="lead_qualifier", limit=1)
    assert cli(capsys, "history", "lead_qualifier", "--limit", "1", "--url", store_url) == (
        0,
        text + "\n",
    )
    assert main(["history", "lead_qualifier", "--limit", "0", "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: Invalid history parameter. Validation errors: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["", "--timeout", "20"], "argument task: String should have at least 1 character"),
        (
            ["x" * (TASK_MAX_LENGTH + 1)],
            f"argument task: String should have at most {TASK_MAX_LENGTH} characters",
        ),
        (["Go", "--timeout", "0.5"], "argument --timeout: Input should be greater than or equal"),
        (["Go", "--timeout", "301"], "argument --timeout: Input should be less than or equal"),
        (["Go", "--timeout", "inf"], "argument --timeout: Input should be a finite number"),
        (["Go", "--timeout", "soon"], "argument --timeout: Input should be a valid number"),
    ],
    ids=["empty-task", "long-task", "short-timeout", "long-timeout", "inf", "not-a-number"],
)
def test_run_refuses_what_the_execution_request_refuses(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["run", "lead_qualifier", *argv])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: acti-store run")
    assert f"acti-store run: error: {message}" in err


def test_run_accepts_the_execution_request_bounds() -> None:
    parser = build_parser()
    task = "x" * TASK_MAX_LENGTH
    for timeout in (TIMEOUT_MIN, TIMEOUT_MAX):
        args = parser.parse_args(["run", "lead_qualifier", task, "--timeout", f"{timeout:g}"])
        assert (args.task, args.timeout, args.skip_unavailable_tools) == (task, timeout, True)
    assert parser.parse_args(["run", "a", "Go"]).timeout == TIMEOUT_DEFAULT


WITHOUT_AGENTS_EXTRA = """
import sys
sys.modules["deepagents"] = None  # as if the agents extra were not installed
from acti_store.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_run_without_the_agents_extra_says_how_to_install_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = ["run", "lead_qualifier", "Qualify John", "--url", f"sqlite:///{tmp_path / 's.db'}"]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_AGENTS_EXTRA, *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith(
        "error: Cannot execute agent 'lead_qualifier' - the agent runtime is not installed."
    )
    assert done.stderr.endswith('Install it with: pip install "acti-store[agents]"\n')
    assert done.stderr.count("\n") == 1
