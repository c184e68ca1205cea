"""Store errors say whether trying again can help (``StoreUnavailableError.transient``), and the
tools say so in words: a locked store is transient; a corrupt, read-only or forbidden store is
not. Real damaged files, a real read-only connection, a real lock held by another process."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg.errors
import pymysql.err
import pytest
from conftest import POSTGRES_URL, SKIP_POSTGRES, make_config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from test_lock_deadline import NAME, lock_held

from acti_store import (
    AgentUpdate,
    ReadOnlyStoreError,
    SearchQuery,
    SqlAgentRepository,
    StoreUnavailableError,
    open_repository,
)
from acti_store.dberrors import is_concurrent_ddl, is_missing_table, is_transient, translated
from acti_store.tools import make_builder_tools
from acti_store.tools.texts import STORE_ERROR, STORE_ERROR_LASTING

TRANSIENT_ADVICE = "Nothing was changed. This is temporary: try again in a moment;"
LASTING_ADVICE = (
    "Nothing was changed. Trying again will not help: the store itself needs attention."
)
CREATE_ARGS = {
    "name": "new_agent",
    "description": "Answers questions about the weather",
    "system_prompt": "You are a helpful assistant that answers questions about the weather.",
    "tools": ["websearch"],
}


def tool_call(repo: SqlAgentRepository, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    tools = {t.name: t for t in make_builder_tools(repo)}
    message = tools[tool].invoke({"type": "tool_call", "id": "1", "name": tool, "args": args})
    return str(message.content), message.artifact


def assert_lasting_text(text: str, artifact: dict[str, Any], problem: str) -> None:
    assert text.startswith("ERROR: The agent store could not complete the request.\n\nReason: ")
    assert problem in text.split("\n\n")[1]
    assert text.split("\n\n")[2].startswith(LASTING_ADVICE), text
    assert "try again in a moment" not in text
    assert artifact["error"] == "store_error" and artifact["transient"] is False


def _store_file(tmp_path: Path, agents: int = 1) -> Path:
    """A closed SQLite store (its WAL checkpointed into the file) holding ``agents`` agents."""
    path = tmp_path / "store.db"
    repo = open_repository(f"sqlite:///{path}")
    for i in range(agents):
        repo.create(make_config(f"agent_{i:03d}", system_prompt="You are careful. " * 200))
    repo.close()
    assert not Path(f"{path}-wal").exists()
    return path


def test_transient_a_corrupt_store_file_is_lasting(tmp_path: Path) -> None:
    original = _store_file(tmp_path, agents=50)
    copy = tmp_path / "copy.db"
    shutil.copyfile(original, copy)
    with sqlite3.connect(copy) as probe:  # the agents table's root page, filled with garbage
        (root,) = probe.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'agents'"
        ).fetchone()
        (page_size,) = probe.execute("PRAGMA page_size").fetchone()
    with copy.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xa5garbage!" * (page_size // 9))

    repo = open_repository(f"sqlite:///{copy}")  # its schema page is intact
    try:
        with pytest.raises(StoreUnavailableError) as raised:
            repo.list_agents()
        assert raised.value.transient is False
        assert str(raised.value).startswith("the store file is corrupt: ")
        # The export's snapshot and the pages go through the same translation.
        for read in (lambda: list(repo.iter_export()), lambda: repo.search_page(SearchQuery())):
            with pytest.raises(StoreUnavailableError) as raised:
                read()
            assert raised.value.transient is False
            assert str(raised.value).startswith("the store file is corrupt: ")
        text, artifact = tool_call(repo, "list_created_agents")
        assert_lasting_text(text, artifact, "the store file is corrupt")
    finally:
        repo.close()


def test_transient_a_file_that_is_not_a_database_is_lasting(tmp_path: Path) -> None:
    path = _store_file(tmp_path)
    with path.open("r+b") as file:  # the header: no longer a SQLite file
        file.write(b"this is not a database header at all" * 3)

    with pytest.raises(StoreUnavailableError) as raised:
        open_repository(f"sqlite:///{path}")
    assert raised.value.transient is False
    assert str(raised.value).startswith("cannot open the store: the store file is not a database")

    repo = open_repository(f"sqlite:///{path}", migrate=False)
    try:
        text, artifact = tool_call(repo, "get_agent_config", name="agent_000")
        assert_lasting_text(text, artifact, "the store file is not a database")
    finally:
        repo.close()


def test_transient_a_read_only_store_is_lasting(tmp_path: Path) -> None:
    """Opened read-only (``?mode=ro``): chmod 0444 does not stop root, who runs these tests in
    some containers, so the connection itself is made read-only."""
    path = _store_file(tmp_path)
    repo = open_repository(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        assert repo.get("agent_000").name == "agent_000"  # reading works
        with pytest.raises(StoreUnavailableError) as raised:
            repo.create(make_config("new_agent"))
        assert raised.value.transient is False and isinstance(raised.value, ReadOnlyStoreError)
        assert str(raised.value) == (
            "the store is read-only: attempt to write a readonly database; the store (its file "
            "or its folder) cannot be written by this process: to read it, open it with "
            "read_only=True (acti-store list, show, search, history, export: --read-only)"
        )
        text, artifact = tool_call(repo, "create_agent_config", **CREATE_ARGS)
        assert_lasting_text(text, artifact, "the store is read-only")
        assert not repo.exists("new_agent")
    finally:
        repo.close()


def test_transient_a_locked_store_is_transient(store_url: str) -> None:
    repo = open_repository(store_url, lock_timeout=0.5)
    repo.create(make_config(NAME))
    try:
        with lock_held(store_url, seconds=5):
            with pytest.raises(StoreUnavailableError) as raised:
                repo.update(NAME, AgentUpdate(tags=["x-ray"]))
            text, artifact = tool_call(repo, "update_agent_config", name=NAME, tags=["x-ray"])
        assert raised.value.transient is True
        assert text.startswith("ERROR: The agent store could not complete the request.\n\n")
        # the time waited, measured: the lock timeout, and the last attempt's round trip
        assert re.search(r"the store was locked by another writer for 0\.[5-9] s", text), text
        assert text.split("\n\n")[2].startswith(TRANSIENT_ADVICE), text
        assert "will not help" not in text
        assert artifact["error"] == "store_error" and artifact["transient"] is True
    finally:
        repo.close()


def test_transient_the_two_texts_differ_only_in_their_advice() -> None:
    transient = STORE_ERROR.format(reason="r").split("\n\n")
    lasting = STORE_ERROR_LASTING.format(reason="r").split("\n\n")
    assert (
        transient[:2]
        == lasting[:2]
        == [
            "ERROR: The agent store could not complete the request.",
            "Reason: r",
        ]
    )
    assert transient[2] == (
        "Nothing was changed. This is temporary: try again in a moment; if it keeps failing, "
        "report the reason to the user."
    )
    assert lasting[2] == (
        "Nothing was changed. Trying again will not help: the store itself needs attention. "
        "Tell the user the reason above; do not retry this request until it is fixed."
    )


# --------------------------------------------------------------------------------------------------
# PostgreSQL: a read-only session, a role without permission; every SQLSTATE of the table
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def pg_store(postgres_schema: str) -> Iterator[str]:
    """A migrated PostgreSQL store with one agent; yields its URL."""
    repo = open_repository(postgres_schema)
    repo.create(make_config(NAME))
    repo.close()
    yield postgres_schema


def _with_options(url: str, extra: str) -> str:
    parsed = make_url(url)
    options = f"{parsed.query['options']} {extra}"
    return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)


@pytest.mark.postgresql
def test_transient_a_read_only_postgresql_session_is_lasting(pg_store: str) -> None:
    repo = open_repository(_with_options(pg_store, "-cdefault_transaction_read_only=on"))
    try:
        with pytest.raises(StoreUnavailableError) as raised:
            repo.create(make_config("new_agent"))
        assert raised.value.transient is False and isinstance(raised.value, ReadOnlyStoreError)
        assert str(raised.value).startswith("the store is read-only: ")
        text, artifact = tool_call(repo, "create_agent_config", **CREATE_ARGS)
        assert_lasting_text(text, artifact, "the store is read-only")
    finally:
        repo.close()


@pytest.mark.postgresql
def test_transient_permission_denied_on_postgresql_is_lasting(pg_store: str) -> None:
    assert POSTGRES_URL is not None
    role = f"acti_noperm_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE ROLE "{role}" NOLOGIN'))
        # It may look into the store's schema, but not read its tables.
        schema = make_url(pg_store).query["options"].removeprefix("-csearch_path=")
        conn.execute(text(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"'))
    repo = open_repository(_with_options(pg_store, f"-crole={role}"), migrate=False)
    try:
        with pytest.raises(StoreUnavailableError) as raised:
            repo.get(NAME)
        assert raised.value.transient is False
        assert str(raised.value).startswith("permission to the store was denied: ")
        for read in (lambda: list(repo.iter_export()), lambda: repo.search_page(SearchQuery())):
            with pytest.raises(StoreUnavailableError) as raised:
                read()
            assert raised.value.transient is False
            assert str(raised.value).startswith("permission to the store was denied: ")
        said, artifact = tool_call(repo, "get_agent_config", name=NAME)
        assert_lasting_text(said, artifact, "permission to the store was denied")
    finally:
        repo.close()
        with admin.connect() as conn:
            conn.execute(text(f'REVOKE USAGE ON SCHEMA "{schema}" FROM "{role}"'))
            conn.execute(text(f'DROP ROLE "{role}"'))
        admin.dispose()


@pytest.mark.parametrize(
    ("sqlstate", "transient"),
    [
        ("40001", True),  # serialization failure
        ("40P01", True),  # deadlock
        ("55P03", True),  # lock not available
        ("57P01", True),  # admin shutdown
        ("57P02", True),  # crash shutdown
        ("57P03", True),  # cannot connect now (starting up)
        ("08006", True),  # connection failure
        ("08003", True),  # connection does not exist
        ("53100", False),  # disk full
        ("42501", False),  # insufficient privilege
        ("25006", False),  # read-only transaction
        ("3D000", False),  # no such database
        ("42P01", False),  # no such table
        ("XX001", False),  # data corrupted
        ("28P01", False),  # password authentication failed
    ],
)
def test_transient_postgresql_sqlstates(sqlstate: str, transient: bool) -> None:
    """Driver exceptions as psycopg raises them (its class for the SQLSTATE)."""
    error = psycopg.errors.lookup(sqlstate)("server message")
    found = translated(error, psycopg)
    assert isinstance(found, StoreUnavailableError), found
    assert found.transient is transient and is_transient(error) is transient
    if isinstance(found, ReadOnlyStoreError):  # then what to do: open it read-only
        assert str(found).startswith("the store is read-only: server message; ")
    else:
        assert str(found).endswith(": server message")


def test_transient_a_table_changed_by_concurrent_ddl_on_mariadb_is_read_again() -> None:
    """MariaDB's 1684: a look at a table (SQLAlchemy's ``has_table``) met another session's DDL
    dropping it, as an opener moving our revision out of ``alembic_version`` does. Opening the
    store reads its revision again (``revisions._current_state``); it is a passing condition."""
    error = pymysql.err.OperationalError(
        1684,
        "Table 'acti'.'alembic_version' was skipped since its definition is being modified by "
        "concurrent DDL statement",
    )
    assert is_concurrent_ddl(error) and is_transient(error) and not is_missing_table(error)
    assert not is_concurrent_ddl(pymysql.err.ProgrammingError(1146, "doesn't exist"))


def test_transient_a_failed_postgresql_connection_is_transient() -> None:
    """A server that does not answer (psycopg gives no SQLSTATE): trying again can help."""
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    url = make_url(POSTGRES_URL).set(port=1)  # nothing listens there
    with pytest.raises(StoreUnavailableError) as raised:
        open_repository(url.render_as_string(hide_password=False))
    assert raised.value.transient is True
    assert str(raised.value).startswith("cannot open the store: connection failed")


# --------------------------------------------------------------------------------------------------
# PostgreSQL: the store's connection ended by the server in the middle of a pipelined write
# --------------------------------------------------------------------------------------------------

#: Writes whose connection the server ends mid-transaction (the store's clock, called inside the
#: write, terminates it): each prints its error's type and whether it is transient, then the
#: store works again. A process of its own, with no logging set up, as a library's host is:
#: whatever psycopg logs reaches its stderr.
KILLED_MID_WRITE = textwrap.dedent(
    """
    import sys, time
    from datetime import UTC, datetime
    import psycopg
    from acti_store import AgentUpdate, open_repository
    url, admin_url, application = sys.argv[1:4]
    armed = []

    def clock():
        if armed:
            armed.clear()
            with psycopg.connect(admin_url, autocommit=True) as admin:
                ended = "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
                pids = [row[0] for row in admin.execute(ended, (application,))]
                for pid in pids:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                left = "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)"
                while admin.execute(left, (pids,)).fetchone()[0]:
                    time.sleep(0.01)
        return datetime.now(UTC)

    repo = open_repository(url, clock=clock)
    writes = {
        "set_label": lambda: repo.set_label("lead_qualifier", "production", 1),
        "update": lambda: repo.update(
            "lead_qualifier", AgentUpdate(description="Qualifies leads, second version")
        ),
    }
    for name, write in writes.items():
        armed.append(True)
        try:
            write()
        except Exception as exc:
            print(name, type(exc).__name__, getattr(exc, "transient", None), flush=True)
        print(name, "then", repo.get("lead_qualifier").metadata.version, flush=True)
    repo.close()
    """
)


@pytest.mark.postgresql
def test_transient_a_connection_ended_mid_pipeline_is_one_clear_error(pg_store: str) -> None:
    """A write whose connection the server ends while its statements are in a pipeline raises
    one ``StoreUnavailableError`` (transient), nothing written, and psycopg says nothing on
    stderr (issue 25: "error ignored terminating <psycopg.Pipeline [BAD]>: the connection is
    lost" was printed as the error came out)."""
    assert POSTGRES_URL is not None
    application = f"acti_killed_{uuid.uuid4().hex[:8]}"
    url = make_url(pg_store).update_query_dict({"application_name": application})
    admin = make_url(POSTGRES_URL).set(drivername="postgresql")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            KILLED_MID_WRITE,
            url.render_as_string(hide_password=False),
            admin.render_as_string(hide_password=False),
            application,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "set_label StoreUnavailableError True",
        "set_label then 1",
        "update StoreUnavailableError True",
        "update then 1",
    ]
