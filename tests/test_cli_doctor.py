"""``acti-store doctor`` (issue 41 §4), run as an operator runs it: a process of its own, on
real stores. Each finding is one line (``ok``, ``warning`` or ``error``, the check, what was
found, what to do); the exit status is 1 when one is an error; ``--json`` gives the same as an
object; it never creates, migrates or changes a store, and never shows a password.

The PostgreSQL tests skip without ``ACTI_STORE_TEST_POSTGRES_URL``; those with a pooler or a
standby of their own (``tests/pg_cluster.py``) also without PgBouncer or the server's binaries.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import MYSQL_URL, POSTGRES_URL, SKIP_MYSQL, SKIP_POSTGRES
from pg_cluster import Cluster, PgBouncer, clusters_missing, pgbouncer_missing
from test_tenant_roles import roles_database, with_user

#: The revision before head that a store is moved back to (``acti-store migrate --to``).
OLDER_REVISION = "0011_label_routing"

needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES)


def acti_store(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``acti-store ARGS`` in a process of its own, with ``env`` added to the environment (and
    no store, pooler or replica chosen by the environment the tests run in)."""
    chosen = ("ACTI_STORE_URL", "ACTI_STORE_SCHEMA", "ACTI_STORE_POOLER", "ACTI_STORE_REPLICA_URLS")
    environment = {k: v for k, v in os.environ.items() if k not in chosen}
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**environment, **env},
    )


def doctor(*args: str, **env: str) -> tuple[int, dict[str, Any]]:
    """``acti-store doctor --json ARGS``: its status and its findings by check (a check that
    reports several, a replica each, keeps its list under ``check``; others their one)."""
    done = acti_store("doctor", "--json", *args, **env)
    assert "Traceback" not in done.stderr, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is (done.returncode == 0), done.stdout
    by_check: dict[str, Any] = {}
    for finding in answer["findings"]:
        by_check.setdefault(finding["check"], []).append(finding)
    return done.returncode, {k: v[0] if len(v) == 1 else v for k, v in by_check.items()}


def statuses(findings: dict[str, Any]) -> dict[str, str]:
    return {check: finding["status"] for check, finding in findings.items()}


