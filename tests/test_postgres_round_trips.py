"""PostgreSQL: what each operation costs the server, and pooled connections that died.

Reads of one statement run in autocommit (no BEGIN, COMMIT or ROLLBACK; a ROLLBACK would also
make psycopg drop every prepared statement), pooled connections are not pinged before each use,
and writes send the statements whose answer they do not need without waiting. A connection the
server ended while it sat in the pool is replaced before the next call uses it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import POSTGRES_URL, SKIP_POSTGRES, make_config
from sqlalchemy import bindparam, create_engine, text, update
from wire import Wire, run

from acti_store import (
    AgentExistsError,
    AgentUpdate,
    SearchQuery,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.repository.core import GROWTH_CHECK_EVERY
from acti_store.repository.statements import GET, GET_ID, agent_from_row
from acti_store.schema import agents
from acti_store.sqlexec import Answer, Cursor, Prepared

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES),
]


@pytest.fixture
def wire(pg_repo: SqlAgentRepository) -> Iterator[Wire]:
    traced = Wire(pg_repo.engine)
    pg_repo.engine.dispose()  # connections made from now on are watched
    yield traced
    pg_repo.engine.dispose()


def test_a_read_is_one_round_trip(pg_repo: SqlAgentRepository, wire: Wire) -> None:
    pg_repo.create(make_config("lead_qualifier"))
    pg_repo.record_execution("lead_qualifier", run())
    pg_repo.get("lead_qualifier")  # a new connection's set-up is not the read's

    for call in (
        lambda: pg_repo.get("lead_qualifier"),
        lambda: pg_repo.exists("lead_qualifier"),
        lambda: pg_repo.get_history("lead_qualifier", limit=10),
        lambda: pg_repo.search(SearchQuery(query="leads", limit=10)),
        lambda: pg_repo.count_by_stratum(),
    ):
        assert wire.during(call) == (1, ["SELECT"])

    # A read that must see one snapshot: its own BEGIN, the reads, COMMIT (never a ROLLBACK,
    # which would make psycopg drop its prepared statements).
    trips, sent = wire.during(lambda: pg_repo.execution_stats("lead_qualifier"))
    assert sent[0].startswith("BEGIN") and sent[-1] == "COMMIT" and "ROLLBACK" not in sent
    assert trips == len(sent)
    # A page and its total: one snapshot, ended the same way.
    trips, sent = wire.during(lambda: pg_repo.search_page(SearchQuery(query="leads", limit=1)))
    assert sent == ["BEGIN", "SELECT", "SELECT", "COMMIT"] and trips == len(sent)


def test_a_write_waits_only_for_the_answers_it_needs(
    pg_repo: SqlAgentRepository, wire: Wire
) -> None:
    pg_repo.create(make_config("lead_qualifier"))
    pg_repo.get("lead_qualifier")

    # A run: the counters, the record and the version's counters in one statement, the FIFO
    # trim and COMMIT, all in one go (its answer is read with the COMMIT's).
    trips, sent = wire.during(lambda: pg_repo.record_execution("lead_qualifier", run()))
    assert (trips, sent) == (1, ["BEGIN", "WITH", "DELETE", "COMMIT"])
    # An update: BEGIN with the locking read (the merged configuration is checked in Python),
    # then the UPDATE, the snapshot, its change (the counter moved, the change, the watchers'
    # NOTIFY) and COMMIT: the change feed adds statements, no round trip.
    trips, sent = wire.during(
        lambda: pg_repo.update("lead_qualifier", AgentUpdate(description="Qualifies leads, v2"))
    )
    assert (trips, sent) == (
        2,
        ["BEGIN", "SELECT", "UPDATE", "INSERT", "INSERT", "INSERT", "SELECT", "COMMIT"],
    )
    # A create: the tenant's counter row locked and its registration and limit read in one
    # round trip (the one answer it waits for: strict mode and limits, issue 49), then the
    # agent's INSERT, its tags and its snapshot (both find it by name) and COMMIT, in one go.
    trips, sent = wire.during(lambda: pg_repo.create(make_config("other_agent")))
    assert trips == 2 and sent[:3] == ["BEGIN", "SELECT", "SELECT"] and sent[-1] == "COMMIT"


def test_an_answer_read_with_the_commit_is_still_checked(pg_repo: SqlAgentRepository) -> None:
    pg_repo.create(make_config("lead_qualifier"))
    describe = Prepared(
        update(agents)
        .where(agents.c.name == bindparam("name"))
        .values(description=bindparam("text"))
        .returning(agents.c.id)
    )

    def work(name: str) -> Callable[[Cursor], Answer]:
        return lambda cursor: cursor.later(describe, {"name": name, "text": "New"}, rowcount=1)

    answer = pg_repo._core.write(work("lead_qualifier"))
    assert answer.rowcount == 1 and len(answer.rows) == 1
    assert pg_repo.get("lead_qualifier").description == "New"
    # The invariant a caller states (one row changed) fails loudly, not silently.
    with pytest.raises(AssertionError, match="changed 0 rows, not 1"):
        pg_repo._core.write(work("nobody"))


def test_a_read_in_a_pipelined_write_gets_its_own_answer(pg_repo: SqlAgentRepository) -> None:
    """Answers to statements sent earlier in a write come in while a read is sent (the server
    flushes them as they fill its buffer): the read must not take one for its own. A large
    PostgreSQL import failed so, now and then ("the last operation didn't produce records")."""
    pg_repo.create(make_config("lead_qualifier"))

    def work(cursor: Cursor) -> list[str]:
        names = []
        for _ in range(10):
            # Sent as an import sends its records, never waited for: 5,000 answers.
            cursor.executemany(GET_ID, [{"name": "lead_qualifier"}] * 5_000)
            row = cursor.first(GET, {"name": "lead_qualifier"})
            names.append(agent_from_row(row).name if row else "")
        return names

    assert pg_repo._core.write(work) == ["lead_qualifier"] * 10


def test_pipelined_writes_keep_their_transaction_and_their_results(
    pg_repo: SqlAgentRepository,
) -> None:
    pg_repo.create(make_config("lead_qualifier"))
    for i in range(60):
        pg_repo.record_execution("lead_qualifier", run(success=i % 3 != 0))
    pg_repo.update("lead_qualifier", AgentUpdate(description="Qualifies leads by BANT, v2"))
    pg_repo.record_execution("lead_qualifier", run())

    stats = pg_repo.execution_stats("lead_qualifier")
    assert (stats.total_executions, stats.success_count, stats.error_count) == (61, 41, 20)
    assert stats.retained == 50  # the FIFO, trimmed within each run's transaction
    by_version = pg_repo.version_stats("lead_qualifier")
    assert {v: (s.total_executions, s.error_count) for v, s in by_version.items()} == {
        1: (60, 20),
        2: (1, 0),
    }
    with pytest.raises(AgentExistsError):  # an error of a statement sent without waiting
        pg_repo.create(make_config("lead_qualifier"))
    assert pg_repo.get("lead_qualifier").metadata.version == 2


def test_a_connection_the_server_ended_is_replaced_before_it_is_used(
    pg_repo: SqlAgentRepository,
) -> None:
    pg_repo.create(make_config("lead_qualifier"))
    with pg_repo.engine.connect() as conn:  # the pool's one connection, idle again after
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    admin = create_engine(str(POSTGRES_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
        gone = text("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = :pid")
        deadline = time.monotonic() + 10
        while not conn.execute(gone, {"pid": pid}).scalar() and time.monotonic() < deadline:
            time.sleep(0.01)
    admin.dispose()

    # Used a moment ago, so not pinged: what the server sent when it ended the connection
    # gives it away, and the call runs on a new connection, with no error.
    assert pg_repo.get("lead_qualifier").name == "lead_qualifier"
    with pg_repo.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() != pid
    pg_repo.record_execution("lead_qualifier", run())
    assert pg_repo.get_history("lead_qualifier").total_executions == 1


def test_a_search_is_planned_for_its_values_every_time(
    pg_repo: SqlAgentRepository, wire: Wire
) -> None:
    """psycopg prepares a statement run 5 times on a connection, and PostgreSQL soon runs a
    prepared statement with a generic plan, which cannot see a substring's pattern."""
    pg_repo.create(make_config("lead_qualifier"))
    query = SearchQuery(query="leads", limit=10)
    for _ in range(8):  # parsed anew each time: never prepared
        assert wire.during(lambda: pg_repo.search(query)) == (1, ["SELECT"])
    gets = [wire.during(lambda: pg_repo.get("lead_qualifier")) for _ in range(8)]
    assert gets[0] == (1, ["SELECT"]) and gets[-1] == (1, [])  # the fast path's are prepared


