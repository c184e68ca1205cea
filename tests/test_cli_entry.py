"""How ``acti-store`` meets a person before any command runs (issue 49, item 7), in a real
process: bare, it prints its help as a usage error (stderr, status 2: nothing was done); a
mistyped command is answered
with the command it resembles; ``--read-only`` works before the command as ``--url`` does;
``tenants --help`` offers no ``--tenant``, which it refuses; ``--schema`` says what it means on
MariaDB. A call builds its own command's parser only, and answers as the whole parser does."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest
from conftest import make_config
from test_cli_errors_commands import acti_store

from acti_store import open_repository
from acti_store.cli import COMMAND_MODULES, MODULES, build_parser, command_module
from acti_store.cli.options import GLOBAL_FLAGS, GLOBAL_VALUE_OPTIONS, package_version

pytestmark = pytest.mark.slow  # a process per command


def test_bare_acti_store_prints_its_help_and_status_2() -> None:
    done = acti_store([])
    assert done.status == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith("usage: acti-store ")
    assert " list " in done.stderr and " migrate " in done.stderr  # the commands, described
    lines = done.stderr.splitlines()
    assert lines[-1] == "acti-store: error: a COMMAND is required: one of those above"
    assert sum("error:" in line for line in lines) == 1  # as every usage error


def test_a_mistyped_command_is_told_the_one_it_resembles() -> None:
    done = acti_store(["lsit"])
    assert done.status == 2 and "Traceback" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == (
        "acti-store: error: argument COMMAND: invalid choice: 'lsit'; did you mean 'list'? "
        "(acti-store --help lists every command)"
    )
    far = acti_store(["frobnicate"])  # nothing close: every command, as argparse lists them
    assert far.status == 2 and "did you mean" not in far.stderr
    assert "invalid choice: 'frobnicate' (choose from" in far.stderr


def test_read_only_before_the_command_works_as_after_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_repository(url) as repo:
        repo.create(make_config())
    before = acti_store(["--read-only", "--url", url, "list"])
    after = acti_store(["--url", url, "list", "--read-only"])
    assert before.status == 0 == after.status, before.stderr
    assert before.stdout == after.stdout and "lead_qualifier" in before.stdout
    # A command that writes takes no --read-only, before it as after it: a usage error.
    refused = acti_store(["--read-only", "--url", url, "delete", "lead_qualifier", "--yes"])
    assert refused.status == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == (
        "acti-store: error: delete takes no --read-only: it writes"
    )
    with open_repository(url) as repo:
        assert repo.list_names() == ["lead_qualifier"]


def test_tenants_help_offers_no_tenant_option() -> None:
    done = acti_store(["tenants", "--help"])
    assert done.status == 0
    assert "[--tenant" not in done.stdout and "--tenant NAME" not in done.stdout  # not offered
    assert "--url" in done.stdout and "--read-only" in done.stdout
    refused = acti_store(["--tenant", "acme", "tenants"])  # before the command: still refused
    assert refused.status == 1 and "give it no --tenant" in refused.stderr


def test_schema_help_says_it_is_a_database_on_mariadb() -> None:
    helps = [a.help or "" for a in build_parser()._actions if "--schema" in a.option_strings]
    assert helps and all("MariaDB" in h and "database" in h for h in helps)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_table_of_commands_is_what_each_module_registers() -> None:
    # The quick look's table names every command, in the help's order, with its own module.
    assert list(COMMAND_MODULES) == list(_commands(build_parser()))
    for module in MODULES:
        registered = _commands(build_parser(module))
        assert list(registered) == [c for c, m in COMMAND_MODULES.items() if m == module]
        assert hasattr(command_module(module), "register")


def test_the_options_read_past_before_the_command_are_the_parsers() -> None:
    # A global option missing from GLOBAL_VALUE_OPTIONS would make its value read as a command.
    options = {
        option: action.nargs
        for action in build_parser()._actions
        for option in action.option_strings
        if option.startswith("--") and option not in ("--help", "--version")
    }
    assert set(options) == {*GLOBAL_VALUE_OPTIONS, *GLOBAL_FLAGS}
    assert all(options[option] == 0 for option in GLOBAL_FLAGS)
    assert all(options[option] != 0 for option in GLOBAL_VALUE_OPTIONS)


def _parsed_output(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, str, object]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return out.getvalue(), err.getvalue(), vars(parser.parse_args(argv))
        except SystemExit as exc:
            return out.getvalue(), err.getvalue(), exc.code


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "--help"],
        ["--url", "sqlite:///x.db", "--read-only", "history"],  # its argument missing
        ["--pooler", "bogus", "list"],  # a global option's error
        ["--url=sqlite:///x.db", "--replica", "sqlite:///y.db", "search", "--limit", "0"],
        ["--tenant", "acme", "versions", "lead_qualifier", "--limit", "3"],
        ["relay", "--help"],
    ],
)
def test_a_commands_own_parser_answers_as_the_whole_parser(argv: list[str]) -> None:
    only = build_parser(COMMAND_MODULES[next(w for w in argv if w in COMMAND_MODULES)])
    whole = _parsed_output(build_parser(), argv)
    mine = _parsed_output(only, argv)
    assert mine[:2] == whole[:2]
    if isinstance(whole[2], dict):
        assert isinstance(mine[2], dict)
        assert {k: v for k, v in mine[2].items() if k != "func"} == {
            k: v for k, v in whole[2].items() if k != "func"
        }
    else:
        assert mine[2] == whole[2]


def test_the_process_prints_a_commands_help_and_the_version_as_before() -> None:
    done = acti_store(["--url", "sqlite:///x.db", "show", "--help"])
    assert done.status == 0 and done.stderr == ""
    assert done.stdout == _commands(build_parser())["show"].format_help()
    version = acti_store(["--version"])
    assert version.status == 0 and version.stdout == f"acti-store {package_version()}\n"
