"""Every ``acti-store`` command is in README's "Command line" table, and every option has help.

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
#: Options the table's introduction covers once for every command.
COMMON_OPTIONS = {"-h", "--help", "--url"}


def commands_action() -> argparse._SubParsersAction[argparse.ArgumentParser]:
    (action,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return dict(commands_action().choices)


def readme_rows() -> dict[str, str]:
    """The first cell of each row of README's command table, by command name."""
    section = README.read_text(encoding="utf-8").split("## Command line\n", 1)[1]
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
    assert (
        "migrate       bring the database schema to the latest revision\n"
        in capsys.readouterr().out
    )