def test_a_large_import_is_whole_and_leaves_statistics_for_the_planner(
    pg_repo: SqlAgentRepository, tmp_path: Path, wire: Wire
) -> None:
    source = open_repository(f"sqlite:///{tmp_path / 'source.db'}")
    for i in range(300):
        source.create(make_config(f"agent_{i:03d}"))
        for _ in range(20):  # 6,000 records: more than one batch of them
            source.record_execution(f"agent_{i:03d}", run(success=i % 2 == 0))
    export_json(source, tmp_path / "agents")
    source.close()
    estimated = text("SELECT reltuples FROM pg_class WHERE oid = 'agents'::regclass")
    with pg_repo.engine.connect() as conn:
        assert conn.execute(estimated).scalar() <= 0  # never analyzed

    _, sent = wire.during(lambda: import_json(pg_repo, tmp_path / "agents"))

    # Records, snapshots and tags stream in by COPY, not a statement per row; 300 agents are
    # one batch (``bulk_batch``): one COPY per table (agents, tags, snapshots, records, changes).
    assert 3 <= sent.count("COPY") <= 5 and sent.count("INSERT") <= 300
    with pg_repo.engine.connect() as conn:
        assert conn.execute(estimated).scalar() == 300
    for name in ("agent_000", "agent_151", "agent_299"):
        history = pg_repo.get_history(name, limit=50)
        assert history.total_executions == len(history.executions) == 20
        assert all(r.success == (int(name[-3:]) % 2 == 0) for r in history.executions)


