"""Shared fixtures: a real store per test, on SQLite and (when configured) PostgreSQL and MariaDB.

``store_url`` is parametrised over the two engines. SQLite gets a fresh file in ``tmp_path``;
PostgreSQL gets a fresh schema in the database named by ``ACTI_STORE_TEST_POSTGRES_URL`` (selected
through ``search_path`` in the URL, so child processes can open the same store), dropped afterwards.
Without that variable the PostgreSQL lane is skipped with the reason. MariaDB gets a fresh
database on the server ``ACTI_STORE_TEST_MYSQL_URL`` names, dropped afterwards (its lane is
skipped likewise without it).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import closing, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from acti_store import (
    AgentConfig,
    AgentRepository,
    ExecutionRecord,
    SqlAgentRepository,
    open_repository,
)

T = TypeVar("T")

#: The suite's stores register a tenant by writing for it, as every store did before strict
#: tenants (issue 49, item 2): its tests were written so. A store made from empty is strict
#: by default; tests/test_tenant_lifecycle.py takes this away to test that (and the mode).
os.environ.setdefault("ACTI_STORE_TENANTS", "open")

#: Every statement the repository sends carries the tenant, checked at the end (issue 28).
pytest_plugins = ["tenant_audit"]

POSTGRES_ENV = "ACTI_STORE_TEST_POSTGRES_URL"
POSTGRES_URL = os.environ.get(POSTGRES_ENV)
SKIP_POSTGRES = f"{POSTGRES_ENV} is not set: the PostgreSQL lane is skipped"
#: The pooler lane (issue 41): the same server through PgBouncer in transaction mode, where the
#: tests' stores are opened (the schemas are made and dropped on the server directly).
POOLER_URL = os.environ.get("ACTI_STORE_TEST_POSTGRES_POOLER_URL")
MYSQL_ENV = "ACTI_STORE_TEST_MYSQL_URL"
MYSQL_URL = os.environ.get(MYSQL_ENV)
SKIP_MYSQL = f"{MYSQL_ENV} is not set: the MariaDB lane is skipped"

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgresql",
        id="postgresql",
        marks=[pytest.mark.postgresql, pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES)],
    ),
    pytest.param(
        "mysql",
        id="mysql",
        marks=[pytest.mark.mysql, pytest.mark.skipif(not MYSQL_URL, reason=SKIP_MYSQL)],
    ),
]


class FakeClock:
    """A clock tests move by hand: every call returns the current instant, then ticks 1 ms."""

    def __init__(self, start: datetime | None = None, tick: timedelta = timedelta(milliseconds=1)):
        self.current = start or datetime(2025, 1, 9, 14, 30, 22, 123456, tzinfo=UTC)
        self.tick = tick

    def __call__(self) -> datetime:
        now = self.current
        self.current += self.tick
        return now

    def set(self, value: datetime) -> None:
        self.current = value

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)


def postgres_schema_url(schema: str) -> str:
    """The URL of the store in ``schema``: on the server itself, or through the pooler of
    ``ACTI_STORE_TEST_POSTGRES_POOLER_URL`` (the pooler lane, with ``ACTI_STORE_POOLER=
    transaction``: the store takes the schema from the options and makes it per transaction)."""
    assert POSTGRES_URL is not None
    url = make_url(POOLER_URL or POSTGRES_URL)
    return url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


@contextmanager
def fresh_store(engine: str, folder: Path) -> Iterator[str]:
    """The URL of an empty store on ``engine`` (an id of ``BACKENDS``), removed afterwards: a
    file in ``folder`` (SQLite), a schema (PostgreSQL) or a database (MariaDB) of its own. For
    fixtures of any scope; the lanes skip without their server's URL."""
    if engine == "sqlite":
        yield f"sqlite:///{folder / 'store.db'}"
        return
    server, skip = (
        (POSTGRES_URL, SKIP_POSTGRES) if engine == "postgresql" else (MYSQL_URL, SKIP_MYSQL)
    )
    if not server:
        pytest.skip(skip)
    name = f"acti_test_{uuid.uuid4().hex[:12]}"
    if engine == "postgresql":
        made, url, dropped = (
            f'CREATE SCHEMA "{name}"',
            postgres_schema_url(name),
            f'DROP SCHEMA "{name}" CASCADE',
        )
    else:
        made, url = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4", mysql_database_url(name)
        dropped = f"DROP DATABASE IF EXISTS `{name}`"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(made))
    try:
        yield url
    finally:
        with admin.connect() as conn:
            if engine == "mysql":  # a failed test's open transaction would hold DROP forever
                _end_sessions(conn, name)
            conn.execute(text(dropped))
        admin.dispose()


