"""Tenant-bound logins (issue 42, item 10): a login the owner binds to one tenant (``acti-store
tenants bind ROLE TENANT``, ``repo.bind_login``) sees and writes only that tenant, whatever it
sets or whichever role it takes: ``set_config`` to another tenant, ``SET ROLE`` to the app role,
``RESET``, a function (its own, or a security-definer one of the app role), a view, a temporary
table named like the bindings. The app role, bound or not, edits no other tenant's row of
``agent_tenants``; the owner's ``repo.tenants()`` still lists every tenant.

Runs in a database of its own with the roles of docs/tenants.md (test_tenant_roles.py) and a
login for a reporting tool, all dropped at the end; the SQLite lane checks that the commands say
in one line that bindings are PostgreSQL's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from conftest import BACKENDS, POSTGRES_URL, SKIP_POSTGRES, fresh_store, make_config
from fresh_database import fresh_postgres_database
from test_tenant_roles import make_record, page_sql, run_as_superuser, unique, with_user

from acti_store import (
    LoginBindingError,
    LoginNotBoundError,
    StoreUnavailableError,
    open_repository,
)
from acti_store.tenancy import TENANT_TABLES

SCHEMA = "acti"


def postgres_only(test: Callable[..., None]) -> Callable[..., None]:
    """A test of the PostgreSQL lane."""
    return pytest.mark.postgresql(pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES)(test))


@dataclass(frozen=True)
class Store:
    """A migrated store of acme's and globex's agents, and the roles around it."""

    url: str  # the superuser's, in the store's database
    owner: str
    app: str
    report: str  # a login for a reporting tool, bound to acme by the tests that need it

    def as_(self, role: str) -> str:
        return with_user(self.url, role)

    def psql(self, role: str | None = None) -> psycopg.Connection[tuple[object, ...]]:
        """A plain connection of ``role`` (None: the superuser), as a person's ``psql``."""
        url = sa.make_url(self.url if role is None else self.as_(role))
        return psycopg.connect(
            host=url.host,
            port=url.port,
            user=url.username,
            password=url.password,
            dbname=url.database,
            autocommit=True,
        )


@pytest.fixture
def store() -> Iterator[Store]:
    suffix = uuid.uuid4().hex[:10]
    owner, app, report = (f"acti_{kind}_{suffix}" for kind in ("owner", "app", "report"))
    assert POSTGRES_URL is not None
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with fresh_postgres_database() as url:
            run_as_superuser(url, unique(page_sql("CREATE ROLE"), owner, app))
            # The reporting tool's login: granted what the app role is, and the app role
            # itself (so that it can try SET ROLE); a schema of the app role's for its tricks.
            run_as_superuser(
                url,
                f"""
                CREATE ROLE {report} LOGIN PASSWORD 'secret' NOSUPERUSER NOBYPASSRLS;
                GRANT USAGE ON SCHEMA {SCHEMA} TO {report};
                ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {SCHEMA}
                    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {report};
                ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA {SCHEMA}
                    GRANT USAGE, SELECT ON SEQUENCES TO {report};
                GRANT {app} TO {report};
                CREATE SCHEMA tricks AUTHORIZATION {app};
                """,
            )
            made = Store(url, owner, app, report)
            with open_repository(made.as_(owner), schema=SCHEMA):
                pass  # the owner migrates the store
            for tenant in ("acme", "globex"):
                with open_repository(made.as_(app), schema=SCHEMA, tenant=tenant) as repo:
                    repo.create(make_config("support_bot", description=f"{tenant}'s bot"))
                    repo.create(make_config(f"{tenant}_only"))
                    repo.record_execution("support_bot", make_record(0))
                    repo.set_label("support_bot", "production", 1)
            yield made
    finally:
        with admin.connect() as conn:
            for role in (report, app, owner):
                conn.execute(sa.text(f'DROP ROLE IF EXISTS "{role}"'))
        admin.dispose()


#: Rows of tenants other than acme, in every tenant table, as a query run by hand counts them.
FOREIGN = " + ".join(
    f"(SELECT count(*) FROM {SCHEMA}.{table} WHERE tenant <> 'acme')"
    for table in sorted(TENANT_TABLES)
)
AGENTS = f"SELECT tenant, name FROM {SCHEMA}.agents ORDER BY tenant, name"
ACME = [("acme", "acme_only"), ("acme", "support_bot")]


