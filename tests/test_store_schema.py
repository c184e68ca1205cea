"""A PostgreSQL schema of its own: ``open_repository(url, schema=...)``, ``ACTI_STORE_SCHEMA``,
``--schema`` and Alembic's ``-x schema=``. Every object of the store and its revision live in that
schema, beside an application's own ``agents`` table in ``public``, which nothing acti_store does
can reach; without a schema the store stays where stores have always been. Each PostgreSQL test
has a database of its own (``public`` and the extensions are the database's, not a schema's).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from conftest import make_config
from fresh_database import extension_schema, fresh_postgres_database, relations

from acti_store import (
    ExecutionRecord,
    SchemaVersionError,
    SearchQuery,
    SqlAgentRepository,
    StoreUnavailableError,
    StoreUrlError,
    open_repository,
)
from acti_store.cli import main as cli_main
from acti_store.engine import (
    ENV_SCHEMA,
    SCHEMA_NAME_RULE,
    TENANT_LOGINS_TABLE,
    VERSION_TABLE,
    migrations_dir,
)
from acti_store.migrations import alembic_config
from acti_store.schema import Base

ROOT = Path(__file__).resolve().parents[1]
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()
PREVIOUS = ScriptDirectory.from_config(alembic_config()).get_revision(HEAD).down_revision
HOST_REVISION = "a1b2c3d4e5f6"
#: A PostgreSQL URL nothing listens on: the checks of a schema name come before any connection.
UNREACHABLE_PG = "postgresql+psycopg://app@127.0.0.1:9/app"
#: The store's own tables: its ORM tables and its version table.
STORE_TABLES = {*Base.metadata.tables, VERSION_TABLE, TENANT_LOGINS_TABLE}  # PostgreSQL's store


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_postgres_database() as url:
        yield url


def sql(url: str, *statements: str) -> list[list[tuple[object, ...]]]:
    """Run ``statements`` in one transaction on a plain connection; each one's rows."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            results = [conn.execute(sa.text(s)) for s in statements]
            return [[tuple(r) for r in res] if res.returns_rows else [] for res in results]
    finally:
        engine.dispose()


def create_host_tables(url: str) -> None:
    """The application's own ``agents`` table and Alembic revision, in ``public``."""
    sql(
        url,
        "CREATE TABLE public.agents (id SERIAL PRIMARY KEY, email TEXT NOT NULL UNIQUE)",
        "INSERT INTO public.agents (email) VALUES ('ada@example.com'), ('alan@example.com')",
        "CREATE TABLE public.alembic_version (version_num VARCHAR(32) PRIMARY KEY)",
        f"INSERT INTO public.alembic_version VALUES ('{HOST_REVISION}')",
    )


def host_state(url: str) -> list[list[tuple[object, ...]]]:
    """The application's tables as it sees them: rows, columns and indexes."""
    return sql(
        url,
        "SELECT * FROM public.agents ORDER BY id",
        "SELECT * FROM public.alembic_version",
        "SELECT table_name, column_name, data_type, is_nullable, column_default "
        "FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 2",
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    )


def tables(url: str, schema: str) -> set[str]:
    return {name for name, kind in relations(url, schema).items() if kind in "rp"}


def use_the_store(repo: SqlAgentRepository) -> None:
    """Every kind of statement: create, update, a run, history, search by substring and tag."""
    repo.create(make_config())
    repo.create(make_config("web_researcher", description="Researches topics", tags=["web"]))
    repo.update("lead_qualifier", {"tags": ["sales"]}, expected_version=1)
    repo.record_execution("lead_qualifier", _record(repo))
    assert repo.get_history("lead_qualifier").total_executions == 1
    assert [a.name for a in repo.search(SearchQuery(query="qualif"))] == ["lead_qualifier"]
    assert [a.name for a in repo.search(SearchQuery(tags=["web"]))] == ["web_researcher"]
    assert repo.clone("web_researcher", "web_two").metadata.version == 1
    repo.delete("web_two")


def _record(repo: SqlAgentRepository) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(),
        task="Qualify John",
        result_summary="HIGH",
        success=True,
        duration_seconds=1.5,
        tool_calls_count=1,
    )


def trigram_index_plan(repo: SqlAgentRepository) -> str:
    """The plan of a substring match on names, with scans of the table ruled out."""
    with repo.engine.begin() as conn:
        conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        plan = conn.execute(sa.text("EXPLAIN SELECT id FROM agents WHERE lower(name) LIKE '%ual%'"))
        return "\n".join(str(row[0]) for row in plan)


