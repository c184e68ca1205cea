"""One deadline for a locked store: a write blocked by another process holding the lock fails
within ``lock_timeout`` (its lock waits and retries together), saying the store was locked, and
succeeds when the lock comes free in time. SQLite: the other process holds ``BEGIN IMMEDIATE``;
PostgreSQL and MariaDB: it holds the agent's row lock (``SELECT ... FOR UPDATE``)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import make_config
from sqlalchemy.engine import make_url

from acti_store import ExecutionRecord, SqlAgentRepository, StoreUnavailableError, open_repository
from acti_store.engines.postgresql import statements as postgresql_engine
from acti_store.repository.deadline import TryAgain, within_deadline
from acti_store.sqlexec import Answer

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head

LOCK_TIMEOUT = 2.0
#: How far past the deadline a failing call may end: 10 %.
SLACK = 0.1 * LOCK_TIMEOUT
NAME = "lead_qualifier"

#: Holds the write lock of the store for ``hold`` seconds, printing "locked" once it has it.
HOLDER = textwrap.dedent(
    """
    import sys, time
    url, name, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
    if url.startswith("postgresql"):
        import psycopg
        connection = psycopg.connect(url)
        connection.execute("SELECT 1 FROM agents WHERE name = %s FOR UPDATE", (name,))
    elif url.startswith("mysql"):
        import pymysql
        from sqlalchemy.engine import make_url
        u = make_url(url)
        connection = pymysql.connect(
            host=u.host, port=u.port or 3306, user=u.username, password=u.password or "",
            database=u.database,
        )
        connection.cursor().execute("SELECT 1 FROM agents WHERE name = %s FOR UPDATE", (name,))
    else:
        import sqlite3
        connection = sqlite3.connect(url, isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(hold)
    connection.rollback()
    connection.close()
    """
)


def _driver_url(store_url: str) -> str:
    """The store as the holder's driver names it: a SQLite path, a libpq URI, or the MariaDB
    URL (the holder reads it with ``make_url``)."""
    url = make_url(store_url)
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    if url.get_backend_name() in ("mysql", "mariadb"):
        return url.set(drivername="mysql").render_as_string(hide_password=False)
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def lock_held(store_url: str, seconds: float) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the store's write lock (for the agent NAME) for ``seconds``."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, _driver_url(store_url), NAME, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def _run(repo: SqlAgentRepository) -> None:
    repo.record_execution(
        NAME,
        ExecutionRecord(
            timestamp=repo.now(), task="t", result_summary="r", success=True, duration_seconds=1
        ),
    )


@pytest.fixture
def locked_repo(store_url: str) -> Iterator[SqlAgentRepository]:
    repo = open_repository(store_url, lock_timeout=LOCK_TIMEOUT)
    repo.create(make_config(NAME))
    try:
        yield repo
    finally:
        repo.close()


def test_lock_held_past_the_deadline_fails_within_it(
    locked_repo: SqlAgentRepository, store_url: str
) -> None:
    with lock_held(store_url, seconds=LOCK_TIMEOUT * 4):
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError) as raised:
            _run(locked_repo)
        elapsed = time.monotonic() - start

    assert LOCK_TIMEOUT * 0.95 <= elapsed <= LOCK_TIMEOUT + SLACK, elapsed
    assert raised.value.transient is True
    assert str(raised.value).startswith("the store was locked by another writer for 2.")
    assert str(raised.value).endswith(" s (the lock timeout); nothing was written")
    assert locked_repo.get(NAME).metadata.execution_count == 0
    _run(locked_repo)  # the lock is gone: the store works again
    assert locked_repo.get(NAME).metadata.execution_count == 1


def test_a_sub_second_lock_timeout_is_kept(store_url: str) -> None:
    """MariaDB counts lock waits in whole seconds: a write waits only the whole seconds left
    and tries again for the rest, so a call fails within a lock timeout under a second too
    (rounded up, it took 1.01 s for 0.3 s). SQLite and PostgreSQL take the wait in milliseconds
    (``test_lock_held_past_the_deadline_fails_within_it``)."""
    if make_url(store_url).get_backend_name() != "mysql":
        pytest.skip("SQLite and PostgreSQL wait in milliseconds: no second to round up to")
    timeout = 0.4
    repo = open_repository(store_url, lock_timeout=timeout)
    try:
        repo.create(make_config(NAME))
        with lock_held(store_url, seconds=timeout * 8):
            start = time.monotonic()
            with pytest.raises(StoreUnavailableError, match="locked by another writer"):
                _run(repo)
            elapsed = time.monotonic() - start
        assert elapsed < 1.0, elapsed  # InnoDB's shortest wait is a whole second
        _run(repo)
        assert repo.get(NAME).metadata.execution_count == 1
    finally:
        repo.close()


def test_lock_released_within_the_deadline_lets_the_write_through(
    locked_repo: SqlAgentRepository, store_url: str
) -> None:
    with lock_held(store_url, seconds=LOCK_TIMEOUT / 2):
        start = time.monotonic()
        _run(locked_repo)
        elapsed = time.monotonic() - start

    assert elapsed < LOCK_TIMEOUT, elapsed
    assert locked_repo.get(NAME).metadata.execution_count == 1


def test_lock_retry_keeps_the_connection_policy(
    locked_repo: SqlAgentRepository, store_url: str
) -> None:
    """A call that gave up leaves the store's connections as they were: the next call waits up
    to the whole ``lock_timeout`` again (SQLite's busy timeout is a setting of the connection)."""
    with lock_held(store_url, seconds=LOCK_TIMEOUT * 4), pytest.raises(StoreUnavailableError):
        _run(locked_repo)
    with lock_held(store_url, seconds=LOCK_TIMEOUT * 0.75):
        _run(locked_repo)
    assert locked_repo.get(NAME).metadata.execution_count == 1


def test_lock_timeout_must_be_positive(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="lock_timeout"):
        open_repository(f"sqlite:///{tmp_path / 'store.db'}", lock_timeout=0)


def test_an_attempt_that_asks_again_is_bounded_by_the_deadline() -> None:
    """``TryAgain`` (the store changed under an attempt) retries like a lock wait, within the
    one deadline; past it, the attempt's own error is raised (issue 25: a retry loop of its own
    never ended)."""
    attempts: list[float | None] = []
    error = StoreUnavailableError("kept changing", transient=True)

    def attempt(wait: float | None) -> None:
        attempts.append(wait)
        raise TryAgain(error)

    start = time.monotonic()
    with pytest.raises(StoreUnavailableError) as raised:
        within_deadline(attempt, lock_timeout=0.3, dbapi=sqlite3)
    assert raised.value is error
    assert time.monotonic() - start < 0.3 + SLACK
    assert len(attempts) > 1 and attempts[0] is None


@pytest.mark.timeout(30)
def test_a_run_whose_pinned_version_keeps_appearing_gives_up_at_the_deadline(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL records a pinned run in one statement, then reads why when nothing was
    recorded; when nothing keeps it (the version was made meanwhile) it tries again, but only
    until ``lock_timeout``. Here every attempt records nothing: the call ends at the deadline."""
    if not store_url.startswith("postgresql"):
        pytest.skip(
            "SQLite and MariaDB record a run under a write lock (the store's, the agent's row "
            "lock): it never needs another attempt"
        )
    repo = open_repository(store_url, lock_timeout=LOCK_TIMEOUT / 2)
    try:
        repo.create(make_config(NAME))
        # nothing recorded, each time
        monkeypatch.setattr(postgresql_engine, "send_run", lambda *_: Answer())
        record = ExecutionRecord(
            timestamp=repo.now(), task="t", result_summary="r", success=True, duration_seconds=1
        )
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError) as raised:
            repo.record_execution(NAME, record, version=1)
        assert time.monotonic() - start < LOCK_TIMEOUT / 2 + SLACK
        assert raised.value.transient is True
        assert "kept changing" in str(raised.value)
    finally:
        repo.close()
