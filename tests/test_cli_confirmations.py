"""Issue 49, item 1: a command ``acti-store`` prints is a complete command, and a confirmation is
bound to what it confirms.

Each test previews as a person does (a fresh process, the options or the environment that chose
the store and tenant), then pastes the printed command verbatim into a shell that has none of that
environment, often in another folder, and checks which store's and tenant's agents it touched.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from acti_store import open_repository
from acti_store.cli.confirm import program
from tests.conftest import make_config

ROOT = Path(__file__).resolve().parents[1]
NAME = "research_assistant"
#: ``acti-store`` in a pasting shell: this worktree's code, as the installed command runs it.
SHELL_COMMAND = f'acti-store() {{ {shlex.quote(sys.executable)} -m acti_store "$@"; }}'


def acti(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``acti-store ARGV`` in a fresh process in ``cwd``, with ``env`` as its only ACTI_STORE_*
    variables."""
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *argv],
        capture_output=True,
        text=True,
        env=_environment(env),
        cwd=cwd,
        check=False,
        timeout=120,
    )


def paste(
    command: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into a shell in ``cwd`` that has none of the previewing environment
    (``env``: the only ACTI_STORE_* variables it has)."""
    return subprocess.run(
        ["bash", "-c", f"{SHELL_COMMAND}\n{command}"],
        capture_output=True,
        text=True,
        env=_environment(env),
        cwd=cwd,
        check=False,
        timeout=120,
    )


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("ACTI_STORE")}
    return {**clean, "PYTHONPATH": str(ROOT), **(env or {})}


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a refused command (status 1, nothing on stdout, no traceback)."""
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.rstrip("\n")


def printed(text: str, after: str) -> str:
    """The command printed on the line after ``after``."""
    lines = text.splitlines()
    return lines[lines.index(after) + 1].strip()


def seed(url: str, *tenants: str) -> None:
    """Agent ``NAME`` at v2 with a ``production`` label on v1, in each of ``tenants``."""
    for tenant in tenants:
        with open_repository(url, tenant=tenant) as repo:
            repo.create(make_config(NAME))
            repo.update(NAME, {"description": f"Researches for {tenant}, with sources"})
            repo.set_label(NAME, "production", 1)


def versions(url: str, tenant: str) -> int | None:
    """``NAME``'s version in ``tenant`` of the store at ``url`` (None: not there)."""
    with open_repository(url, tenant=tenant) as repo:
        return repo.get(NAME).metadata.version if repo.exists(NAME) else None


def test_a_tenants_delete_pasted_in_a_clean_shell_deletes_that_tenants_agent(
    tmp_path: Path,
) -> None:
    """The issue's case: ``--tenant t1 delete`` printed a command that deleted the default
    tenant's agent. The printed command carries the tenant; the preview names the versions and
    labels that go with the agent."""
    home, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    default_store = f"sqlite:///{home / 'outputs' / 'acti_store.db'}"
    other_store = f"sqlite:///{elsewhere / 'outputs' / 'acti_store.db'}"
    seed(default_store, "default", "t1")
    seed(other_store, "t1")

    preview = acti("--tenant", "t1", "delete", NAME, cwd=home)
    assert (preview.returncode, preview.stderr) == (0, "")
    assert "  - its 2 versions (v1-v2)\n  - its labels: production -> v1\n" in preview.stdout
    command = printed(preview.stdout, "To confirm deletion, run:")
    assert re.fullmatch(rf"acti-store --tenant t1 delete {NAME} --confirm [0-9a-f]{{8}}", command)

    # The default store is a file of the folder it was previewed in: elsewhere it is another
    # store, whose t1 has an agent of that name too, and the code refuses it.
    done = paste(command, elsewhere)
    assert "does not match what this command would act on now" in refusal(done)
    assert "tenant 't1'" in done.stderr and "nothing was changed" in done.stderr
    assert versions(other_store, "t1") == 2

    done = paste(command, home)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert done.stdout.startswith(f"SUCCESS: Agent '{NAME}' has been permanently deleted.")
    assert versions(default_store, "t1") is None
    assert versions(default_store, "default") == 2


def test_a_tenant_from_the_environment_is_printed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url, "default", "t1")
    preview = acti(
        "delete", NAME, cwd=tmp_path, env={"ACTI_STORE_URL": url, "ACTI_STORE_TENANT": "t1"}
    )
    command = printed(preview.stdout, "To confirm deletion, run:")
    assert command.startswith('acti-store --url "$ACTI_STORE_URL" --tenant t1 delete ')

    done = paste(command, tmp_path, env={"ACTI_STORE_URL": url})
    assert (done.returncode, done.stderr) == (0, ""), done
    assert (versions(url, "t1"), versions(url, "default")) == (None, 2)


def test_a_relative_url_is_printed_whole_and_acts_on_that_database_from_anywhere(
    tmp_path: Path,
) -> None:
    """``--url sqlite:///x.db``: the printed command ran against outputs/acti_store.db."""
    home, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    chosen, default_store = home / "x.db", f"sqlite:///{home / 'outputs' / 'acti_store.db'}"
    seed(f"sqlite:///{chosen}", "default")
    seed(default_store, "default")

    preview = acti("--url", "sqlite:///x.db", "delete", NAME, "--keep-history", cwd=home)
    command = printed(preview.stdout, "To confirm deletion, run:")
    assert command.startswith(f"acti-store --url sqlite:///{chosen} delete {NAME} --keep-history ")

    done = paste(command, elsewhere)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert versions(f"sqlite:///{chosen}", "default") is None
    assert versions(default_store, "default") == 2
    assert not (elsewhere / "outputs").exists()


