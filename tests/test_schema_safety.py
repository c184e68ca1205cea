"""Opening a store never loses data to the schema: old stores are upgraded with their rows intact,
stores written by a newer acti_store are refused without a write, and processes opening a store
at the same moment all succeed (the migration runs once, under a lock)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from conftest import make_config
from data.v1_store import V1_ROWS, create_v1_store
from workers import children, scenarios

from acti_store import (
    AgentUpdate,
    SchemaVersionError,
    SearchQuery,
    open_repository,
)
from acti_store.cli import main as cli_main
from acti_store.engine import alembic_config

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


def revision_of(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars())
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
            content: dict[str, Any] = {
                table: sorted(
                    (
                        tuple(map(repr, row))
                        for row in conn.execute(sa.text(f'SELECT * FROM "{table}"'))
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
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE_REVISION})
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
    PostgreSQL schema of ``store_url`` emptied)."""
    if sa.make_url(store_url).get_backend_name() == "sqlite":
        yield lambda i: f"sqlite:///{tmp_path / f'round_{i}.db'}"
        return
    engine = sa.create_engine(store_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        schema = conn.execute(sa.text("SELECT current_schema()")).scalar_one()

    def fresh(_: int) -> str:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
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