def foreign_rows(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute(f"SELECT {FOREIGN}").fetchone()
    assert row is not None
    return int(str(row[0]))


def seen(conn: psycopg.Connection[tuple[object, ...]], sql: str = AGENTS) -> list[object]:
    return [tuple(row) for row in conn.execute(sql)]


def bind(store: Store, role: str, tenant: str) -> None:
    with open_repository(store.as_(store.owner), schema=SCHEMA) as repo:
        repo.bind_login(role, tenant)


@postgres_only
def test_a_bound_login_sees_and_writes_only_its_tenant_whatever_it_tries(store: Store) -> None:
    report, app = store.report, store.app
    with store.psql(report) as conn:  # not bound yet: as the app role, any tenant it sets
        conn.execute("SELECT set_config('acti.tenant', 'globex', false)")
        assert seen(conn) == [("globex", "globex_only"), ("globex", "support_bot")]
    bind(store, report, "acme")

    with store.psql(report) as conn:
        assert seen(conn) == ACME  # no setting: its binding's tenant
        assert foreign_rows(conn) == 0
        # set_config to another tenant, for the session and for one transaction
        conn.execute("SELECT set_config('acti.tenant', 'globex', false)")
        assert seen(conn) == ACME and foreign_rows(conn) == 0
        with conn.transaction():
            conn.execute("SELECT set_config('acti.tenant', 'globex', true)")
            assert foreign_rows(conn) == 0
        # SET ROLE to the app role it was granted, then RESET (role, setting, everything)
        conn.execute(f"SET ROLE {app}")
        assert seen(conn, "SELECT current_user::text, session_user::text") == [(app, report)]
        assert seen(conn) == ACME and foreign_rows(conn) == 0
        conn.execute("RESET ROLE")
        conn.execute("RESET acti.tenant")
        assert foreign_rows(conn) == 0
        conn.execute("SET acti.tenant = 'globex'")
        conn.execute("RESET ALL")
        assert seen(conn) == ACME and foreign_rows(conn) == 0
        # a function of its own, which sets the tenant itself
        conn.execute(
            "CREATE FUNCTION pg_temp.peek(t text) RETURNS bigint LANGUAGE sql AS $$ "
            "SELECT set_config('acti.tenant', t, false); "
            f"SELECT count(*) FROM {SCHEMA}.agents WHERE tenant = t $$"
        )
        assert seen(conn, "SELECT pg_temp.peek('globex')") == [(0,)]
        # a temporary table named like the bindings: the policies read the store's own
        conn.execute("CREATE TEMP TABLE agent_tenant_logins (role name, tenant text)")
        conn.execute(f"INSERT INTO agent_tenant_logins VALUES ('{report}', 'globex')")
        conn.execute(f"SET search_path = pg_temp, {SCHEMA}")
        assert seen(conn) == ACME and foreign_rows(conn) == 0
        # a view of its own
        conn.execute(f"CREATE TEMP VIEW every_agent AS SELECT tenant, name FROM {SCHEMA}.agents")
        assert seen(conn, "SELECT tenant, name FROM every_agent ORDER BY 1, 2") == ACME

    # A security-definer function and a view of the app role's, which the app role itself
    # reads globex through: the bound login reaches no globex row by either.
    with store.psql(app) as conn:
        conn.execute(
            "CREATE FUNCTION tricks.peek(t text) RETURNS bigint LANGUAGE sql SECURITY DEFINER "
            "AS $$ SELECT set_config('acti.tenant', t, false); "
            f"SELECT count(*) FROM {SCHEMA}.agents WHERE tenant = t $$"
        )
        conn.execute(f"CREATE VIEW tricks.every_agent AS SELECT tenant, name FROM {SCHEMA}.agents")
        conn.execute(f"GRANT USAGE ON SCHEMA tricks TO {report}")
        conn.execute(f"GRANT SELECT ON tricks.every_agent TO {report}")
        assert seen(conn, "SELECT tricks.peek('globex')") == [(2,)]
        assert len(seen(conn, "SELECT * FROM tricks.every_agent")) == 2  # globex's, as set
    with store.psql(report) as conn:
        assert seen(conn, "SELECT tricks.peek('globex')") == [(0,)]
        conn.execute("SELECT set_config('acti.tenant', 'globex', false)")
        assert seen(conn, "SELECT tenant, name FROM tricks.every_agent ORDER BY 1, 2") == ACME

    # Writes: none reaches globex, none moves a row there, the binding stays.
    with store.psql(report) as conn:
        conn.execute("SELECT set_config('acti.tenant', 'globex', false)")
        assert (
            conn.execute(
                f"UPDATE {SCHEMA}.agents SET description = 'x' WHERE tenant = 'globex'"
            ).rowcount
            == 0
        )
        assert (
            conn.execute(f"DELETE FROM {SCHEMA}.executions WHERE tenant = 'globex'").rowcount == 0
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                f"INSERT INTO {SCHEMA}.agent_tags (agent_id, tag, tenant) "
                f"SELECT id, 'x', 'globex' FROM {SCHEMA}.agents"
            )
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"UPDATE {SCHEMA}.agents SET tenant = 'globex'")
        conn.execute(f"SET ROLE {app}")
        assert conn.execute(f"DELETE FROM {SCHEMA}.agent_tenant_logins").rowcount == 0
        conn.execute("RESET ROLE")
        assert conn.execute(f"DELETE FROM {SCHEMA}.agent_tenant_logins").rowcount == 0
        assert (
            conn.execute(f"UPDATE {SCHEMA}.agent_tenant_logins SET tenant = 'globex'").rowcount == 0
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"INSERT INTO {SCHEMA}.agent_tenant_logins VALUES ('x', 'globex')")
        assert seen(conn, f"SELECT role::text, tenant FROM {SCHEMA}.agent_tenant_logins") == [
            (report, "acme")
        ]
        assert (
            conn.execute(
                f"UPDATE {SCHEMA}.agents SET description = 'acme''s, edited' "
                "WHERE name = 'acme_only'"
            ).rowcount
            == 1
        )
    with store.psql() as conn:
        descriptions = seen(
            conn,
            f"SELECT tenant, description FROM {SCHEMA}.agents "
            "WHERE name = 'support_bot' ORDER BY 1",
        )
        assert descriptions == [("acme", "acme's bot"), ("globex", "globex's bot")]
        assert seen(conn, f"SELECT count(*) FROM {SCHEMA}.executions") == [(2,)]

    # Through the library: the store of its own tenant works; another tenant's is empty and
    # takes no write.
    with open_repository(store.as_(report), schema=SCHEMA, tenant="acme") as repo:
        assert repo.list_names() == ["acme_only", "support_bot"]
        assert repo.get_history("support_bot").total_executions == 1
    with open_repository(store.as_(report), schema=SCHEMA, tenant="globex", read_only=True) as repo:
        assert repo.list_names() == []
    with pytest.raises(StoreUnavailableError, match="login is bound to another tenant"):
        open_repository(store.as_(report), schema=SCHEMA, tenant="globex")  # registers globex
    with open_repository(store.as_(app), schema=SCHEMA, tenant="globex") as repo:
        assert repo.list_names() == ["globex_only", "support_bot"]

    # Unbound, the login runs as the tenant it sets again, as the app role does.
    with open_repository(store.as_(store.owner), schema=SCHEMA) as repo:
        assert repo.login_bindings() == {report: "acme"}
        assert repo.unbind_login(report) == "acme"
        assert repo.login_bindings() == {}
        with pytest.raises(LoginNotBoundError):
            repo.unbind_login(report)
    with store.psql(report) as conn:
        conn.execute("SELECT set_config('acti.tenant', 'globex', false)")
        assert foreign_rows(conn) > 0