def _end_sessions(conn: Connection, database: str) -> None:
    """End the MariaDB sessions still using ``database`` (DROP DATABASE waits for each)."""
    sessions = conn.execute(
        text(
            "SELECT id FROM information_schema.processlist WHERE db = :db AND id <> CONNECTION_ID()"
        ),
        {"db": database},
    ).scalars()
    for session in list(sessions):
        with suppress(Exception):  # ended meanwhile
            conn.execute(text(f"KILL {int(session)}"))


def mysql_database_url(database: str) -> str:
    assert MYSQL_URL is not None
    return make_url(MYSQL_URL).set(database=database).render_as_string(hide_password=False)


@pytest.fixture
def postgres_schema(tmp_path: Path) -> Iterator[str]:
    """A fresh, empty PostgreSQL schema; yields its URL."""
    with fresh_store("postgresql", tmp_path) as url:
        yield url


@pytest.fixture
def mysql_database(tmp_path: Path) -> Iterator[str]:
    """A fresh, empty MariaDB database; yields its URL."""
    with fresh_store("mysql", tmp_path) as url:
        yield url


def _opened(url: str) -> Iterator[SqlAgentRepository]:
    """The store at ``url`` (migrated as it opens), with the real clock; closed afterwards."""
    store = open_repository(url)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def pg_repo(postgres_schema: str) -> Iterator[SqlAgentRepository]:
    """A store in a fresh PostgreSQL schema."""
    yield from _opened(postgres_schema)


@pytest.fixture
def mysql_repo(mysql_database: str) -> Iterator[SqlAgentRepository]:
    """A store in a fresh MariaDB database."""
    yield from _opened(mysql_database)


