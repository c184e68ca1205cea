"""``acti-store migrate``: the revision before and after, ``--check``, ``--current``, ``--sql``
and ``--to``, on both engines; and the public ``acti_store.migrations.alembic_config``."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from conftest import make_config
from sqlalchemy.engine import make_url
from test_schema_safety import put_revision_in_legacy_table

from acti_store import SearchQuery, open_repository
from acti_store.cli import main as cli_main
from acti_store.cli.store import MIGRATE_LEGACY_TABLE, MIGRATE_NOT_AT_HEAD
from acti_store.engine import LEGACY_VERSION_TABLE, VERSION_TABLE
from acti_store.migrations import alembic_config

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ScriptDirectory.from_config(alembic_config())
HEAD = SCRIPT.get_current_head()
#: The revision just below head.
PREVIOUS = SCRIPT.get_revision(HEAD).down_revision


def revision(url: str, table: str = VERSION_TABLE) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(table):
                return []
            return list(conn.execute(sa.text(f"SELECT version_num FROM {table}")).scalars())
    finally:
        engine.dispose()


def test_migrate_prints_the_revision_before_and_after(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["migrate", "--url", store_url]) == 0
    assert capsys.readouterr().out == (
        f"Schema was at revision none; now at {HEAD}, the latest revision.\n"
    )
    assert cli_main(["migrate", "--url", store_url]) == 0
    assert capsys.readouterr().out == f"Schema is at {HEAD}, the latest revision (nothing to do).\n"


def test_check_and_current_print_both_revisions_and_check_fails_below_head(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command.upgrade(alembic_config(store_url), str(PREVIOUS))
    assert revision(store_url) == [PREVIOUS]

    assert cli_main(["migrate", "--check", "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == f"current: {PREVIOUS}\nhead: {HEAD}\n"
    assert err == f"error: {MIGRATE_NOT_AT_HEAD}\n"
    assert cli_main(["migrate", "--current", "--url", store_url]) == 0
    assert capsys.readouterr().out == f"current: {PREVIOUS}\nhead: {HEAD}\n"
    assert revision(store_url) == [PREVIOUS]  # neither wrote anything

    assert cli_main(["migrate", "--url", store_url]) == 0
    assert capsys.readouterr().out == (
        f"Schema was at revision {PREVIOUS}; now at {HEAD}, the latest revision.\n"
    )
    assert cli_main(["migrate", "--check", "--url", store_url]) == 0
    assert capsys.readouterr().out == f"current: {HEAD}\nhead: {HEAD}\n"


def test_sql_prints_the_upgrade_from_the_current_revision_and_changes_nothing(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command.upgrade(alembic_config(store_url), str(PREVIOUS))

    assert cli_main(["migrate", "--sql", "--url", store_url]) == 0

    sql = capsys.readouterr().out
    assert f"UPDATE {VERSION_TABLE} SET version_num='{HEAD}'" in sql
    assert f"WHERE {VERSION_TABLE}.version_num = '{PREVIOUS}'" in sql
    assert "CREATE TABLE agents" not in sql  # only the step from the current revision
    assert revision(store_url) == [PREVIOUS]


def test_to_downgrades_and_upgrades_to_a_revision(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    open_repository(store_url).close()

    assert cli_main(["migrate", "--to", "0003_search", "--url", store_url]) == 0
    assert capsys.readouterr().out == f"Schema was at revision {HEAD}; now at 0003_search.\n"
    assert revision(store_url) == ["0003_search"]
    assert cli_main(["migrate", "--to", str(PREVIOUS), "--url", store_url]) == 0
    assert capsys.readouterr().out == f"Schema was at revision 0003_search; now at {PREVIOUS}.\n"
    assert revision(store_url) == [PREVIOUS]

    assert cli_main(["migrate", "--to", "0999_nowhere", "--url", store_url]) == 1
    assert "'0999_nowhere' is not one of" in capsys.readouterr().err
    assert revision(store_url) == [PREVIOUS]
    open_repository(store_url).close()
    assert revision(store_url) == [HEAD]


def test_printed_sql_of_the_last_step_brings_the_store_to_head(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The printed SQL is what a DBA would run: applied as printed, the store is at head."""
    command.upgrade(alembic_config(store_url), str(PREVIOUS))
    assert cli_main(["migrate", "--sql", "--url", store_url]) == 0
    run_script(store_url, capsys.readouterr().out)
    assert revision(store_url) == [HEAD]
    assert cli_main(["migrate", "--check", "--url", store_url]) == 0
    repo = open_repository(store_url)
    repo.close()


