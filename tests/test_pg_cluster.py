"""The helpers of ``tests/pg_cluster.py`` do what the tests of production setups rely on: a
cluster of its own that leaves nothing behind, and PgBouncer in transaction mode in front of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pg_cluster import Cluster, PgBouncer, clusters_missing, pgbouncer_missing
from sqlalchemy import create_engine, text

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.skipif(clusters_missing() is not None, reason=str(clusters_missing())),
]

needs_pgbouncer = pytest.mark.skipif(
    pgbouncer_missing() is not None, reason=str(pgbouncer_missing())
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One cluster for the module's tests."""
    with Cluster("pooled") as made:
        yield made


def test_a_cluster_is_gone_once_closed() -> None:
    with Cluster("short_lived") as made:
        folder = made.folder
        assert folder is not None and (folder / "data" / "PG_VERSION").is_file()
        assert made.execute_one("SELECT current_setting('cluster_name')") == ("short_lived",)
        conninfo = made.conninfo()
    assert not Path(folder).exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(conninfo, connect_timeout=2)


@needs_pgbouncer
def test_queries_go_through_pgbouncer(cluster: Cluster) -> None:
    with PgBouncer(cluster.port) as pooler:
        with psycopg.connect(pooler.conninfo()) as conn:
            for _ in range(2):  # two transactions on one client connection
                row = conn.execute("SELECT inet_server_port(), 1 + 1").fetchone()
                assert row == (cluster.port, 2)
                conn.commit()
        engine = create_engine(pooler.url())
        try:
            with engine.connect() as conn:
                assert conn.execute(text("SELECT current_user")).scalar() == "postgres"
        finally:
            engine.dispose()


@needs_pgbouncer
def test_pgbouncer_pools_transactions_not_sessions(cluster: Cluster) -> None:
    """Two client connections, each inside a transaction in turn, through one server
    connection: a pooler in session mode would make the second wait for the first to leave."""
    # In session mode the second would wait for a server connection: 10 s, then an error.
    with PgBouncer(cluster.port, pool_size=1, settings={"query_wait_timeout": "10"}) as pooler:
        first = psycopg.connect(pooler.conninfo())
        second = psycopg.connect(pooler.conninfo())
        try:
            backends = []
            for conn in (first, second, first):
                row = conn.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                backends.append(row[0])
                conn.commit()
        finally:
            first.close()
            second.close()
    assert len(set(backends)) == 1
