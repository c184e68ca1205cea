"""Nothing that reads or checks writes (issue 49, item 4), run as a person runs it (a process).

``migrate --check``, ``--current`` and ``--sql`` read the store on a read-only engine: where
there is none they create no file and no folder. A command that only reads (``list``, ``show``,
...) neither creates nor migrates a store: where there is none, or one behind the latest
revision, it says so in one line with the command that makes or upgrades it, and the database
is left as it was (an empty PostgreSQL schema stays empty, a missing one missing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from conftest import POSTGRES_URL, SKIP_POSTGRES
from sqlalchemy.engine import make_url

from acti_store.cli.options import NO_STORE, STORE_BEHIND
from acti_store.engine import VERSION_TABLE, head_revisions
from acti_store.migrations import alembic_config

ROOT = Path(__file__).resolve().parents[1]
(HEAD,) = head_revisions()
CREATE = "create one with {command} migrate, or with any command that writes"


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``acti-store ARGV`` in ``cwd``, without ``ACTI_STORE_URL``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACTI_STORE_EXPORT_DIR": ""}
    for name in ("ACTI_STORE_URL", "ACTI_STORE_SCHEMA", "ACTI_STORE_TENANT"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one ``error: ...`` line of a refusal with status 1 (no traceback)."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0].removeprefix("error: ")


def test_checks_in_an_empty_folder_create_nothing(tmp_path: Path) -> None:
    default = tmp_path / "outputs" / "acti_store.db"
    no_store = NO_STORE.format(where=default, command="acti-store")

    check = run(tmp_path, "migrate", "--check")
    assert check.stdout == f"current: none\nhead: {HEAD}\n"
    assert one_error(check) == no_store
    current = run(tmp_path, "migrate", "--current")
    assert (current.returncode, current.stderr) == (0, "")
    assert current.stdout == f"current: none\nhead: {HEAD}\n"
    sql = run(tmp_path, "migrate", "--sql")
    assert (sql.returncode, sql.stderr) == (0, "")
    assert f"CREATE TABLE {VERSION_TABLE}" in sql.stdout
    assert one_error(run(tmp_path, "list")) == no_store  # not a store built by the checks
    assert list(tmp_path.iterdir()) == []

    elsewhere = tmp_path / "no_folder" / "x.db"
    url = f"sqlite:///{elsewhere}"
    for mode in ("--check", "--current", "--sql"):
        done = run(tmp_path, "migrate", mode, "--url", url)
        assert done.returncode == (1 if mode == "--check" else 0), done.stderr
    assert list(tmp_path.iterdir()) == []

    made = run(tmp_path, "migrate")  # the one that writes makes the store
    assert made.returncode == 0 and default.is_file()
    check = run(tmp_path, "migrate", "--check")
    assert (check.returncode, check.stdout) == (0, f"current: {HEAD}\nhead: {HEAD}\n")


def test_a_read_command_on_an_empty_file_or_a_store_behind_migrates_nothing(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    url = f"sqlite:///{empty}"
    assert one_error(run(tmp_path, "list", "--url", url)) == NO_STORE.format(
        where=empty, command=f"acti-store --url {url}"
    )
    assert empty.stat().st_size == 0

    behind = tmp_path / "behind.db"
    url = f"sqlite:///{behind}"
    previous = ScriptDirectory.from_config(alembic_config()).get_revision(HEAD).down_revision
    assert isinstance(previous, str)
    command.upgrade(alembic_config(url), previous)
    size = behind.stat().st_size
    for argv in (["list"], ["show", "lead_qualifier"], ["search", "lead"]):
        assert one_error(run(tmp_path, *argv, "--url", url, "--tenant", "acme")) == (
            STORE_BEHIND.format(
                where=behind,
                current=previous,
                heads=HEAD,
                command=f"acti-store --url {url} --tenant acme",
            )
        )
    assert _revision(url) == [previous] and behind.stat().st_size == size


@pytest.mark.postgresql
@pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES)
def test_a_read_command_on_postgresql_leaves_an_empty_schema_empty(
    tmp_path: Path, postgres_schema: str
) -> None:
    server = make_url(postgres_schema).difference_update_query(["options"])
    url = server.render_as_string(hide_password=False)
    schema = make_url(postgres_schema).query["options"].partition("=")[2]
    missing = f"{schema}_missing"
    for name in (schema, missing):
        for argv in (["list"], ["search", "lead"], ["migrate", "--check"]):
            done = run(tmp_path, "--url", url, "--schema", name, *argv)
            assert "there is no store at " in one_error(done)
            assert f"--schema {name} migrate" in done.stderr
        current = run(tmp_path, "--url", url, "--schema", name, "migrate", "--current")
        assert (current.returncode, current.stdout) == (0, f"current: none\nhead: {HEAD}\n")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            relations = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :schema"
                ),
                {"schema": schema},
            ).scalar_one()
            found = conn.execute(
                sa.text("SELECT count(*) FROM pg_namespace WHERE nspname = :name"),
                {"name": missing},
            ).scalar_one()
    finally:
        engine.dispose()
    assert (relations, found) == (0, 0)
    assert list(tmp_path.iterdir()) == []


def _revision(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())
    finally:
        engine.dispose()