def operator_class_of(url: str, schema: str, index: str) -> str:
    """The operator class of ``schema.index``'s one column, qualified with its schema."""
    ((found,),) = sql(
        url,
        "SELECT n.nspname || '.' || o.opcname FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace cn ON cn.oid = c.relnamespace "
        "JOIN pg_opclass o ON o.oid = i.indclass[0] "
        "JOIN pg_namespace n ON n.oid = o.opcnamespace "
        f"WHERE cn.nspname = '{schema}' AND c.relname = '{index}'",
    )[0]
    return str(found)


# -- every object in the schema, beside the application's tables -----------------------------------


@pytest.mark.postgresql
def test_every_object_of_the_store_lives_in_its_schema_beside_an_applications_agents(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    create_host_tables(database)
    public_before, host_before = relations(database, "public"), host_state(database)

    assert cli_main(["--schema", "acti", "migrate", "--url", database]) == 0
    assert capsys.readouterr().out == (
        f"Schema was at revision none; now at {HEAD}, the latest revision.\n"
    )
    repo = open_repository(database, schema="acti")
    try:
        use_the_store(repo)
        assert "ix_agents_trgm_name" in trigram_index_plan(repo)
    finally:
        repo.close()

    assert tables(database, "acti") == STORE_TABLES
    assert {"ix_agents_trgm_name", "ix_agents_trgm_description"} <= set(relations(database, "acti"))
    # pg_trgm was not installed: it is created in the store's schema, and the indexes use it.
    assert extension_schema(database) == "acti"
    for column in ("name", "description"):
        index = f"ix_agents_trgm_{column}"
        assert operator_class_of(database, "acti", index) == "acti.gin_trgm_ops"
    # The application's tables and revision are as they were; nothing new in public.
    assert relations(database, "public") == public_before
    assert host_state(database) == host_before
    assert sql(database, f"SELECT version_num FROM acti.{VERSION_TABLE}")[0] == [(HEAD,)]

    assert cli_main(["--schema", "acti", "migrate", "--check", "--url", database]) == 0
    assert capsys.readouterr().out == f"current: {HEAD}\nhead: {HEAD}\n"
    assert cli_main(["list", "--url", database, "--schema", "acti", "--read-only"]) == 0
    assert "lead_qualifier" in capsys.readouterr().out
    reader = open_repository(database, schema="acti", read_only=True)
    try:
        assert reader.list_names() == ["lead_qualifier", "web_researcher"]
    finally:
        reader.close()


@pytest.mark.postgresql
@pytest.mark.parametrize("installed_in", ["public", "extensions"])
def test_a_pg_trgm_installed_elsewhere_is_used_where_it_is(
    database: str, installed_in: str
) -> None:
    sql(
        database,
        f"CREATE SCHEMA IF NOT EXISTS {installed_in}",
        f"CREATE EXTENSION pg_trgm SCHEMA {installed_in}",
    )

    repo = open_repository(database, schema="acti")
    try:
        use_the_store(repo)
        assert "ix_agents_trgm_name" in trigram_index_plan(repo)
    finally:
        repo.close()

    assert extension_schema(database) == installed_in
    for column in ("name", "description"):
        index = f"ix_agents_trgm_{column}"
        assert operator_class_of(database, "acti", index) == f"{installed_in}.gin_trgm_ops"
    assert tables(database, "public") == set()


# -- the default stays put; an empty schema reaches nothing else ----------------------------------


@pytest.mark.postgresql
def test_the_async_twins_work_in_the_stores_schema_too(database: str) -> None:
    """The coroutines run on an async engine of their own: it keeps the store's schema."""
    create_host_tables(database)
    host_before = host_state(database)
    repo = open_repository(database, schema="acti")

    async def use() -> list[str]:
        await repo.acreate(make_config("async_agent"))
        await repo.arecord_execution("async_agent", _record(repo))
        names = [a.name for a in await repo.asearch(SearchQuery(query="async"))]
        await repo.aclose()
        return names

    try:
        assert asyncio.run(use()) == ["async_agent"]
        assert repo.get_history("async_agent").total_executions == 1
    finally:
        repo.close()
    assert sql(database, "SELECT name FROM acti.agents")[0] == [("async_agent",)]
    assert host_state(database) == host_before


@pytest.mark.postgresql
def test_without_a_schema_the_store_stays_where_stores_are(database: str) -> None:
    repo = open_repository(database)
    try:
        with repo.engine.connect() as conn:
            assert conn.execute(sa.text("SHOW search_path")).scalar() == '"$user", public'
        repo.create(make_config("default_agent"))
    finally:
        repo.close()

    assert tables(database, "public") == STORE_TABLES
    assert extension_schema(database) == "public"
    schemas = "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' ORDER BY 1"
    assert sql(database, schemas)[0] == [("information_schema",), ("public",)]


@pytest.mark.postgresql
@pytest.mark.parametrize("schema_exists", [False, True], ids=["missing", "empty"])
def test_a_store_schema_without_tables_never_reaches_the_tables_in_public(
    database: str, schema_exists: bool
) -> None:
    """The trap: ``public`` holds a whole store (with its agent), and the store's own schema
    is missing or empty. Unqualified names would find ``public.agents`` through a default
    search path; the store's sessions search its schema only."""
    default = open_repository(database)
    default.create(make_config("public_agent"))
    default.close()
    if schema_exists:
        sql(database, "CREATE SCHEMA acti")
    public_before = sql(database, "SELECT name, version FROM public.agents")

    unmigrated = open_repository(database, schema="acti", migrate=False)
    try:
        for read in (unmigrated.list_names, lambda: unmigrated.get("public_agent")):
            with pytest.raises(StoreUnavailableError, match="tables are missing"):
                read()
        with pytest.raises(StoreUnavailableError, match="tables are missing"):
            unmigrated.create(make_config("public_agent"))
    finally:
        unmigrated.close()
    with pytest.raises(SchemaVersionError, match="none"):
        open_repository(database, schema="acti", read_only=True)

    repo = open_repository(database, schema="acti")
    try:
        assert repo.list_names() == []
        repo.create(make_config("public_agent", description="The store in acti has its own"))
        assert repo.get("public_agent").description == "The store in acti has its own"
    finally:
        repo.close()
    assert sql(database, "SELECT name, version FROM public.agents") == public_before
    assert tables(database, "acti") == STORE_TABLES


@pytest.mark.postgresql
def test_the_schema_comes_from_the_environment_and_empty_means_the_default(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_SCHEMA, "acti_env")
    open_repository(database).close()
    assert tables(database, "acti_env") == STORE_TABLES
    assert tables(database, "public") == set()

    open_repository(database, schema="").close()  # "" overrides the variable: the default
    assert tables(database, "public") == STORE_TABLES

    # The argument wins over the variable, and over a search path in the URL's options.
    in_options = sa.make_url(database).update_query_dict({"options": "-csearch_path=acti_url"})
    repo = open_repository(in_options.render_as_string(False), schema="acti_arg")
    repo.close()
    assert tables(database, "acti_arg") == STORE_TABLES
    assert tables(database, "acti_url") == set()


@pytest.mark.postgresql
def test_processes_opening_a_new_schema_at_once_all_succeed(database: str) -> None:
    """Openers of a store whose schema does not exist yet queue on the migration lock: one
    creates the schema and migrates, the others find it done."""
    openers = 4
    barrier = threading.Barrier(openers, timeout=60)
    failures: list[BaseException] = []

    def open_at_once() -> None:
        try:
            barrier.wait()
            open_repository(database, schema="acti").close()
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=open_at_once) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert failures == []
    assert sql(database, f"SELECT version_num FROM acti.{VERSION_TABLE}")[0] == [(HEAD,)]


