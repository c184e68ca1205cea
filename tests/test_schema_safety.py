"""Opening a store never loses data to the schema: old stores are upgraded with their rows intact,
stores written by a newer acti_store are refused without a write, a database or schema that holds
another application's tables of acti_store's names is refused before anything in it changes, and
processes opening a store at the same moment all succeed (the migration runs once, under a lock)."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from conftest import BACKENDS, fresh_store, make_config
from data.v1_store import V1_ROWS, create_v1_store
from fresh_database import fresh_postgres_database, relations
from workers import children, scenarios

from acti_store import (
    AgentUpdate,
    SchemaVersionError,
    SearchQuery,
    StoreUnavailableError,
    StoreUrlError,
    open_repository,
)
from acti_store.cli import main as cli_main
from acti_store.engine import LEGACY_VERSION_TABLE, VERSION_TABLE, alembic_config

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()
FUTURE_REVISION = "0999_from_a_newer_acti_store"


def check_v1_agents_intact(url: str) -> None:
    """The v1 rows read back complete, with the v2 defaults, and the store is fully usable."""
    repo = open_repository(url)
    try:
        assert repo.list_names() == sorted(str(row["name"]) for row in V1_ROWS)
        for row in V1_ROWS:
            agent = repo.get(str(row["name"]))
            for field in ("description", "system_prompt", "tools", "model", "stratum"):
                assert getattr(agent, field) == row[field], field
            meta = agent.metadata
            assert meta.created_at == meta.updated_at == row["created_at"]
            assert (meta.version, meta.builder, meta.last_executed_at) == (
                1,
                row["builder"],
                None,
            )
            assert (meta.execution_count, meta.success_count, meta.error_count) == (0, 0, 0)
            assert agent.tags == []
        found = repo.search(SearchQuery(query="ünïcode 100%", tools=["websearch"]))
        assert [a.name for a in found] == ["web_researcher"]
        # Every operation works on the upgraded rows.
        updated = repo.update("lead_qualifier", AgentUpdate(tags=["sales"]), expected_version=1)
        assert updated.metadata.version == 2
        repo.record_execution("lead_qualifier", children.crash_record(2))
        assert repo.get_history("lead_qualifier").total_executions == 1
        assert repo.clone("web_researcher", "web_researcher_two").metadata.version == 1
        assert [a.name for a in repo.search(SearchQuery(tags=["sales"]))] == ["lead_qualifier"]
    finally:
        repo.close()


def revision_of(url: str, table: str = VERSION_TABLE) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(f"SELECT version_num FROM {table}")).scalars())
    finally:
        engine.dispose()


def test_old_store_is_upgraded_on_open_with_its_data_intact(store_url: str) -> None:
    create_v1_store(store_url)

    check_v1_agents_intact(store_url)

    assert revision_of(store_url) == [HEAD]


# -- a store from a newer acti_store ---------------------------------------------------------------


def dump(url: str) -> dict[str, Any]:
    """Every table of the store and every row in it (SQLite: also its schema text)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            tables = sorted(inspector.get_table_names())
            quote = conn.dialect.identifier_preparer.quote_identifier
            content: dict[str, Any] = {
                table: sorted(
                    (
                        tuple(map(repr, row))
                        for row in conn.execute(sa.text(f"SELECT * FROM {quote(table)}"))
                    ),
                )
                for table in tables
            }
            if engine.dialect.name == "sqlite":
                content["sqlite_master"] = conn.exec_driver_sql(
                    "SELECT type, name, sql FROM sqlite_master ORDER BY name"
                ).all()
            else:
                content["indexes"] = {t: inspector.get_indexes(t) for t in tables}
            return content
    finally:
        engine.dispose()


