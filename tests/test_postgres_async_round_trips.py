"""PostgreSQL: an async write costs the server no more round trips than the same sync write.

The coroutines (``acreate``, ``aupdate``, ...) run the sync method's code on psycopg's async
connections through SQLAlchemy's greenlet bridge (``repository.asynchronous``): the statements a
write does not wait for must still go in one pipeline there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import POSTGRES_URL, SKIP_POSTGRES, make_config
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from wire import Wire, run

from acti_store import (
    AgentExistsError,
    AgentUpdate,
    SqlAgentRepository,
)

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES),
]


def test_an_async_write_takes_no_more_round_trips_than_the_sync_one(
    pg_repo: SqlAgentRepository,
) -> None:
    with asyncio.Runner() as runner:

        async def async_engine() -> Engine:
            return pg_repo._async_dispatch().engine().sync_engine  # type: ignore[attr-defined]

        wire = Wire(pg_repo.engine, runner.run(async_engine()))
        pg_repo.engine.dispose()
        pg_repo.create(make_config("sync_agent"))
        runner.run(pg_repo.acreate(make_config("async_agent")))
        pg_repo.get("sync_agent")  # a new connection's set-up is not the write's
        runner.run(pg_repo.aget("async_agent"))

        def both(
            sync: Callable[[str], object], coroutine: Callable[[str], Any]
        ) -> tuple[tuple[int, list[str]], tuple[int, list[str]]]:
            return (
                wire.during(lambda: sync("sync_agent")),
                wire.during(lambda: runner.run(coroutine("async_agent"))),
            )

        counted = {
            "record_execution": both(
                lambda name: pg_repo.record_execution(name, run()),
                lambda name: pg_repo.arecord_execution(name, run()),
            ),
            "update": both(
                lambda name: pg_repo.update(name, AgentUpdate(description="Qualifies, v2")),
                lambda name: pg_repo.aupdate(name, AgentUpdate(description="Qualifies, v2")),
            ),
            "set_label": both(
                lambda name: pg_repo.set_label(name, "prod", 1),
                lambda name: pg_repo.aset_label(name, "prod", 1),
            ),
            "create": both(
                lambda name: pg_repo.create(make_config(f"{name}_2")),
                lambda name: pg_repo.acreate(make_config(f"{name}_2")),
            ),
        }
        runner.run(pg_repo.aclose())
    for name, pair in counted.items():
        print(name, pair)
    for name, (sync, asynchronous) in counted.items():
        assert sync[0] >= 1, name  # the wire was watched
        assert asynchronous[1] == sync[1], name  # the same statements
        assert asynchronous[0] <= sync[0], (name, sync, asynchronous)


async def test_an_async_write_that_fails_in_its_pipeline_raises_and_leaves_the_store_working(
    pg_repo: SqlAgentRepository,
) -> None:
    await pg_repo.acreate(make_config("lead_qualifier"))
    try:
        with pytest.raises(AgentExistsError):  # an error of a statement sent without waiting
            await pg_repo.acreate(make_config("lead_qualifier"))
        for _ in range(3):
            await pg_repo.arecord_execution("lead_qualifier", run())
        assert (await pg_repo.aexecution_stats("lead_qualifier")).total_executions == 3
    finally:
        await pg_repo.aclose()


async def test_an_async_connection_the_server_ended_is_replaced_before_it_is_used(
    pg_repo: SqlAgentRepository,
) -> None:
    await pg_repo.acreate(make_config("lead_qualifier"))
    engine = pg_repo._async_dispatch().engine()  # type: ignore[attr-defined]
    try:
        async with engine.connect() as conn:  # the pool's one connection, idle again after
            pid = (await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one()
        admin = create_engine(str(POSTGRES_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
            gone = text("SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = :pid")
            deadline = time.monotonic() + 10
            while not conn.execute(gone, {"pid": pid}).scalar() and time.monotonic() < deadline:
                time.sleep(0.01)
        admin.dispose()
        # Not pinged (used a moment ago): what the server sent gives the dead one away.
        assert (await pg_repo.aget("lead_qualifier")).name == "lead_qualifier"
        await pg_repo.arecord_execution("lead_qualifier", run())
        assert (await pg_repo.aget_history("lead_qualifier")).total_executions == 1
    finally:
        await pg_repo.aclose()