@postgres_only
def test_the_app_role_edits_no_other_tenants_registration(store: Store) -> None:
    """``agent_tenants`` has row-level security: the app role running as acme reads, registers
    and edits acme only; the owner's ``repo.tenants()`` lists every tenant, and a store of the
    app role still registers its own new tenant."""
    app = store.app
    with store.psql(app) as conn:
        conn.execute("SELECT set_config('acti.tenant', 'acme', false)")
        registry = f"{SCHEMA}.agent_tenants"
        assert seen(conn, f"SELECT name FROM {registry}") == [("acme",)]
        assert (
            conn.execute(f"UPDATE {registry} SET created_at = now() WHERE name = 'globex'").rowcount
            == 0
        )
        assert conn.execute(f"DELETE FROM {registry} WHERE name <> 'acme'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"INSERT INTO {registry} (name, created_at) VALUES ('initech', now())")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(f"UPDATE {registry} SET name = 'globex_2'")
    with open_repository(store.as_(app), schema=SCHEMA, tenant="initech") as repo:
        repo.create(make_config("first"))
        assert repo.tenants() == {"default": 0, "initech": 1}  # the app role's own view
    with open_repository(store.as_(store.owner), schema=SCHEMA) as repo:
        assert repo.tenants() == {"acme": 2, "default": 0, "globex": 2, "initech": 1}
    with store.psql() as conn:
        assert seen(conn, f"SELECT name FROM {SCHEMA}.agent_tenants ORDER BY 1") == [
            ("acme",),
            ("globex",),
            ("initech",),
        ]


@postgres_only
def test_every_tenant_table_takes_the_tenant_from_the_binding(store: Store) -> None:
    """The policy of each table of ``tenancy.TENANT_TABLES`` (and of ``agent_tenants``) reads
    the bindings: a revision that adds a tenant table with the policy of before fails here."""
    with store.psql() as conn:
        policies = dict(
            seen(
                conn,
                "SELECT tablename::text, qual FROM pg_policies "
                f"WHERE schemaname = '{SCHEMA}' AND policyname = 'tenant_isolation'",
            )
        )
    assert set(policies) == {*TENANT_TABLES, "agent_tenants"}
    unbound = [t for t, qual in policies.items() if "agent_tenant_logins" not in str(qual)]
    assert unbound == []


@postgres_only
def test_only_the_owner_binds_and_only_logins_row_level_security_holds(store: Store) -> None:
    owner, app, report = store.owner, store.app, store.report
    with open_repository(store.as_(app), schema=SCHEMA, tenant="acme") as repo:
        with pytest.raises(LoginBindingError, match="only the store's owner"):
            repo.bind_login(report, "acme")
        with pytest.raises(LoginBindingError, match="only the store's owner"):
            repo.unbind_login(report)
        assert repo.login_bindings() == {}
    superuser = sa.make_url(store.url).username
    with store.psql() as conn:
        conn.execute(f"CREATE ROLE {report}_b LOGIN BYPASSRLS")
        conn.execute(f"CREATE ROLE {report}_m LOGIN IN ROLE {owner}")
    try:
        with open_repository(store.as_(owner), schema=SCHEMA) as repo:
            refused = {
                superuser: "it is a superuser",
                owner: "it is the store's owner",
                f"{report}_b": "it is BYPASSRLS",
                f"{report}_m": f"it is a member of '{owner}', which is the store's owner",
                "no_such_role": "no role of this name exists",
            }
            for role, why in refused.items():
                with pytest.raises(LoginBindingError, match=re.escape(why)):
                    repo.bind_login(str(role), "acme")
            repo.bind_login(report, "acme")
            repo.bind_login(report, "globex")  # a binding replaced
            assert repo.login_bindings() == {report: "globex"}
    finally:
        with store.psql() as conn:
            conn.execute(f"DROP ROLE {report}_b")
            conn.execute(f"DROP ROLE {report}_m")
    with store.psql(report) as conn:
        assert {row[0] for row in seen(conn)} == {"globex"}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTI_STORE_")}
    return subprocess.run(
        [sys.executable, "-m", "acti_store", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=cwd,
    )


@postgres_only
def test_the_commands_bind_list_and_unbind(store: Store, tmp_path: Path) -> None:
    owner = ["--url", store.as_(store.owner), "--schema", SCHEMA]
    done = _cli(*owner, "tenants", "bind", store.report, "acme", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"Login '{store.report}' bound to tenant 'acme'" in done.stdout
    listed = _cli(*owner, "tenants", "logins", "--json", cwd=tmp_path)
    assert json.loads(listed.stdout) == {store.report: "acme"}
    text = _cli(*owner, "tenants", "logins", cwd=tmp_path)
    assert text.stdout.split() == [store.report, "acme"]
    as_app = ["--url", store.as_(store.app), "--schema", SCHEMA]
    refused = _cli(*as_app, "tenants", "unbind", store.report, cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: only the store's owner")
    assert refused.stderr.count("\n") == 1
    done = _cli(*owner, "tenants", "unbind", store.report, cwd=tmp_path)
    assert done.returncode == 0 and "was bound to tenant 'acme'" in done.stdout
    again = _cli(*owner, "tenants", "unbind", store.report, cwd=tmp_path)
    assert again.returncode == 1 and again.stderr.count("\n") == 1
    assert "is not bound to a tenant" in again.stderr


@pytest.mark.parametrize("engine", [b for b in BACKENDS if b.id != "postgresql"])
def test_bindings_are_postgresql_s(engine: str, tmp_path: Path) -> None:
    """SQLite has no logins and MariaDB no row-level security: the API raises
    ``LoginBindingError`` and each command says so in one line."""
    with fresh_store(engine, tmp_path) as url:
        _refused_without_postgresql(url, tmp_path)


def _refused_without_postgresql(url: str, tmp_path: Path) -> None:
    with open_repository(url) as repo:
        for call in (
            lambda: repo.bind_login("report", "acme"),
            lambda: repo.unbind_login("report"),
            repo.login_bindings,
        ):
            with pytest.raises(LoginBindingError, match="bound logins are PostgreSQL's"):
                call()
    for command in (["bind", "report", "acme"], ["unbind", "report"], ["logins", "--json"]):
        done = _cli("--url", url, "tenants", *command, cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr.startswith("error: tenant-bound logins are PostgreSQL's")
        assert done.stderr.count("\n") == 1 and not done.stdout