def test_store_from_a_newer_version_is_refused_and_left_untouched(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = open_repository(store_url)
    repo.create(make_config())
    repo.record_execution("lead_qualifier", children.crash_record(2))
    with repo.engine.begin() as conn:
        conn.execute(
            sa.text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": FUTURE_REVISION}
        )
    repo.close()
    before = dump(store_url)

    with pytest.raises(SchemaVersionError) as refused:
        open_repository(store_url)
    assert cli_main(["migrate", "--url", store_url]) == 1

    message = str(refused.value)
    assert FUTURE_REVISION in message and "newer version" in message and "Upgrade" in message
    assert message in capsys.readouterr().err  # the CLI shows the same explanation
    assert dump(store_url) == before


# -- opening at the same moment --------------------------------------------------------------------


@contextmanager
def fresh_stores(store_url: str, tmp_path: Path) -> Iterator[Callable[[int], str]]:
    """``fresh(i)``: the URL of an empty store for round ``i`` (a new SQLite file, or the
    PostgreSQL schema, the MariaDB database, of ``store_url`` emptied)."""
    backend = sa.make_url(store_url).get_backend_name()
    if backend == "sqlite":
        yield lambda i: f"sqlite:///{tmp_path / f'round_{i}.db'}"
        return
    engine = sa.create_engine(store_url, isolation_level="AUTOCOMMIT")
    if backend == "mysql":
        database = sa.make_url(store_url).database
        emptied = [
            f"DROP DATABASE `{database}`",
            f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4",
        ]
    else:
        with engine.connect() as conn:
            schema = conn.execute(sa.text("SELECT current_schema()")).scalar_one()
        emptied = [f'DROP SCHEMA "{schema}" CASCADE', f'CREATE SCHEMA "{schema}"']

    def fresh(_: int) -> str:
        with engine.connect() as conn:
            for statement in emptied:
                conn.execute(sa.text(statement))
        return store_url

    try:
        yield fresh
    finally:
        engine.dispose()


def test_processes_opening_a_new_store_at_once_all_succeed(store_url: str, tmp_path: Path) -> None:
    with fresh_stores(store_url, tmp_path) as fresh:
        for round_ in range(3):
            url = fresh(round_)

            assert scenarios.open_race(url, processes=2) == []

            assert revision_of(url) == [HEAD]
            repo = open_repository(url)
            try:
                repo.create(make_config())
                assert repo.list_names() == ["lead_qualifier"]
            finally:
                repo.close()


def test_processes_opening_an_old_store_at_once_upgrade_it_once(
    store_url: str, tmp_path: Path
) -> None:
    with fresh_stores(store_url, tmp_path) as fresh:
        for round_ in range(2):
            url = fresh(round_)
            create_v1_store(url)

            assert scenarios.open_race(url, processes=2) == []

            assert revision_of(url) == [HEAD]
            check_v1_agents_intact(url)


# -- the version table: acti_store's own, beside an application's ----------------------------------

HOST_REVISION = "a1b2c3d4e5f6"


def put_revision_in_legacy_table(url: str, *, host_row: bool = False) -> None:
    """Make the store at ``url`` look as an earlier acti_store left it: its revision in
    ``alembic_version`` (with an application's row beside it if ``host_row``)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            (revision,) = conn.execute(
                sa.text(f"SELECT version_num FROM {VERSION_TABLE}")
            ).scalars()
            conn.execute(sa.text(f"DROP TABLE {VERSION_TABLE}"))
            conn.execute(
                sa.text(
                    f"CREATE TABLE {LEGACY_VERSION_TABLE} (version_num VARCHAR(32) NOT NULL, "
                    f"CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
                )
            )
            for row in [revision, *([HOST_REVISION] if host_row else [])]:
                conn.execute(sa.text(f"INSERT INTO {LEGACY_VERSION_TABLE} VALUES (:v)"), {"v": row})
    finally:
        engine.dispose()


def tables_of(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_an_old_store_has_its_revision_moved_to_its_own_table_once(store_url: str) -> None:
    create_v1_store(store_url)
    put_revision_in_legacy_table(store_url)
    assert revision_of(store_url, LEGACY_VERSION_TABLE) == ["0001_v1"]
    with pytest.raises(SchemaVersionError, match="open it once with write access"):
        open_repository(store_url, read_only=True)

    check_v1_agents_intact(store_url)

    assert revision_of(store_url) == [HEAD]
    assert LEGACY_VERSION_TABLE not in tables_of(store_url)  # it held only our row
    open_repository(store_url, read_only=True).close()


def test_a_store_at_head_in_the_old_table_is_moved_and_read_only_asks_for_a_write_open(
    store_url: str,
) -> None:
    open_repository(store_url).close()
    put_revision_in_legacy_table(store_url, host_row=True)
    with pytest.raises(SchemaVersionError) as refused:
        open_repository(store_url, read_only=True)
    assert "alembic_version" in str(refused.value)
    assert "open it once with write access" in str(refused.value)

    open_repository(store_url).close()

    assert revision_of(store_url) == [HEAD]
    # The application's row stays where it was; only ours moved.
    assert revision_of(store_url, LEGACY_VERSION_TABLE) == [HOST_REVISION]
    open_repository(store_url, read_only=True).close()


def test_alembic_upgrade_moves_an_old_stores_revision_too(store_url: str) -> None:
    create_v1_store(store_url)
    put_revision_in_legacy_table(store_url)

    command.upgrade(alembic_config(sa.make_url(store_url)), "head")

    assert revision_of(store_url) == [HEAD]
    assert LEGACY_VERSION_TABLE not in tables_of(store_url)
    check_v1_agents_intact(store_url)


def test_a_database_with_an_applications_alembic_revision_opens_beside_it(
    store_url: str,
) -> None:
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"CREATE TABLE {LEGACY_VERSION_TABLE} (version_num VARCHAR(32) NOT NULL, "
                f"CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
            )
        )
        conn.execute(
            sa.text(f"INSERT INTO {LEGACY_VERSION_TABLE} VALUES (:v)"), {"v": HOST_REVISION}
        )
    engine.dispose()

    repo = open_repository(store_url)
    try:
        repo.create(make_config())
        assert repo.list_names() == ["lead_qualifier"]
    finally:
        repo.close()
    assert cli_main(["migrate", "--check", "--url", store_url]) == 0

    assert revision_of(store_url, LEGACY_VERSION_TABLE) == [HOST_REVISION]
    assert revision_of(store_url) == [HEAD]


def test_processes_opening_a_store_with_the_old_version_table_at_once_all_succeed(
    store_url: str, tmp_path: Path
) -> None:
    with fresh_stores(store_url, tmp_path) as fresh:
        for round_ in range(2):
            url = fresh(round_)
            create_v1_store(url)
            put_revision_in_legacy_table(url, host_row=round_ == 1)

            assert scenarios.open_race(url, processes=2) == []

            assert revision_of(url) == [HEAD]
            if round_ == 1:
                assert revision_of(url, LEGACY_VERSION_TABLE) == [HOST_REVISION]
            else:
                assert LEGACY_VERSION_TABLE not in tables_of(url)
            check_v1_agents_intact(url)


# -- a store not migrated, and a database that is not a store ---------------------------------

#: What a store without its tables says, on every engine, to every call that reads or writes.
TABLES_MISSING = "the store's tables are missing (run `acti-store migrate`): "
#: The table the engine's error names after it: the first missing one the call reads, ``agents``
#: (or, for a search on MariaDB, its trigram table ``agent_trigrams``, which it reads first; a
#: create first locks its tenant's counter, or on SQLite, whose write lock is the store's, reads
#: its tenant's registration).
MISSING_TABLES = ("agents", "agent_trigrams", "agent_change_counters", "agent_tenants")


def test_a_store_opened_without_migrating_says_its_tables_are_missing(store_url: str) -> None:
    repo = open_repository(store_url, migrate=False)
    try:
        calls: list[Callable[[], object]] = [
            repo.list_names,
            lambda: repo.get("lead_qualifier"),
            lambda: repo.create(make_config()),
            lambda: repo.search(SearchQuery(query="lead")),
        ]
        for call in calls:
            with pytest.raises(StoreUnavailableError) as missing:
                call()
            assert str(missing.value).startswith(TABLES_MISSING), str(missing.value)
            detail = str(missing.value).removeprefix(TABLES_MISSING)
            assert any(table in detail for table in MISSING_TABLES), detail
            assert missing.value.transient is False
    finally:
        repo.close()


class HostDatabase:
    """Another application's database: its own ``agents`` and ``users`` tables, with rows, where
    acti_store would put its tables (a SQLite file; PostgreSQL's default schema, ``public``; the
    MariaDB database of the URL)."""

    def __init__(self, url: str, folder: Path | None) -> None:
        self.url, self.folder = url, folder
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                for statement in (
                    "CREATE TABLE agents (id INTEGER PRIMARY KEY, nickname VARCHAR(50))",
                    "CREATE TABLE users (id INTEGER PRIMARY KEY, email VARCHAR(200))",
                    "INSERT INTO agents (id, nickname) VALUES (1, 'bond'), (2, 'smiley')",
                    "INSERT INTO users (id, email) VALUES (1, 'ada@example.com')",
                ):
                    conn.execute(sa.text(statement))
        finally:
            engine.dispose()

    @property
    def sqlite(self) -> bool:
        return self.folder is not None

    @property
    def mariadb(self) -> bool:
        return sa.make_url(self.url).get_backend_name() == "mysql"

    def state(self) -> list[Any]:
        """Everything acti_store could change: SQLite's file, byte for byte (its journal mode is
        in its header), and the files beside it; PostgreSQL's schemas, relations and rows;
        MariaDB's databases (but the tests' own, which other tests make and drop meanwhile),
        the tables, indexes and triggers of the host's database, and its rows."""
        if self.folder is not None:
            files = sorted(p.name for p in self.folder.iterdir())
            content = (self.folder / "host.db").read_bytes()
            return [files, hashlib.sha256(content).hexdigest()]
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                if self.mariadb:
                    schemas = conn.execute(
                        sa.text(
                            "SELECT schema_name FROM information_schema.schemata "
                            "WHERE schema_name NOT LIKE 'acti\\_%' OR schema_name = DATABASE() "
                            "ORDER BY 1"
                        )
                    )
                    where = str(sa.make_url(self.url).database)
                else:
                    schemas = conn.execute(sa.text("SELECT nspname FROM pg_namespace ORDER BY 1"))
                    where = "public"
                rows = [
                    conn.execute(sa.text(f"SELECT * FROM {table} ORDER BY id")).all()
                    for table in ("agents", "users")
                ]
                return [schemas.scalars().all(), rows, relations(self.url, where)]
        finally:
            engine.dispose()

    def check_refusal(self, message: str) -> None:
        """The refusal names the table that clashes and says where acti_store can go instead."""
        assert "agents" in message and "users" not in message, message
        assert "nothing was changed" in message, message
        if self.sqlite:
            assert "a database file of its own" in message, message
        else:
            assert "schema=" in message and "--schema" in message, message
        assert "\n" not in message