# -- Alembic: -x schema=, the ini option, the upgrade SQL ----------------------------------------


def alembic_cli(workdir: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alembic", *argv],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )


@pytest.mark.postgresql
def test_alembic_takes_the_schema_from_x_or_the_ini(database: str, tmp_path: Path) -> None:
    (tmp_path / "alembic.ini").write_text(
        f"[alembic]\nscript_location = {migrations_dir()}\nsqlalchemy.url = {database}\n"
    )
    (tmp_path / "schema.ini").write_text(
        (tmp_path / "alembic.ini").read_text() + "acti_store_schema = acti_ini\n"
    )
    for argv in (
        ("-c", "alembic.ini", "-x", "schema=acti_x", "upgrade", "head"),
        ("-c", "alembic.ini", "-x", "schema=acti_x", "check"),
        ("-c", "schema.ini", "upgrade", "head"),
        ("-c", "schema.ini", "check"),
    ):
        done = alembic_cli(tmp_path, *argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        if "check" in argv:
            assert done.stdout == "No new upgrade operations detected.\n"
    current = alembic_cli(tmp_path, "-c", "alembic.ini", "-x", "schema=acti_x", "current")
    assert current.stdout == f"{HEAD} (head)\n"

    assert tables(database, "acti_x") == tables(database, "acti_ini") == STORE_TABLES
    assert tables(database, "public") == set()
    refused = alembic_cli(tmp_path, "-c", "alembic.ini", "-x", "schema=Acti", "upgrade", "head")
    assert refused.returncode != 0 and SCHEMA_NAME_RULE in refused.stderr


@pytest.mark.postgresql
def test_the_upgrade_sql_goes_to_the_schema(
    database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    command.upgrade(alembic_config(database, schema="acti"), str(PREVIOUS))
    assert cli_main(["migrate", "--sql", "--schema", "acti", "--url", database]) == 0
    printed = capsys.readouterr().out
    assert 'CREATE SCHEMA IF NOT EXISTS "acti";\n\nSET search_path TO "acti";' in printed

    engine = sa.create_engine(database, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            with raw.cursor() as cursor:  # as a DBA would run it, in a session of the default
                cursor.execute(printed)
    finally:
        engine.dispose()
    assert cli_main(["migrate", "--check", "--schema", "acti", "--url", database]) == 0
    assert capsys.readouterr().out == f"current: {HEAD}\nhead: {HEAD}\n"
    assert tables(database, "public") == set()


# -- names refused, and SQLite ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["Acti", "acti-store", "acti store", "1acti", "pg_acti", "information_schema", "a" * 64, "é"],
)
def test_a_schema_name_postgresql_would_need_quoted_is_refused_before_connecting(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StoreUrlError) as refused:
        open_repository(UNREACHABLE_PG, schema=name)
    assert str(refused.value) == (
        f"schema {name!r} is not a schema name acti_store can use: {SCHEMA_NAME_RULE}"
    )
    with pytest.raises(StoreUrlError):
        alembic_config(UNREACHABLE_PG, schema=name)

    assert cli_main(["--schema", name, "list", "--url", UNREACHABLE_PG]) == 1
    assert capsys.readouterr().err == f"error: {refused.value}\n"


def test_a_bad_schema_from_the_environment_is_named_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SCHEMA, "Acti")
    with pytest.raises(StoreUrlError, match=f"^{ENV_SCHEMA}='Acti' is not a schema name"):
        open_repository(UNREACHABLE_PG)


def test_sqlite_refuses_a_schema_and_says_to_use_a_file_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    with pytest.raises(StoreUrlError) as refused:
        open_repository(url, schema="acti")
    assert str(refused.value) == (
        "schema 'acti': a schema of its own is for PostgreSQL. On SQLite, give acti_store a "
        "database file of its own (e.g. sqlite:///acti_store.db) instead of the application's"
    )
    with pytest.raises(StoreUrlError, match="a schema of its own is for PostgreSQL"):
        alembic_config(url, schema="acti")
    assert cli_main(["migrate", "--schema", "acti", "--url", url]) == 1
    assert capsys.readouterr().err == f"error: {refused.value}\n"

    monkeypatch.setenv(ENV_SCHEMA, "acti")
    with pytest.raises(StoreUrlError, match=f"and unset {ENV_SCHEMA}$"):
        open_repository(url)
    assert not (tmp_path / "app.db").exists()  # refused before anything was created

    repo = open_repository(url, schema="")  # "" is the default: the file itself
    repo.close()
    assert (tmp_path / "app.db").is_file()


@pytest.mark.postgresql
def test_a_role_given_only_its_schema_migrates_and_searches(database: str) -> None:
    """A DBA created the schema for the role and granted it nothing else: no schema is created
    (the role may not), and pg_trgm, which the role may not install either, is left out with a
    warning (search scans); everything else works."""
    role = f"acti_role_{uuid.uuid4().hex[:8]}"
    sql(
        database,
        f"CREATE ROLE {role} LOGIN",
        f'REVOKE CREATE ON DATABASE "{sa.make_url(database).database}" FROM PUBLIC',
        f"CREATE SCHEMA acti AUTHORIZATION {role}",
    )
    try:
        as_role = sa.make_url(database).set(username=role).render_as_string(False)
        repo = open_repository(as_role, schema="acti")
        try:
            use_the_store(repo)
        finally:
            repo.close()
        assert tables(database, "acti") == STORE_TABLES
        assert extension_schema(database) is None
    finally:
        sql(database, "DROP SCHEMA acti CASCADE", f"DROP OWNED BY {role}", f"DROP ROLE {role}")
