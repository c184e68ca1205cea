"""The change feed under concurrent writers (issue 29, §1): on each engine, 8 writer processes
commit changes as fast as they can while a follower process reads ``changes(after=last)``; the
follower's list is the table's, numbers 1..N with no gap and no repeat, and every change a writer
committed is in it once.

Why it needs proving: PostgreSQL's and MariaDB's sequences hand out numbers when a row is
inserted, not when it commits. ``test_a_sequence_read_by_number_loses_a_change`` shows a reader of
``seq > last`` over such a table losing a row for good; ``test_numbers_follow_commit_order``
shows the store's numbering does not: a writer whose changes would take a number while another
transaction holds the counter waits for it to commit.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter
from typing import Any

import pytest
from conftest import make_config, migrate_from_template
from sqlalchemy.engine import make_url
from workers import feed
from workers.harness import run_children

from acti_store import open_repository

WRITERS = 8
SECONDS = 4.0


def test_a_follower_sees_every_change_once_in_commit_order(
    request: pytest.FixtureRequest, store_url: str
) -> None:
    migrate_from_template(request, store_url)
    feed.setup(store_url)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS + 1)
    writers = [("writer", store_url, i, barrier, SECONDS) for i in range(WRITERS)]
    results = run_children(
        ctx, feed.role, [*writers, ("follower", store_url, barrier, SECONDS)], timeout=300
    )
    made, seen = results[:WRITERS], results[WRITERS]

    repo = open_repository(store_url, export_dir="")
    try:
        table = feed.table(repo)
    finally:
        repo.close()
    assert [row[0] for row in table] == list(range(1, len(table) + 1))  # no gap, no repeat
    assert seen == table  # the follower saw every change once, in the table's order
    committed = Counter(change for changes in made for change in changes)
    committed[("created", feed.SHARED, 1, None)] += 1  # setup's
    assert Counter(row[1:] for row in table) == committed
    # Each agent's changes are numbered in the order they were made.
    for name in {row[2] for row in table}:
        versions = [row[3] for row in table if row[2] == name and row[1] == "updated"]
        assert versions == sorted(versions), name
    print(f"{len(table)} changes by {WRITERS} writers, all seen once in order")


@pytest.fixture
def postgres_url(store_url: str) -> str:
    if make_url(store_url).get_backend_name() != "postgresql":
        pytest.skip("PostgreSQL: a reader's snapshot can see a later number commit first")
    return store_url


def _psycopg(url: str) -> Any:
    """A plain psycopg connection to the store's database and schema, as a hand-written
    consumer would open one, bound to the default tenant."""
    import psycopg

    sa_url = make_url(url)
    conninfo = sa_url.set(drivername="postgresql").render_as_string(hide_password=False)
    connection = psycopg.connect(conninfo.split("?")[0], options=sa_url.query.get("options", ""))
    connection.execute("SELECT set_config('acti.tenant', 'default', false)")
    connection.commit()
    return connection


def test_a_sequence_read_by_number_loses_a_change(postgres_url: str) -> None:
    """The naive feed: numbers from a sequence, read with ``seq > last``."""
    first, second, reader = (_psycopg(postgres_url) for _ in range(3))
    try:
        first.execute("CREATE TABLE naive_feed (seq BIGSERIAL PRIMARY KEY, what TEXT)")
        first.commit()
        first.execute("INSERT INTO naive_feed (what) VALUES ('first')")  # takes 1, not committed
        second.execute("INSERT INTO naive_feed (what) VALUES ('second')")  # takes 2
        second.commit()
        read = reader.execute("SELECT seq, what FROM naive_feed WHERE seq > 0").fetchall()
        assert read == [(2, "second")]  # the reader's position is now 2
        first.commit()
        later = reader.execute("SELECT seq, what FROM naive_feed WHERE seq > 2").fetchall()
        assert later == []  # 1 committed after the reader passed it: lost for good
    finally:
        for connection in (first, second, reader):
            connection.close()


def test_numbers_follow_commit_order(postgres_url: str) -> None:
    """A transaction that has moved the counter (as every write does just before it commits)
    makes another write wait until it commits: the other's number comes after, and is visible
    only after, the first's."""
    repo = open_repository(postgres_url, export_dir="")
    holder = _psycopg(postgres_url)
    try:
        repo.create(make_config("first_agent"))
        holder.execute(
            "UPDATE agent_change_counters SET last_seq = last_seq + 1 WHERE tenant = 'default'"
        )
        holder.execute(
            "INSERT INTO agent_changes (tenant, seq, kind, agent, version, at) "
            "SELECT 'default', last_seq, 'updated', 'first_agent', 2, now() "
            "FROM agent_change_counters WHERE tenant = 'default'"
        )
        done = threading.Event()
        writer = threading.Thread(
            target=lambda: (repo.create(make_config("second_agent")), done.set())
        )
        writer.start()
        time.sleep(1.0)
        assert not done.is_set()  # waits for the counter, held until the holder commits
        assert repo.changes(after=1) == []  # and nothing numbered after 1 is visible yet
        holder.commit()
        writer.join(timeout=30)
        assert done.is_set()
        changes = [(c.seq, c.agent) for c in repo.changes()]
        assert changes == [(1, "first_agent"), (2, "first_agent"), (3, "second_agent")]
    finally:
        holder.close()
        repo.close()