@pytest.fixture(params=BACKENDS)
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HostDatabase]:
    if request.param == "sqlite":
        folder = tmp_path / "host"
        folder.mkdir()
        yield HostDatabase(f"sqlite:///{folder / 'host.db'}", folder)
        return
    if request.param == "mysql":  # a database of the server's: MariaDB's schema
        with fresh_store("mysql", tmp_path) as url:
            yield HostDatabase(url, None)
        return
    with fresh_postgres_database() as url:
        yield HostDatabase(url, None)


def test_an_applications_agents_table_is_refused_before_anything_changes(
    host: HostDatabase, tmp_path: Path
) -> None:
    before = host.state()

    with pytest.raises(StoreUrlError) as by_open:
        open_repository(host.url)
    host.check_refusal(str(by_open.value))
    assert host.state() == before

    with pytest.raises(StoreUrlError) as by_alembic:
        command.upgrade(alembic_config(sa.make_url(host.url)), "head")
    assert str(by_alembic.value) == str(by_open.value)
    assert host.state() == before

    done = subprocess.run(
        [sys.executable, "-m", "acti_store", "migrate", "--url", host.url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: {by_open.value}\n"
    assert "please report" not in done.stderr and "Traceback" not in done.stderr
    assert host.state() == before

    # What the message says to do works, and still leaves the application's tables alone.
    if host.mariadb:  # schema= names a database there, which must exist: one of the test's own
        with fresh_store("mysql", tmp_path) as own_url:
            own_database = str(sa.make_url(own_url).database)
            use_own_schema(host.url, own_database)
            assert relations(own_url, own_database).keys() >= {"agents", VERSION_TABLE}
        assert host.state() == before
        return
    if host.sqlite:
        use_own_schema(f"sqlite:///{tmp_path / 'acti_store.db'}", None)
    else:
        use_own_schema(host.url, "acti")
    if host.sqlite:
        assert host.state() == before
    else:
        schemas, rows, public = host.state()
        assert [rows, public] == before[1:] and "acti" in schemas


def use_own_schema(url: str, schema: str | None) -> None:
    """Open the store at ``url`` in ``schema`` (None: the URL's own), and use it."""
    own = open_repository(url, schema=schema)
    try:
        own.create(make_config())
        assert own.list_names() == ["lead_qualifier"]
    finally:
        own.close()


def test_a_sqlite_file_of_another_application_switches_to_wal_only_once_it_holds_the_store(
    tmp_path: Path,
) -> None:
    """A file with only the application's ``users`` may hold the store beside them: acti_store
    switches it to WAL once the migration has made the store there, not when it connects."""
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
        conn.execute("INSERT INTO users VALUES (1, 'ada@example.com')")
    conn.close()

    unmigrated = open_repository(f"sqlite:///{path}", migrate=False)
    try:
        with pytest.raises(StoreUnavailableError, match="tables are missing"):
            unmigrated.list_names()
    finally:
        unmigrated.close()
    assert journal_mode(path) == "delete"

    repo = open_repository(f"sqlite:///{path}")
    try:
        repo.create(make_config())
        assert journal_mode(path) == "wal"
    finally:
        repo.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT * FROM users").fetchall() == [(1, "ada@example.com")]
    conn.close()


def journal_mode(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    conn.close()
    return mode