def acti_store(*argv: str) -> subprocess.CompletedProcess[str]:
    """``acti-store ARGV`` in a process of its own, as a person runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACTI_STORE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def run_script(url: str, sql: str) -> None:
    """Run printed SQL as a DBA would: the whole script, on a connection of its own."""
    connect_args: dict[str, Any] = {}
    if url.startswith(("mysql", "mariadb")):  # a script is many statements: PyMySQL must be told
        from pymysql.constants import CLIENT

        connect_args["client_flag"] = CLIENT.MULTI_STATEMENTS
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT", connect_args=connect_args)
    try:
        with engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            if engine.dialect.name == "sqlite":
                raw.executescript(sql)
            else:
                with raw.cursor() as cursor:
                    cursor.execute(sql)
                    while cursor.nextset():  # MariaDB: each statement's result, in turn
                        pass
    finally:
        engine.dispose()


def sqlite_schema(path: Path) -> list[tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    return sorted((kind, name, " ".join((sql or "").split())) for kind, name, sql in rows)


@pytest.mark.slow  # processes of their own
def test_sql_on_an_empty_database_prints_the_whole_upgrade(store_url: str, tmp_path: Path) -> None:
    """Every revision, the data steps (no rows yet) as comments; run as printed, the store is
    at head, the same as one migrated online, and works."""
    done = acti_store("migrate", "--sql", "--url", store_url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    sql = done.stdout
    assert "-- Running upgrade  -> 0001_v1" in sql
    assert f"-> {HEAD}" in sql and f"version_num='{HEAD}'" in sql
    assert "-- 0002_v2: computes each agent's tool mask: nothing to do" in sql
    assert revision(store_url) == []  # printing changed nothing

    run_script(store_url, sql)
    assert revision(store_url) == [HEAD]
    assert acti_store("migrate", "--check", "--url", store_url).returncode == 0
    repo = open_repository(store_url)
    try:
        repo.create(make_config())
        assert [a.name for a in repo.search(SearchQuery(query="qualif"))] == ["lead_qualifier"]
    finally:
        repo.close()
    if store_url.startswith("sqlite"):  # the same schema as an upgrade online
        online = tmp_path / "online.db"
        open_repository(f"sqlite:///{online}").close()
        assert sqlite_schema(Path(make_url(store_url).database or "")) == sqlite_schema(online)


@pytest.mark.slow  # processes of their own
def test_sql_refuses_before_printing_when_a_data_step_must_read_rows(store_url: str) -> None:
    """A store at an old revision may hold rows a data step converts: nothing is printed."""
    command.upgrade(alembic_config(store_url), "0001_v1")

    done = acti_store("migrate", "--sql", "--url", store_url)

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: revision 0002_v2 computes each agent's tool mask from the stored rows and "
        "cannot be printed as SQL: run this upgrade online (acti-store migrate)\n"
    )
    assert revision(store_url) == ["0001_v1"]


def test_check_fails_while_the_revision_is_still_in_the_old_table_even_at_head(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store an earlier acti_store left at head, its revision in ``alembic_version``: not
    "at head" for --check until ``acti-store migrate`` has moved the revision."""
    open_repository(store_url).close()
    put_revision_in_legacy_table(store_url)

    assert cli_main(["migrate", "--check", "--url", store_url]) == 1
    out, err = capsys.readouterr()
    assert out == f"current: {HEAD}\nhead: {HEAD}\n"
    assert err == f"error: {MIGRATE_LEGACY_TABLE}\n"
    assert "run acti-store migrate to move it to acti_store_alembic_version" in err
    assert cli_main(["migrate", "--current", "--url", store_url]) == 0
    assert capsys.readouterr() == (
        f"current: {HEAD}\nhead: {HEAD}\n",
        f"warning: {MIGRATE_LEGACY_TABLE}\n",
    )
    assert revision(store_url, LEGACY_VERSION_TABLE) == [HEAD]  # neither moved it

    assert cli_main(["migrate", "--url", store_url]) == 0
    assert capsys.readouterr().out == f"Schema is at {HEAD}, the latest revision (nothing to do).\n"
    assert revision(store_url) == [HEAD]
    assert revision(store_url, LEGACY_VERSION_TABLE) == []
    assert cli_main(["migrate", "--check", "--url", store_url]) == 0
    assert capsys.readouterr() == (f"current: {HEAD}\nhead: {HEAD}\n", "")