@pytest.fixture
def sqlite_store(tmp_path: Path) -> str:
    """A SQLite store at head, made by ``acti-store migrate``."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    done = acti_store("migrate", "--url", url)
    assert done.returncode == 0, done.stderr
    return url


def test_a_healthy_sqlite_store_is_all_ok(sqlite_store: str, tmp_path: Path) -> None:
    done = acti_store("doctor", "--url", sqlite_store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    heads = (line.split(":", 1)[0].split(None, 1) for line in lines)
    checks = {check: status for status, check in heads}
    # The machine's own disk may be nearly full: that is the one warning a fresh store may get.
    assert checks.pop("free disk") in ("ok", "warning")
    assert checks == {
        "server": "ok",
        "revision": "ok",
        "journal mode": "ok",
        "writable": "ok",
    }, done.stdout
    assert f"SQLite {sqlite3.sqlite_version} at {tmp_path / 'store.db'}" in lines[0]
    assert "the latest" in lines[1]

    status, findings = doctor("--url", sqlite_store)
    assert status == 0
    assert list(findings) == ["server", "revision", "journal mode", "free disk", "writable"]
    assert findings["journal mode"]["message"].startswith("wal")
    assert findings["free disk"]["message"].endswith(f"%) in {tmp_path}")


def test_a_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "folder" / "none.db"
    done = acti_store("doctor", "--url", f"sqlite:///{path}")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"error   store: there is no store at {path} (no such file); nothing was created -> "
        f"check --url, or create the store: acti-store --url sqlite:///{path} migrate"
    ]
    assert "Traceback" not in done.stderr
    assert not path.exists() and not path.parent.exists()


def test_a_store_behind_head_says_to_migrate_with_its_options(sqlite_store: str) -> None:
    moved = acti_store("migrate", "--url", sqlite_store, "--to", OLDER_REVISION)
    assert moved.returncode == 0, moved.stderr

    status, findings = doctor("--url", sqlite_store)
    assert status == 1
    revision = findings["revision"]
    assert revision["status"] == "error"
    assert revision["message"].startswith(f"the store is at revision {OLDER_REVISION}, behind ")
    assert revision["advice"] == f"run acti-store --url {sqlite_store} migrate"
    # Read only: the doctor moved nothing.
    current = acti_store("migrate", "--url", sqlite_store, "--current")
    assert f"current: {OLDER_REVISION}" in current.stdout


def test_a_store_a_newer_acti_store_migrated_says_to_upgrade(sqlite_store: str) -> None:
    path = sa.make_url(sqlite_store).database or ""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE acti_store_alembic_version SET version_num = '0099_from_the_future'")
    status, findings = doctor("--url", sqlite_store)
    assert status == 1
    assert findings["revision"] == {
        "check": "revision",
        "status": "error",
        "message": "the store is at revision 0099_from_the_future, which this acti_store does "
        "not know (a newer acti_store migrated it)",
        "advice": "upgrade acti_store to the version that migrated the store",
    }


def test_a_store_in_rollback_journal_mode_is_a_warning_left_as_it_is(sqlite_store: str) -> None:
    path = sa.make_url(sqlite_store).database or ""
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)

    done = acti_store("doctor", "--url", sqlite_store)
    assert done.returncode == 0, done.stdout  # a warning is not a failure
    line = next(line for line in done.stdout.splitlines() if "journal mode" in line)
    assert line.startswith("warning journal mode: delete, not wal")
    assert line.endswith(f"switches it to wal: acti-store --url {sqlite_store} migrate")
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_file_that_is_not_a_store_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE notes (body text)")
    status, findings = doctor("--url", f"sqlite:///{path}")
    assert status == 1
    assert findings["revision"]["status"] == "error"
    assert "holds no acti_store store" in findings["revision"]["message"]


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    url = "postgresql+psycopg://someone:hunter2@127.0.0.1:9/acti"
    done = acti_store("doctor", "--url", url)
    assert done.returncode == 1
    assert done.stdout.startswith("error   connection: cannot open the store: ")
    assert len(done.stdout.splitlines()) == 1
    assert "hunter2" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def pg_store(postgres_schema: str) -> str:
    """A PostgreSQL store at head in a schema of its own (the conftest's, by ``search_path``)."""
    done = acti_store("migrate", "--url", postgres_schema)
    assert done.returncode == 0, done.stderr
    return postgres_schema


@needs_postgres
def test_postgresql_as_a_superuser_warns_that_row_level_security_is_bypassed(
    pg_store: str,
) -> None:
    status, findings = doctor("--url", pg_store)
    assert status == 0, findings  # warnings only
    assert findings["server"]["message"].startswith("PostgreSQL ")
    assert statuses(findings) == {
        "server": "ok",
        "revision": "ok",
        "pooler": "ok",
        "row-level security": "warning",
        "pg_trgm": "ok",
    }
    role = sa.make_url(pg_store).username
    assert findings["row-level security"]["message"].startswith(
        f"the role {role} is a superuser: row-level security does not apply to it"
    )
    assert "NOSUPERUSER NOBYPASSRLS" in findings["row-level security"]["advice"]
    assert findings["pooler"]["message"].startswith("none detected")


@pytest.fixture
def app_role_store() -> Iterator[tuple[str, str]]:
    """A database with the roles of docs/tenants.md, the store migrated by the owner into
    ``acti``: (the owner's URL, the app role's URL), both with passwords."""
    with roles_database() as (url, owner, app):
        owner_url = with_user(url, owner)
        done = acti_store("--schema", "acti", "migrate", "--url", owner_url)
        assert done.returncode == 0, done.stderr
        yield owner_url, with_user(url, app)


@needs_postgres
def test_postgresql_as_the_app_role_of_the_tenants_page_is_all_ok(
    app_role_store: tuple[str, str],
) -> None:
    _, app_url = app_role_store
    done = acti_store("doctor", "--url", app_url, "--schema", "acti", "--tenant", "acme")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "secret" not in done.stdout
    assert [line.split(None, 1)[0] for line in done.stdout.splitlines()] == ["ok"] * 5, done.stdout
    app = sa.make_url(app_url).username
    assert f"ok      row-level security: applies to the role {app}" in done.stdout


@needs_postgres
def test_a_replica_that_is_not_a_standby_is_an_error(pg_store: str) -> None:
    assert POSTGRES_URL is not None
    status, findings = doctor("--url", pg_store, ACTI_STORE_REPLICA_URLS=POSTGRES_URL)
    assert status == 1
    replica = findings["replica"]
    assert replica["status"] == "error"
    location = sa.make_url(POSTGRES_URL).render_as_string(hide_password=True)
    assert replica["message"] == (
        f"{location} is not a standby (pg_is_in_recovery() is false): a write there would not "
        "reach the store"
    )


@needs_postgres
def test_an_unreachable_replica_is_an_error_the_rest_still_checked(pg_store: str) -> None:
    down = "postgresql+psycopg://postgres:hunter2@127.0.0.1:9/test"
    done = acti_store("doctor", "--url", pg_store, ACTI_STORE_REPLICA_URLS=f" {down} ,")
    assert done.returncode == 1
    replica = [line for line in done.stdout.splitlines() if " replica: " in line]
    assert len(replica) == 1
    assert replica[0].startswith("error   replica: postgresql+psycopg://postgres:***@127.0.0.1:9")
    assert "hunter2" not in done.stdout
    assert "ok      revision:" in done.stdout


@pytest.mark.postgresql
@pytest.mark.skipif(bool(clusters_missing()), reason=clusters_missing() or "")
def test_a_streaming_standby_is_ok_with_its_lag() -> None:
    with Cluster("doctor_primary") as primary, Cluster.standby_of(primary) as standby:
        primary.execute("CREATE TABLE t (n int)", "INSERT INTO t VALUES (1)")
        status, findings = doctor("--url", primary.url(), ACTI_STORE_REPLICA_URLS=standby.url())
    replica = findings["replica"]
    assert replica["status"] in ("ok", "warning"), replica
    assert replica["message"].startswith(f"{standby.url()} is a standby, ")
    assert " bytes behind " in replica["message"]
    assert findings["row-level security"]["status"] == "warning"
    assert status == 1  # the primary holds no store yet
    assert findings["revision"]["status"] == "error"


@needs_postgres
@pytest.mark.skipif(bool(pgbouncer_missing()), reason=pgbouncer_missing() or "")
@pytest.mark.parametrize("pool_size", [1, 2])
def test_a_transaction_pooler_is_detected_and_must_be_configured(pool_size: int) -> None:
    assert POSTGRES_URL is not None
    server = sa.make_url(POSTGRES_URL)
    with PgBouncer(server.port or 5432, server.host or "127.0.0.1", pool_size=pool_size) as pooler:
        url = pooler.url(server.database or "postgres")
        status, findings = doctor("--url", url)
        assert status == 1
        assert findings["pooler"]["status"] == "error"
        assert findings["pooler"]["message"].startswith(
            "a pooler in transaction mode is in front of the server"
        )
        assert findings["pooler"]["advice"].startswith("open the store with --pooler transaction")

        _, configured = doctor("--url", url, ACTI_STORE_POOLER="transaction")
        assert configured["pooler"]["status"] == "ok"
        assert configured["pooler"]["message"].endswith("and the store is configured for it")


@needs_postgres
@pytest.mark.skipif(bool(pgbouncer_missing()), reason=pgbouncer_missing() or "")
def test_a_store_behind_a_configured_pooler_is_read_in_its_schema() -> None:
    """Through the pooler a session's search path does not last: the store's revision is still
    read in its own schema, every check made anew in each transaction."""
    assert POSTGRES_URL is not None
    server = sa.make_url(POSTGRES_URL)
    schema = f"acti_doctor_{uuid.uuid4().hex[:10]}"
    migrated = acti_store("--schema", schema, "migrate", "--url", POSTGRES_URL)
    assert migrated.returncode == 0, migrated.stderr
    try:
        with PgBouncer(server.port or 5432, server.host or "127.0.0.1") as pooler:
            url = pooler.url(server.database or "postgres")
            done = acti_store("--pooler", "transaction", "doctor", "--url", url, "--schema", schema)
        lines = {line.split(":", 1)[0]: line for line in done.stdout.splitlines()}
        assert lines["ok      revision"].endswith(", the latest"), done.stdout
        assert lines["ok      pooler"].endswith("and the store is configured for it"), done.stdout
    finally:
        admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        finally:
            admin.dispose()


@needs_postgres
def test_a_pooler_configured_but_not_there_is_ok_with_a_note(pg_store: str) -> None:
    _, findings = doctor("--url", pg_store, ACTI_STORE_POOLER="transaction")
    assert findings["pooler"]["status"] == "ok"
    assert findings["pooler"]["message"].startswith("configured for a transaction pooler; none")
    assert findings["pooler"]["advice"] is not None


def test_an_unknown_pooler_mode_is_an_error(sqlite_store: str) -> None:
    status, findings = doctor("--url", sqlite_store, ACTI_STORE_POOLER="session")
    assert status == 1
    assert findings["options"]["message"] == (
        "ACTI_STORE_POOLER='session' is not a pooler mode acti_store knows: use none or transaction"
    )


@pytest.mark.mysql
@pytest.mark.skipif(not MYSQL_URL, reason=SKIP_MYSQL)
def test_a_mariadb_store_is_all_ok(mysql_database: str) -> None:
    migrated = acti_store("migrate", "--url", mysql_database)
    assert migrated.returncode == 0, migrated.stderr
    status, findings = doctor("--url", mysql_database)
    assert status == 0, findings
    assert statuses(findings) == {"server": "ok", "revision": "ok", "isolation": "ok"}
    assert "-MariaDB" in findings["server"]["message"]
    assert findings["isolation"]["message"] == "sessions run at READ-COMMITTED"
