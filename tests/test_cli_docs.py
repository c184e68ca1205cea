"""Every ``acti-store`` command is in the "Command line" table of docs/cli.md, and every option has
help.

Built from the parser itself (as sqlite-utils' ``test_docs.py`` does), so a command or option added
without documentation fails here.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from acti_store.cli import build_parser, main

README = Path(__file__).resolve().parents[1] / "README.md"
#: The full command reference (README keeps only a few commands in brief).
CLI_DOCS = README.parent / "docs" / "cli.md"
#: Options the table's introduction covers once for every command.
COMMON_OPTIONS = {"-h", "--help", "--url", "--schema", "--tenant"}


def commands_action() -> argparse._SubParsersAction[argparse.ArgumentParser]:
    (action,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return dict(commands_action().choices)


def readme_rows() -> dict[str, str]:
    """The first cell of each row of docs/cli.md's command table, by command name."""
    section = CLI_DOCS.read_text(encoding="utf-8").split("# Command line\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)([^|]*)\|", section, flags=re.MULTILINE)
    return {command: f"{command}{rest}" for command, rest in rows}


def test_every_command_is_in_the_readme_table() -> None:
    assert sorted(readme_rows()) == sorted(subcommands())


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_of_a_command_is_in_its_readme_row(command: str) -> None:
    row = readme_rows()[command]
    missing = [
        action.option_strings
        for action in subcommands()[command]._actions
        if action.option_strings
        and not COMMON_OPTIONS.intersection(action.option_strings)
        and not any(re.search(rf"{option}\b", row) for option in action.option_strings)
    ]
    assert missing == []


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_argument_and_option_has_help(command: str) -> None:
    parser = subcommands()[command]
    undocumented = [
        action.dest
        for action in parser._actions
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert undocumented == []


def test_every_command_has_a_summary_in_the_top_level_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    summaries = {choice.dest: choice.help for choice in commands_action()._choices_actions}
    assert sorted(summaries) == sorted(subcommands())
    assert all(summaries.values()), summaries

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    assert re.search(
        r"\n +migrate +bring the database schema to the latest revision\n", capsys.readouterr().out
    )


def _help(action: argparse.Action) -> str:
    return (action.help or "") % {"default": action.default, "prog": "acti-store"}


def _options() -> list[tuple[str, argparse.Action]]:
    """Every argument and option of every command but ``--help`` and ``--url``, by command."""
    return [
        (command, action)
        for command, parser in sorted(subcommands().items())
        for action in parser._actions
        if not COMMON_OPTIONS.intersection(action.option_strings)
    ]


#: A range as the help texts write it: ``1-100``, ``1.0-300.0``, ``at least 0``, ``0 or more``.
RANGE = re.compile(r"\d+(\.\d+)?-\d+|at least \d|\d+ or more")


def _label(command: str, action: argparse.Action) -> str:
    return f"{command} {'/'.join(action.option_strings) or action.dest}"


def test_every_option_with_choices_shows_them() -> None:
    hidden = [
        _label(command, action)
        for command, action in _options()
        if action.choices
        and action.metavar is not None  # without a metavar, argparse shows {a,b,...} itself
        and not all(str(choice) in _help(action) for choice in action.choices)
    ]
    assert hidden == []


def test_the_stratum_and_tool_options_list_every_value() -> None:
    from acti_store.models import STRATA, TOOL_CATEGORIES

    for command, action in _options():
        if action.dest == "stratum":
            assert all(code in _help(action) for code in STRATA), _label(command, action)
        if action.dest == "tools":
            assert all(t in _help(action) for t in TOOL_CATEGORIES), _label(command, action)


def test_every_number_option_shows_its_range() -> None:
    numeric = [
        (command, action)
        for command, action in _options()
        if action.type in (int, float) or action.metavar in ("N", "S", "SECONDS")
    ]
    assert len(numeric) >= 6  # search --limit/--min-executions, history --limit, run, record
    assert [_label(c, a) for c, a in numeric if not RANGE.search(_help(a))] == []


def test_every_option_with_a_value_shows_its_default() -> None:
    missing = [
        _label(command, action)
        for command, action in _options()
        if action.option_strings
        and action.nargs != 0  # a flag is off unless given
        and action.default not in (None, "")
        and "default" not in _help(action)
    ]
    assert missing == []
    limit = next(a for c, a in _options() if c == "search" and a.dest == "limit")
    assert "1-100 (default: 20)" in _help(limit)


def test_date_options_show_their_format() -> None:
    dates = [(c, a) for c, a in _options() if a.metavar == "DATE"]
    assert {a.dest for _, a in dates} == {"created_after", "created_before"}
    assert all("YYYY-MM-DD" in _help(a) or "date" in _help(a) for _, a in dates)
    assert all("ISO 8601" in _help(a) for _, a in dates)


def test_the_top_level_help_shows_url_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # as read, whatever the help's wrapping
    assert "--url URL" in out and "--version" in out and "a --url after the command" in out


def test_readme_links_nothing_outside_the_repository() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    outside = [
        t for t in targets if "://" in t or t.startswith(("/", "..")) or ".." in Path(t).parts
    ]
    assert outside == []
    assert [t for t in targets if not (README.parent / t.split("#")[0]).exists()] == []


def test_the_license_pyproject_promises_exists() -> None:
    import tomllib

    root = README.parent
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    text = (root / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) ")
    assert "acti_store contributors" in text.splitlines()[2]
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