#: The fixture that makes an empty store on each server engine.
_SERVER_STORES = {"postgresql": "postgres_schema", "mysql": "mysql_database"}


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """The URL of an empty store (not yet migrated) on each engine; in a test marked
    ``store_at_head``, of a store at head (a copy of the session's migrated store, not opened
    yet): a server or command started on an empty store runs the revision chain first, 0.3 s
    a start on SQLite and seconds on MariaDB, where the copy takes milliseconds."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.db'}"
    else:
        url = str(request.getfixturevalue(_SERVER_STORES[request.param]))
    if request.node.get_closest_marker("store_at_head") is not None:
        migrate_from_template(request, url)
    return url


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class MysqlTemplate:
    """A MariaDB store migrated once per test session, whose schema is copied into a test's
    empty database: MariaDB's DDL commits and syncs statement by statement, so the revision
    chain takes seconds per store where copying its result takes a fraction of one."""

    def __init__(self) -> None:
        assert MYSQL_URL is not None
        self.database = f"acti_tpl_{uuid.uuid4().hex[:12]}"
        # A connection per use: one left in a test's database would be ended with its sessions.
        self.admin = create_engine(MYSQL_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with self.admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE `{self.database}` CHARACTER SET utf8mb4"))
        open_repository(mysql_database_url(self.database)).close()
        with self.admin.connect() as conn:
            self.statements = self._schema(conn)

    def _schema(self, conn: Connection) -> list[str]:
        """The template's CREATE TABLE (parents first) and CREATE TRIGGER statements."""
        tables = conn.execute(
            text("SELECT table_name FROM information_schema.tables WHERE table_schema = :db"),
            {"db": self.database},
        ).scalars()
        made = [
            conn.execute(text(f"SHOW CREATE TABLE `{self.database}`.`{t}`")).one()[1]
            for t in sorted(tables, key=lambda t: t != "agents")
        ]
        triggers = conn.execute(
            text("SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = :db"),
            {"db": self.database},
        ).scalars()
        made += [
            conn.execute(text(f"SHOW CREATE TRIGGER `{self.database}`.`{t}`")).one()[2]
            for t in list(triggers)
        ]
        return made

    def copy_into(self, url: str) -> None:
        """Make the template's schema, and its revision, in the empty database of ``url``."""
        database = make_url(url).database
        with self.admin.connect() as conn:
            conn.execute(text(f"USE `{database}`"))
            conn.execute(text("SET SESSION foreign_key_checks = 0"))
            for statement in self.statements:
                conn.execute(text(statement.replace(":", r"\:")))
            conn.execute(
                text(
                    f"INSERT INTO `{database}`.acti_store_alembic_version "
                    f"SELECT * FROM `{self.database}`.acti_store_alembic_version"
                )
            )
            conn.execute(  # the rows the migrations write: the store's settings (0014)
                text(
                    f"INSERT INTO `{database}`.agent_store_settings "
                    f"SELECT * FROM `{self.database}`.agent_store_settings"
                )
            )

    def drop(self) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{self.database}`"))
        self.admin.dispose()


Template = TypeVar("Template", "MysqlTemplate", "PostgresTemplate")


def _dropped_at_the_end(template: Template) -> Iterator[Template]:
    """A session fixture's template, dropped when the session ends."""
    try:
        yield template
    finally:
        template.drop()


@pytest.fixture(scope="session")
def mysql_template() -> Iterator[MysqlTemplate]:
    """The session's migrated MariaDB store, whose schema ``repo`` copies (``MysqlTemplate``)."""
    yield from _dropped_at_the_end(MysqlTemplate())


class SqliteTemplate:
    """A SQLite store migrated once per test session: a test's store is a copy of its file."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "template.db"
        open_repository(f"sqlite:///{self.path}").close()
        with closing(sqlite3.connect(self.path)) as conn:  # everything in the main file
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def copy_into(self, url: str) -> None:
        shutil.copyfile(self.path, make_url(url).database or "")


class PostgresTemplate:
    """A PostgreSQL store migrated once per test session into a schema of its own, whose
    ``pg_dump`` (schema and rows, the revision's included) a test's empty schema replays: the
    revision chain's DDL takes half a second per store, its end state a fifth of that. Without
    ``pg_dump`` on the machine each store is migrated."""

    def __init__(self) -> None:
        assert POSTGRES_URL is not None
        self.schema = f"acti_tpl_{uuid.uuid4().hex[:12]}"
        self.admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{self.schema}"'))
        open_repository(postgres_schema_url(self.schema)).close()
        self.script = self._dump()

    def _dump(self) -> str | None:
        if shutil.which("pg_dump") is None:
            return None
        url = make_url(POSTGRES_URL or "")
        command = ["pg_dump", "--no-owner", "--no-privileges", "--inserts", "-n", self.schema]
        command += ["-h", url.host or "127.0.0.1", "-p", str(url.port or 5432)]
        command += ["-U", url.username or "postgres", url.database or "postgres"]
        env = {**os.environ, "PGPASSWORD": url.password or ""}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return None
        lines = [
            line
            for line in done.stdout.splitlines()
            if not line.startswith(("--", "\\", f"CREATE SCHEMA {self.schema};"))
        ]
        return "\n".join(lines).replace("%", "%%")

    def copy_into(self, url: str) -> None:
        """Make the template's schema and rows in the empty schema of ``url``."""
        if self.script is None:
            open_repository(url).close()
            return
        schema = make_url(url).query["options"]
        schema = (schema if isinstance(schema, str) else schema[0]).removeprefix("-csearch_path=")
        with self.admin.connect() as conn:
            conn.exec_driver_sql(self.script.replace(self.schema, schema))

    def drop(self) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
        self.admin.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    """The session's migrated SQLite store, whose file ``repo`` copies."""
    return SqliteTemplate(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def postgres_template() -> Iterator[PostgresTemplate]:
    """The session's migrated PostgreSQL store, whose dump ``repo`` replays."""
    yield from _dropped_at_the_end(PostgresTemplate())


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once per session for the tests that install it (``pip
    wheel`` takes 7 s of CPU, 19 s at a load of 7)."""
    dist, root = tmp_path_factory.mktemp("dist"), Path(__file__).resolve().parents[1]
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(root)]
    subprocess.run(build, check=True)
    (wheel,) = dist.glob("acti_store-*.whl")
    return wheel


_TEMPLATES = {
    "sqlite": "sqlite_template",
    "postgresql": "postgres_template",
    "mysql": "mysql_template",
}


#: The stores ``migrate_from_template`` brought to head (each test's URL is its own).
_AT_HEAD: set[str] = set()


def migrate_from_template(request: pytest.FixtureRequest, store_url: str) -> None:
    """Bring the empty store of ``store_url`` to head the quick way: a copy of the session's
    migrated store on its engine (the migrations themselves are tested from empty stores).
    Once per store: ``repo`` over a ``store_at_head`` test's store finds it there already."""
    if store_url in _AT_HEAD:
        return
    fixture = _TEMPLATES[make_url(store_url).get_backend_name()]
    request.getfixturevalue(fixture).copy_into(store_url)
    _AT_HEAD.add(store_url)


@pytest.fixture
def repo(
    request: pytest.FixtureRequest, store_url: str, clock: FakeClock
) -> Iterator[SqlAgentRepository]:
    """A migrated, empty store on each engine, with a fake clock."""
    migrate_from_template(request, store_url)
    repository = open_repository(store_url, clock=clock)
    try:
        yield repository
    finally:
        repository.close()


def make_config(name: str = "lead_qualifier", **overrides: object) -> AgentConfig:
    """A valid config in the contract's example, with any field overridden."""
    fields: dict[str, object] = {
        "name": name,
        "description": "Qualifies inbound leads by assessing BANT criteria",
        "system_prompt": "You are a professional lead qualification specialist. "
        "Assess budget, authority, need and timeline for every lead.",
        "tools": ["communication", "crm"],
        "stratum": "RAI",
        "tags": ["sales", "qualification"],
    }
    fields.update(overrides)
    return AgentConfig.model_validate(fields)


def make_record(**overrides: object) -> ExecutionRecord:
    """A valid record of one successful run, made now, with any field overridden."""
    fields: dict[str, object] = {
        "timestamp": datetime.now(UTC),
        "task": "Qualify John",
        "result_summary": "HIGH priority",
        "success": True,
        "duration_seconds": 1.5,
        "tool_calls_count": 2,
    }
    fields.update(overrides)
    return ExecutionRecord.model_validate(fields)


#: Repository methods that do no I/O: they have no async twin.
NO_TWIN = frozenset({"now", "location_of", "history_location_of"})


class AsyncDriven:
    """A repository whose every store method is called through its async twin (``aget`` for
    ``get``, ...), awaited on an event loop of its own in a background thread: the same tests
    then drive the async API. Attributes without I/O (``now``, ``location``, ...) pass through."""

    def __init__(self, repository: AgentRepository) -> None:
        self._repository = repository
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def _await(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _collect(self, items: AsyncIterator[T]) -> list[T]:
        return [item async for item in items]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in NO_TWIN:
            return getattr(self._repository, name)
        value = getattr(self._repository, name)
        if not callable(value):
            return value
        twin = getattr(self._repository, f"a{name}")  # a store method without a twin fails here

        def through_twin(*args: Any, **kwargs: Any) -> Any:
            result = twin(*args, **kwargs)
            if inspect.isasyncgen(result):
                return iter(self._await(self._collect(result)))
            return self._await(result)

        return through_twin

    def close(self) -> None:
        self._await(self._repository.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


#: How the repository suite calls the store: its sync methods, or their async twins.
APIS = [pytest.param("sync", id="sync"), pytest.param("async", id="async")]
