"""Alembic: the v1 schema, the v1 → v2 upgrade with data, downgrade, and no drift.

pytest-alembic's built-in tests run here on both engines through the ``alembic_engine`` fixture.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic import command
from conftest import make_config
from data.v1_store import V1_ROWS, create_v1_store
from pytest_alembic import Config as PytestAlembicConfig
from pytest_alembic.tests import (  # noqa: F401 - collected as tests of this module
    test_model_definitions_match_ddl,
    test_single_head_revision,
    test_up_down_consistency,
    test_upgrade,
)

from acti_store import AgentUpdate, SearchQuery, open_repository
from acti_store.engine import alembic_config as store_alembic_config
from acti_store.engine import make_engine, migrations_dir
from acti_store.tool_masks import TOOL_BITS


@pytest.fixture
def alembic_config() -> PytestAlembicConfig:
    return PytestAlembicConfig(config_options={"script_location": str(migrations_dir())})


@pytest.fixture
def alembic_engine(store_url: str) -> Iterator[sa.Engine]:
    engine = make_engine(store_url)
    yield engine
    engine.dispose()


def test_v1_rows_survive_upgrade_and_downgrade(store_url: str) -> None:
    create_v1_store(store_url)
    cfg = store_alembic_config(make_engine(store_url).url)
    engine = make_engine(store_url)

    repo = open_repository(store_url)  # upgrades to head
    try:
        agents = {a.name: a for a in repo.list_agents()}
        assert set(agents) == {"lead_qualifier", "web_researcher"}
        for expected in V1_ROWS:
            agent = agents[str(expected["name"])]
            for field in ("description", "system_prompt", "tools", "model", "stratum"):
                assert getattr(agent, field) == expected[field]
            meta = agent.metadata
            assert meta.created_at == meta.updated_at == expected["created_at"]
            assert meta.version == 1 and meta.last_executed_at is None and agent.tags == []
            assert (meta.execution_count, meta.success_count, meta.error_count) == (0, 0, 0)
        # The migrated rows are searchable like any other (tool masks were computed).
        found = repo.search(SearchQuery(tools=["crm"]))
        assert [a.name for a in found] == ["lead_qualifier"]
    finally:
        repo.close()

    command.downgrade(cfg, "0001_v1")
    with engine.connect() as conn:
        back = conn.execute(
            sa.text("SELECT name, description, version FROM agents ORDER BY name")
        ).all()
        columns = {c["name"] for c in sa.inspect(conn).get_columns("agents")}
    assert [tuple(r) for r in back] == [
        ("lead_qualifier", V1_ROWS[0]["description"], "1.0.0"),
        ("web_researcher", V1_ROWS[1]["description"], "1.0.0"),
    ]
    assert "tags" not in columns and "execution_count" not in columns
    command.downgrade(cfg, "base")
    with engine.connect() as conn:
        assert sa.inspect(conn).get_table_names() == ["acti_store_alembic_version"]
    engine.dispose()


def test_open_repository_migrates_once_and_is_idempotent(store_url: str) -> None:
    first = open_repository(store_url)
    first.close()
    second = open_repository(store_url)  # already at head: nothing to do, no error
    try:
        with second.engine.connect() as conn:
            version = conn.execute(
                sa.text("SELECT version_num FROM acti_store_alembic_version")
            ).scalar()
        assert version == "0015_tenant_logins"
    finally:
        second.close()


def test_sqlite_index_log_hands_over_intact_and_downgrades_into_the_index(tmp_path) -> None:
    """Revision 0004 (SQLite): the trigram index, fed through its log, matches the agents table
    after every hand-over (FTS5's own integrity check compares the two), and a downgrade to 0003
    moves what is still logged into the index."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = open_repository(url)

    def logged() -> int:
        with repo.engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM agents_fts_log")).scalar_one())

    def index_matches_agents() -> None:
        with repo.engine.begin() as conn:  # raises if the index and the table differ
            conn.execute(
                sa.text("INSERT INTO agents_fts(agents_fts, rank) VALUES ('integrity-check', 1)")
            )

    for i in range(300):
        repo.create(make_config(f"agent_{i:03d}", description=f"Handles queue {i} of many"))
    assert logged() == 300 - 256
    for i in range(0, 300, 3):
        repo.update(f"agent_{i:03d}", AgentUpdate(description=f"Now routes ticket {i}"))
    for i in range(1, 300, 7):
        repo.delete(f"agent_{i:03d}")
    for k, name in enumerate(repo.list_names()):  # changes until the next hand-over
        repo.update(name, AgentUpdate(description=f"One more change, number {k}"))
        if not logged():
            break
    assert logged() == 0
    index_matches_agents()
    repo.update("agent_003", AgentUpdate(description="Logged, not yet indexed: unique zebra"))
    repo.create(make_config("newcomer", description="Logged too: unique yak"))
    assert logged() == 2
    repo.close()

    cfg = store_alembic_config(make_engine(url).url)
    command.downgrade(cfg, "0003_search")
    repo = open_repository(url, migrate=False)
    index_matches_agents()

    def indexed(words: str) -> list[str]:  # the 0003 index, asked directly
        probe = sa.text(
            "SELECT a.name FROM agents_fts f JOIN agents a ON a.id = f.rowid "
            "WHERE agents_fts MATCH :q ORDER BY a.name"
        )
        with repo.engine.connect() as conn:
            return list(conn.execute(probe, {"q": f'"{words}"'}).scalars())

    assert indexed("unique zebra") == ["agent_003"] and indexed("unique yak") == ["newcomer"]
    # Today's repository writes snapshots (revision 0006): below it, the row goes in by hand.
    with repo.engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO agents (name, description, system_prompt, tools, tools_mask, model, "
                "stratum, tags, created_at, updated_at, version, builder, execution_count, "
                "success_count, error_count, total_executions) VALUES ('after_downgrade', "
                "'Indexed by the 0003 triggers', 'p', '[]', 0, 'a:b', NULL, '[]', "
                "'2025-01-01 00:00:00', '2025-01-01 00:00:00', 1, 'x', 0, 0, 0, 0)"
            )
        )
    assert indexed("0003 triggers") == ["after_downgrade"]
    index_matches_agents()
    repo.close()
    command.upgrade(cfg, "head")
    repo = open_repository(url)
    find = lambda q: [a.name for a in repo.search(SearchQuery(query=q))]  # noqa: E731
    assert find("unique zebra") == ["agent_003"] and find("0003 triggers") == ["after_downgrade"]
    assert logged() == 0
    repo.close()


def test_tool_bits_match_the_frozen_copy_of_revision_0002() -> None:
    """Every stored ``tools_mask`` was computed with revision 0002's bits (v1 rows) or the
    schema's (every write since): a category must keep its bit in both."""
    path = migrations_dir() / "versions" / "0002_v2_schema.py"
    spec = importlib.util.spec_from_file_location("acti_store_revision_0002", path)
    assert spec is not None and spec.loader is not None
    revision = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(revision)

    frozen = revision._TOOL_BITS
    assert {category: TOOL_BITS[category] for category in frozen} == frozen
