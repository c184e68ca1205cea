"""MariaDB's DDL is not transactional: a migration killed part way leaves a half-made schema.

A MariaDB migration marks its start before its first DDL and removes the mark in its last commit
(``acti_store.revisions.mark_migration``). A migration killed at every few DDL statements of the
revision chain leaves a store that a read-only open refuses and ``acti-store migrate`` finishes;
an interrupted upgrade of a store holding data is refused, with what to do, writing nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from conftest import MYSQL_URL, SKIP_MYSQL, make_config

from acti_store import SchemaVersionError, SearchQuery, open_repository
from acti_store.cli import main as cli_main
from acti_store.engine import MIGRATION_PROGRESS_TABLE, VERSION_TABLE
from acti_store.migrations import alembic_config

pytestmark = [pytest.mark.mysql, pytest.mark.skipif(not MYSQL_URL, reason=SKIP_MYSQL)]

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "workers" / "killed_migration.py"
SCRIPT = ScriptDirectory.from_config(alembic_config())
HEAD = SCRIPT.get_current_head()
PREVIOUS = SCRIPT.get_revision(HEAD).down_revision
#: Kill the migration after every STEP-th DDL statement of the chain (and after the last).
STEP = 3


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """A Python process of its own on this checkout, as a person runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACTI_STORE_URL", None)
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def killed_migration(url: str, kill_after: int, route: str = "cli") -> int:
    """Migrate in a child killed after its ``kill_after``-th DDL; 0: to the end, returns the
    number of DDL statements it ran."""
    child = run(str(WORKER), url, str(kill_after), route)
    if kill_after:
        assert child.returncode == -9, child.stderr
        return kill_after
    assert child.returncode == 0, child.stderr
    return int(child.stdout.split()[-1])


def acti_store(*argv: str) -> subprocess.CompletedProcess[str]:
    return run("-m", "acti_store", *argv)


def recreate(url: str) -> None:
    """Drop the database ``url`` names and create it again, empty."""
    database = sa.make_url(url).database
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE `{database}`"))
            conn.execute(sa.text(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4"))
    finally:
        admin.dispose()


def tables(url: str) -> dict[str, int]:
    """Every table of the database, with its row count."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            names = sa.inspect(conn).get_table_names()
            return {
                name: conn.execute(sa.text(f"SELECT COUNT(*) FROM `{name}`")).scalar_one()
                for name in names
            }
    finally:
        engine.dispose()


def assert_finished_by_migrate(url: str, point: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The store a killed migration left: refused read-only, finished by ``acti-store migrate``,
    then working and at head."""
    with pytest.raises(SchemaVersionError):
        open_repository(url, read_only=True).close()
    done = acti_store("migrate", "--url", url)
    assert done.returncode == 0, f"{point}: {done.stderr}"
    assert "Traceback" not in done.stderr, point
    assert MIGRATION_PROGRESS_TABLE not in tables(url), point
    repo = open_repository(url)
    try:
        repo.create(make_config())
        assert repo.get("lead_qualifier").name == "lead_qualifier"
        assert [a.name for a in repo.search(SearchQuery(query="qualif"))] == ["lead_qualifier"]
    finally:
        repo.close()
    assert cli_main(["migrate", "--check", "--url", url]) == 0, point
    assert capsys.readouterr().out == f"current: {HEAD}\nhead: {HEAD}\n", point


@pytest.mark.timeout(900)  # two migrations per kill point, ~20 points: minutes on a busy machine
def test_a_migration_killed_at_any_ddl_is_finished_by_migrate(
    mysql_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = mysql_database
    total = killed_migration(url, 0)
    assert total > 2 * STEP
    for kill_after in [*range(1, total - 1, STEP), total - 1]:
        recreate(url)
        killed_migration(url, kill_after)
        assert_finished_by_migrate(url, f"killed after DDL {kill_after} of {total}", capsys)


def test_a_migration_killed_after_its_last_commit_opens(mysql_database: str) -> None:
    """The last DDL drops the emptied marker, after the commit: the store is whole."""
    total = killed_migration(mysql_database, 0)
    recreate(mysql_database)
    killed_migration(mysql_database, total)
    open_repository(mysql_database, read_only=True).close()
    assert cli_main(["migrate", "--check", "--url", mysql_database]) == 0


def test_an_alembic_upgrade_killed_part_way_is_finished_by_migrate(
    mysql_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    total = killed_migration(mysql_database, 0, "alembic")
    recreate(mysql_database)
    killed_migration(mysql_database, total // 2, "alembic")
    assert_finished_by_migrate(mysql_database, f"alembic killed after DDL {total // 2}", capsys)


def test_an_interrupted_upgrade_of_a_store_with_data_is_refused(mysql_database: str) -> None:
    url = mysql_database
    repo = open_repository(url)
    try:
        repo.create(make_config())
    finally:
        repo.close()
    # What an upgrade from PREVIOUS to HEAD killed part way leaves: the revision of its start,
    # and its marker.
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": PREVIOUS})
            conn.execute(
                sa.text(
                    f"CREATE TABLE {MIGRATION_PROGRESS_TABLE} (started_at DATETIME(6) NOT NULL, "
                    "from_revision VARCHAR(255) NOT NULL, to_revision VARCHAR(255) NOT NULL)"
                )
            )
            conn.execute(
                sa.text(
                    f"INSERT INTO {MIGRATION_PROGRESS_TABLE} "
                    "VALUES ('2026-01-02 03:04:05', :before, :to)"
                ),
                {"before": PREVIOUS, "to": HEAD},
            )
    finally:
        engine.dispose()
    before = tables(url)

    refused = acti_store("migrate", "--url", url)
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert refused.stderr == (
        f"error: the migration from revision {PREVIOUS} to {HEAD} (started 2026-01-02 03:04:05 "
        "UTC) was interrupted part way (killed, or it failed); MariaDB cannot undo schema "
        "changes, so the store's schema is half-made, and it holds data (in "
        "agent_change_counters, agent_changes, agent_store_settings, agent_tags, agent_versions, "
        "agents). Nothing was "
        "changed. Restore the database from its backup, "
        "then run acti-store migrate\n"
    )
    assert tables(url) == before
    with pytest.raises(SchemaVersionError, match="has not finished"):
        open_repository(url, read_only=True)
    with pytest.raises(SchemaVersionError, match="interrupted part way"):
        open_repository(url)
    assert tables(url) == before


def test_processes_creating_a_store_at_once_wait_for_the_running_migration(
    mysql_database: str,
) -> None:
    """A running migration's marker is not taken for an interrupted one: the others wait on
    the migration lock, and find the store made when they get it."""
    opening = "import sys; from acti_store import open_repository; open_repository(sys.argv[1])"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", opening, mysql_database],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(5)
    ]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    assert MIGRATION_PROGRESS_TABLE not in tables(mysql_database)
    open_repository(mysql_database, read_only=True).close()