def test_a_store_filled_by_creates_leaves_statistics_for_the_planner(
    pg_repo: SqlAgentRepository,
) -> None:
    """Creates one by one are counted: every ``GROWTH_CHECK_EVERY`` of them the store has
    PostgreSQL gather the statistics autovacuum would gather up to a minute later."""
    estimated = text("SELECT reltuples FROM pg_class WHERE oid = 'agents'::regclass")
    with pg_repo.engine.begin() as conn:  # autovacuum must not analyze first (test's own schema)
        conn.execute(text("ALTER TABLE agents SET (autovacuum_enabled = false)"))
    for i in range(GROWTH_CHECK_EVERY - 1):
        pg_repo.create(make_config(f"agent_{i:04d}"))
    with pg_repo.engine.connect() as conn:
        assert conn.execute(estimated).scalar() <= 0  # never analyzed
    pg_repo.clone("agent_0000", "agent_clone")
    with pg_repo.engine.connect() as conn:
        assert conn.execute(estimated).scalar() == GROWTH_CHECK_EVERY


def test_a_new_agents_rows_found_by_name_are_planned_for_their_values(
    pg_repo: SqlAgentRepository, wire: Wire
) -> None:
    """A create in a pipeline finds its new row by name for the tags and the first snapshot.
    Prepared, those lookups would keep the generic plan made while the table held a few rows
    (a scan: 0.13 ms each at 4,000 agents), so they are parsed anew each time; the rest of a
    create is prepared like every hot statement."""
    made = [
        wire.during(lambda i=i: pg_repo.create(make_config(f"agent_{i}", tags=["sales", "b2b"])))
        for i in range(10)
    ]
    assert made[-1][1] == ["INSERT", "INSERT", "INSERT"], made  # two tags and the snapshot
