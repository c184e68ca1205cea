"""The PostgreSQL roles of docs/tenants.md work as the page says: its SQL, run as written (the
role names made unique), gives an owner role that migrates the store and an app role that runs
it, and row-level security keeps the app role's sessions to one tenant.

Runs in a database of its own, with roles of its own, both dropped at the end; skipped without
``ACTI_STORE_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import POSTGRES_URL, SKIP_POSTGRES, make_config
from fresh_database import fresh_postgres_database

from acti_store import AgentNotFoundError, ExecutionRecord, open_repository

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES),
]

PAGE = Path(__file__).resolve().parents[1] / "docs" / "tenants.md"
SCHEMA = "acti"


def page_sql(marker: str) -> str:
    """The page's block of SQL that holds ``marker``: ``CREATE ROLE`` makes the two roles,
    ``REVOKE`` takes back what the app role does not need, after the first migration."""
    text = PAGE.read_text(encoding="utf-8")
    blocks: list[str] = re.findall(r"^```text\n(.*?)^```$", text, re.M | re.S)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"docs/tenants.md: one ```text block holds {marker}"
    return found[0]


def unique(sql: str, owner: str, app: str) -> str:
    """``sql`` with the page's role names replaced by ``owner`` and ``app``."""
    return re.sub(r"\bacti_owner\b", owner, re.sub(r"\bacti_app\b", app, sql))


def run_as_superuser(url: str, sql: str) -> None:
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements(sql):
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


def with_user(url: str, user: str) -> str:
    return sa.make_url(url).set(username=user, password="secret").render_as_string(False)


@pytest.fixture
def roles() -> Iterator[tuple[str, str, str]]:
    """A fresh database with the page's roles in it: (database URL, owner role, app role)."""
    with roles_database() as made:
        yield made