def test_a_url_from_the_environment_is_referred_to_and_refused_without_it(
    tmp_path: Path,
) -> None:
    """A URL from ACTI_STORE_URL is printed as "$ACTI_STORE_URL": pasted where it is not set, the
    command would reach the default store, and is refused; where it is set, it deletes."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url, "default")
    seed(f"sqlite:///{tmp_path / 'outputs' / 'acti_store.db'}", "default")

    preview = acti("delete", NAME, cwd=tmp_path, env={"ACTI_STORE_URL": url})
    command = printed(preview.stdout, "To confirm deletion, run:")
    assert command.startswith('acti-store --url "$ACTI_STORE_URL" delete ')

    assert "does not match" in refusal(paste(command, tmp_path))
    assert versions(f"sqlite:///{tmp_path / 'outputs' / 'acti_store.db'}", "default") == 2

    done = paste(command, tmp_path, env={"ACTI_STORE_URL": url})
    assert (done.returncode, done.stderr) == (0, ""), done
    assert versions(url, "default") is None


def test_a_password_is_never_printed() -> None:
    given = argparse.Namespace(
        url="postgresql+psycopg://acti:s3cret@db.example:5432/acti", schema="acti", tenant="t1"
    )
    assert program(given) == 'acti-store --url "$ACTI_STORE_URL" --schema acti --tenant t1'
    given.url = "postgresql+psycopg://acti@db.example:5432/acti?password=s3cret"
    assert "s3cret" not in program(given)
    given.url = "postgresql+psycopg://acti@db.example:5432/acti"
    assert program(given).startswith("acti-store --url postgresql+psycopg://acti@db.example")


def test_a_stale_delete_code_is_refused_and_a_bare_yes_still_deletes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url, "default")
    preview = acti("--url", url, "delete", NAME, cwd=tmp_path)
    command = printed(preview.stdout, "To confirm deletion, run:")
    with open_repository(url) as repo:  # the agent moves on after the preview
        repo.update(NAME, {"description": "Researches topics, and summarises them"})

    line = refusal(paste(command, tmp_path))
    assert f"agent '{NAME}' v3 in the store at {tmp_path / 'store.db'}, tenant 'default'" in line
    assert versions(url, "default") == 3

    done = acti("--url", url, "delete", NAME, "--yes", cwd=tmp_path)  # a script's bare --yes
    assert (done.returncode, done.stderr) == (0, ""), done
    assert versions(url, "default") is None


def test_a_rollback_is_bound_to_the_version_it_previewed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url, "default", "t1")
    preview = acti("--url", url, "--tenant", "t1", "rollback", NAME, "1", cwd=tmp_path)
    command = printed(preview.stdout, "Nothing was changed. To roll back, call:")
    assert re.fullmatch(
        rf"acti-store --url sqlite:///{tmp_path}/store.db --tenant t1 rollback {NAME} 1 "
        "--confirm [0-9a-f]{8}",
        command,
    )
    with open_repository(url, tenant="t1") as repo:
        repo.update(NAME, {"description": "Researches topics, and summarises them"})
    line = refusal(paste(command, tmp_path))
    assert f"rolling agent '{NAME}' v3 back to v1" in line
    assert versions(url, "t1") == 3

    preview = acti("--url", url, "--tenant", "t1", "rollback", NAME, "1", cwd=tmp_path)
    done = paste(printed(preview.stdout, "Nothing was changed. To roll back, call:"), tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done
    assert (versions(url, "t1"), versions(url, "default")) == (4, 2)


def test_a_refused_forced_label_move_prints_a_bound_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url, "default", "t1")
    for tenant in ("default", "t1"):
        with open_repository(url, tenant=tenant) as repo:
            repo.protect_label(NAME, "production", min_runs=5)

    refused = acti("--url", url, "--tenant", "t1", "label", NAME, "production", "2", cwd=tmp_path)
    found = re.search(r'To move it anyway, run: (.*?--note "why")', refusal(refused))
    assert found is not None
    command = found.group(1)
    assert re.fullmatch(
        rf"acti-store --url sqlite:///{tmp_path}/store.db --tenant t1 label {NAME} production 2 "
        '--force --confirm [0-9a-f]{8} --note "why"',
        command,
    )

    with open_repository(url, tenant="t1") as repo:  # the label moves after the refusal
        repo.set_label(NAME, "production", 1, force=True, note="back to one")
        repo.remove_label(NAME, "production")
    assert "from unset to 2" in refusal(paste(command, tmp_path))
    with open_repository(url, tenant="t1") as repo:
        assert "production" not in repo.labels(NAME)
        repo.set_label(NAME, "production", 1, force=True, note="back where it was")

    done = paste(command, tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done
    for tenant, version in (("t1", 2), ("default", 1)):
        with open_repository(url, tenant=tenant) as repo:
            assert repo.labels(NAME)["production"] == version
