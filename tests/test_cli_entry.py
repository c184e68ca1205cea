"""How ``acti-store`` meets a person before any command runs (issue 49, item 7), in a real
process: bare, it prints its help as a usage error (stderr, status 2: nothing was done); a
mistyped command is answered
with the command it resembles; ``--read-only`` works before the command as ``--url`` does;
``tenants --help`` offers no ``--tenant``, which it refuses; ``--schema`` says what it means on
MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_config
from test_cli_errors_commands import acti_store

from acti_store import open_repository
from acti_store.cli import build_parser

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
