"""Revision 0006 (configuration versions) on both engines: the backfill of a store made at
0005 with data, its downgrade, and an upgrade again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import command
from conftest import make_config

from acti_store import open_repository
from acti_store.engine import alembic_config as store_alembic_config
from acti_store.engine import make_engine
from acti_store.schema import agents, executions
from acti_store.versioning import UPGRADE_MESSAGE

BEFORE = "0005_counters_64bit"
VERSION_TABLES = {"agent_versions", "agent_labels", "agent_label_moves", "agent_version_stats"}
START = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def _agent_row(name: str, version: int, k: int) -> dict[str, object]:
    config = make_config(name, tools=["crm"], tags=[f"tag-{k}"])
    return {
        "name": name,
        "description": config.description,
        "system_prompt": config.system_prompt,
        "tools": config.tools,
        "tools_mask": 16,
        "model": config.model,
        "stratum": config.stratum,
        "tags": config.tags,
        "created_at": START,
        "updated_at": START + timedelta(days=k),
        "last_executed_at": None,
        "version": version,
        "builder": "acti-agent-builder",
        "execution_count": 0,
        "success_count": 0,
        "error_count": 0,
        "total_executions": 0,
    }


def _tables(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return set(sa.inspect(conn).get_table_names())


def test_upgrade_backfills_one_snapshot_per_agent_and_downgrades(store_url: str) -> None:
    engine = make_engine(store_url)
    cfg = store_alembic_config(engine.url)
    command.upgrade(cfg, BEFORE)
    rows = [_agent_row(f"agent_{k}", version, k) for k, version in enumerate((1, 4, 7))]
    with engine.begin() as conn:  # a store written at 0005, with a history
        ids = [conn.execute(agents.insert().values(row)).inserted_primary_key[0] for row in rows]
        conn.execute(
            sa.insert(executions).values(
                agent_id=ids[1], agent_name="agent_1", execution_id="e1", timestamp=START,
                task="t", result_summary="r", success=True, duration_seconds=1.0,
                tool_calls_count=0,
            )
        )  # fmt: skip
    assert not VERSION_TABLES & _tables(engine)

    command.upgrade(cfg, "head")
    repo = open_repository(store_url, migrate=False)
    try:
        for row in rows:
            agent = repo.get(str(row["name"]))
            (only,) = repo.versions(agent.name)
            assert (only.version, only.message) == (row["version"], UPGRADE_MESSAGE)
            assert only.config == agent.config and only.created_at == row["updated_at"]
        assert repo.get_history("agent_1").total_executions == 0  # the row as it was
        repo.update("agent_1", {"description": "Changed after the upgrade"})
        assert [v.version for v in repo.versions("agent_1")] == [5, 4]
    finally:
        repo.close()

    command.downgrade(cfg, BEFORE)
    assert not VERSION_TABLES & _tables(engine)
    with engine.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("executions")}
        versions = conn.execute(sa.select(agents.c.name, agents.c.version).order_by("name")).all()
        history = conn.execute(sa.select(sa.func.count()).select_from(executions)).scalar()
    assert "agent_version" not in columns and history == 1
    assert [tuple(v) for v in versions] == [("agent_0", 1), ("agent_1", 5), ("agent_2", 7)]

    command.upgrade(cfg, "head")  # again: the snapshots start at the versions of now
    repo = open_repository(store_url, migrate=False)
    try:
        assert [v.version for v in repo.versions("agent_1")] == [5]
    finally:
        repo.close()
        engine.dispose()