@contextmanager
def roles_database() -> Iterator[tuple[str, str, str]]:
    """``roles`` for any scope (the pooler's and the doctor's tests use it too): a database of
    its own with the page's roles, made unique; the roles dropped with it."""
    suffix = uuid.uuid4().hex[:10]
    owner, app = f"acti_owner_{suffix}", f"acti_app_{suffix}"
    sql = unique(page_sql("CREATE ROLE"), owner, app)
    assert POSTGRES_URL is not None
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with fresh_postgres_database() as url:
            run_as_superuser(url, sql)
            yield url, owner, app
    finally:
        with admin.connect() as conn:  # the database (its grants with it) is gone: the roles go
            for role in (app, owner):
                conn.execute(sa.text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


def rows(url: str, sql: str, setting: str | None = None) -> list[tuple[object, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if setting is not None:
                conn.execute(sa.text("SELECT set_config('acti.tenant', :t, false)"), {"t": setting})
            return [tuple(row) for row in conn.execute(sa.text(sql))]
    finally:
        engine.dispose()


def test_owner_migrates_and_app_role_is_held_to_its_tenant(roles: tuple[str, str, str]) -> None:
    url, owner, app = roles
    owner_url, app_url = with_user(url, owner), with_user(url, app)

    done = subprocess.run(
        [sys.executable, "-m", "acti_store", "--schema", SCHEMA, "migrate", "--url", owner_url],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "now at 0015_tenant_logins" in done.stdout

    # What the app role does not need on the store's own records, taken back as the page says.
    run_as_superuser(url, unique(page_sql("REVOKE"), owner, app))

    attributes = rows(
        url, f"SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = '{app}'"
    )
    assert attributes == [(False, False, True)]

    for tenant in ("acme", "globex"):
        with open_repository(app_url, schema=SCHEMA, tenant=tenant) as repo:
            repo.create(make_config("support_bot", description=f"Answers {tenant}'s customers"))
            repo.create(make_config(f"{tenant}_only"))
    with open_repository(app_url, schema=SCHEMA, tenant="acme") as repo:
        assert repo.list_names() == ["acme_only", "support_bot"]
        assert repo.get("support_bot").description == "Answers acme's customers"
        with pytest.raises(AgentNotFoundError):
            repo.get("globex_only")
        # The registry is under row-level security too: the app role sees its own tenant,
        # the owner (the operator) every tenant.
        assert repo.tenants() == {"acme": 2, "default": 0}
    with open_repository(owner_url, schema=SCHEMA) as repo:
        assert repo.tenants() == {"acme": 2, "default": 0, "globex": 2}

    agents = f"SELECT name, tenant FROM {SCHEMA}.agents ORDER BY name"
    assert rows(app_url, agents) == []  # no acti.tenant: no row
    assert rows(app_url, agents, "acme") == [("acme_only", "acme"), ("support_bot", "acme")]
    assert rows(app_url, f"SELECT count(*) FROM {SCHEMA}.executions") == [(0,)]
    assert rows(owner_url, agents) == []  # forced: the owner is bound too
    assert len(rows(url, agents)) == 4  # the superuser is not

    with pytest.raises(sa.exc.ProgrammingError, match="row-level security"):
        rows(
            app_url,
            f"INSERT INTO {SCHEMA}.agent_tags (agent_id, tag, tenant) "
            f"SELECT id, 'x', 'globex' FROM {SCHEMA}.agents",
            "acme",
        )
    with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
        rows(app_url, f"CREATE TABLE {SCHEMA}.not_yours (id integer)")
    # The store's revision and its tenant registry: read (and registered into), never rewritten.
    for rewrite in (
        f"UPDATE {SCHEMA}.acti_store_alembic_version SET version_num = version_num",
        f"DELETE FROM {SCHEMA}.acti_store_alembic_version",
        f"INSERT INTO {SCHEMA}.acti_store_alembic_version VALUES ('0001_fake')",
        f"UPDATE {SCHEMA}.agent_tenants SET name = name",
        f"DELETE FROM {SCHEMA}.agent_tenants",
    ):
        with pytest.raises(sa.exc.ProgrammingError, match="permission denied"):
            rows(app_url, rewrite, "acme")

    # A table a later migration creates (as the owner) is granted to the app role by default.
    engine = sa.create_engine(owner_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE {SCHEMA}.later (id serial PRIMARY KEY)"))
    finally:
        engine.dispose()
    engine = sa.create_engine(app_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO {SCHEMA}.later DEFAULT VALUES"))
            assert conn.execute(sa.text(f"SELECT count(*) FROM {SCHEMA}.later")).scalar() == 1
    finally:
        engine.dispose()


def test_app_role_imports_a_folder_with_histories(
    roles: tuple[str, str, str], tmp_path: Path
) -> None:
    """A role held to its tenant by row-level security imports through the CLI: PostgreSQL
    refuses ``COPY FROM`` there, so the rows go by statement (the import failed as "the store is
    unavailable" before)."""
    url, owner, app = roles
    migrated = subprocess.run(
        [sys.executable, "-m", "acti_store", "--schema", SCHEMA, "migrate"],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "ACTI_STORE_URL": with_user(url, owner)},
    )
    assert migrated.returncode == 0, migrated.stderr
    source = f"sqlite:///{tmp_path / 'source.db'}"
    runs = 20  # more rows of each kind than the import sends by statement
    with open_repository(source) as repo:
        for i in range(30):
            repo.create(make_config(f"agent_{i:02d}", tags=["crm", f"t{i}"]))
        for k in range(runs):
            repo.record_execution("agent_00", make_record(k))
    folder = tmp_path / "agents"
    env = {**os.environ, "ACTI_STORE_URL": source}
    exported = subprocess.run(
        [sys.executable, "-m", "acti_store", "export", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert exported.returncode == 0, exported.stderr

    imported = subprocess.run(
        [sys.executable, "-m", "acti_store", "--schema", SCHEMA, "import", str(folder)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "ACTI_STORE_URL": with_user(url, app), "ACTI_STORE_TENANT": "acme"},
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "Traceback" not in imported.stderr

    with open_repository(with_user(url, app), schema=SCHEMA, tenant="acme") as repo:
        assert repo.list_names() == [f"agent_{i:02d}" for i in range(30)]
        history = repo.get_history("agent_00", limit=50)
        assert history.total_executions == runs
        assert [r.task for r in history.executions] == [f"task {k}" for k in reversed(range(runs))]
        assert repo.get("agent_29").tags == ["crm", "t29"]
    with open_repository(with_user(url, app), schema=SCHEMA, tenant="globex") as repo:
        assert repo.list_names() == []


def make_record(k: int) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=k),
        task=f"task {k}",
        success=k % 3 != 0,
        duration_seconds=1.5,
        result_summary=f"result {k}",
    )
