"""``kept_statements``: a search's statement compiled once, kept on disk, and read back by a
later process as SQLAlchemy compiled it (tenant condition included, values bound), on every
engine's dialect."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import make_config
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Dialect

from acti_store import SearchQuery, open_repository
from acti_store import kept_statements as kept
from acti_store.repository import search
from acti_store.repository.strategy import strategy_for
from acti_store.sqlexec import Compiled, Prepared

MOMENT = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
DIALECTS = {
    "sqlite": sqlite.pysqlite.dialect(),
    "postgresql": postgresql.psycopg.dialect(),
    "mysql": mysql.pymysql.dialect(),
}
#: Shapes of every filter, alone and together, with and without a text index's ids.
SHAPES = [
    search._Shape(),
    search._Shape(stratum=True),
    search._Shape(masks=16, tags=2),
    search._Shape(tags=6, created_after=True, created_before=True),
    search._Shape(min_executions=True, words=2),
    search._Shape(stratum=True, masks=2, tags=1, words=1, ids=1, logged=1),
    search._Shape(stratum=True, min_executions=True, ids=4, words=1),
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty statement cache of the test's own, looked up afresh."""
    folder = tmp_path / "statements"
    monkeypatch.setenv(kept.ENV_STATEMENT_CACHE, str(folder))
    monkeypatch.setattr(kept, "_found", [])
    monkeypatch.setattr(search, "_statements", {})
    yield folder


def _same(read: Compiled, compiled: Compiled) -> None:
    assert read.sql == compiled.sql
    assert read.names == compiled.names
    assert read.positional == compiled.positional
    assert read.defaults == compiled.defaults
    assert [p is None for _, p, _ in read.plan] == [p is None for _, p, _ in compiled.plan]
    assert [type(t) for t in read.result_types] == [type(t) for t in compiled.result_types]


def _never_built() -> None:
    raise AssertionError("a kept statement was built again")


@pytest.mark.parametrize("engine", sorted(DIALECTS))
def test_a_kept_statement_reads_back_what_sqlalchemy_compiles(engine: str, cache: Path) -> None:
    dialect: Dialect = DIALECTS[engine]
    strategy = strategy_for(engine)
    for shape in SHAPES:
        if shape.ids and strategy.text_index is None:
            continue
        for sort in ("name", "created_at", "updated_at", "execution_count"):
            statement = search._ordered(shape, sort, strategy).limit(search._LIMIT)
            compiled = Prepared(statement).compiled(dialect)  # as it always compiled
            key = repr((engine, sort, shape))
            first = kept.KeptStatement(key, lambda s=statement: s, search._TYPE_NAMES)
            _same(first.compiled(dialect), compiled)
            read = kept.KeptStatement(key, _never_built, search._TYPE_NAMES).compiled(dialect)
            _same(read, compiled)
            assert "tenant" in read.names  # confined to the store's tenant
            values = {name: MOMENT if name.startswith("created") else 1 for name in read.names}
            assert read.params(values) == compiled.params(values)
    assert len(list(cache.glob("*/*.json"))) > len(SHAPES)


def test_searches_read_kept_statements_and_stay_within_their_tenant(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    queries = [
        SearchQuery(query="lead", sort_by="created_at"),
        SearchQuery(stratum="RAI", tools=["crm"], tags=["sales"]),
        SearchQuery(query="qualifies leads", min_executions=0, sort_by="execution_count"),
    ]
    found: dict[str, list[list[str]]] = {}
    for tenant in ("acme", "globex"):
        with open_repository(url, tenant=tenant) as repo:
            for i in range(3):
                repo.create(make_config(f"{tenant}_lead_{i}"))
            found[tenant] = [[a.name for a in repo.search(q)] for q in queries]
    for tenant in ("acme", "globex"):
        newest_first = [f"{tenant}_lead_{i}" for i in (2, 1, 0)]
        by_name = newest_first[::-1]
        assert found[tenant] == [newest_first, by_name, by_name]
    assert cache.is_dir() and list(cache.glob("*/*.json"))

    # A new process's view: nothing compiled in memory, the statements read from disk.
    monkeypatch.setattr(search, "_statements", {})
    monkeypatch.setattr(search, "_ordered", lambda *_: _never_built())
    for tenant in ("acme", "globex"):
        with open_repository(url, tenant=tenant) as repo:
            assert [[a.name for a in repo.search(q)] for q in queries] == found[tenant]


@pytest.mark.parametrize("setting", ["off", "a-file"])
def test_a_search_runs_without_a_usable_cache(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    where = tmp_path / "a-file"
    where.write_text("not a directory")
    monkeypatch.setenv(kept.ENV_STATEMENT_CACHE, "off" if setting == "off" else str(where))
    with open_repository(f"sqlite:///{tmp_path / 'store.db'}") as repo:
        repo.create(make_config("lead_qualifier"))
        assert [a.name for a in repo.search(SearchQuery(query="lead"))] == ["lead_qualifier"]
    assert where.read_text() == "not a directory"
    assert not cache.exists()


def test_a_damaged_entry_is_compiled_again(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    query = SearchQuery(stratum="RAI", sort_by="updated_at")
    with open_repository(url) as repo:
        repo.create(make_config("lead_qualifier"))
        assert [a.name for a in repo.search(query)] == ["lead_qualifier"]
    for entry in cache.glob("*/*.json"):
        entry.write_text('{"name": "another statement", "sql": "SELECT 1"}')
    monkeypatch.setattr(search, "_statements", {})
    with open_repository(url) as repo:
        assert [a.name for a in repo.search(query)] == ["lead_qualifier"]


def test_the_cli_searches_alike_with_its_statements_compiled_or_read(tmp_path: Path) -> None:
    """Two ``acti-store search`` processes: the first compiles and keeps the statement, the
    second reads it; both print the same answer."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_repository(url) as repo:
        repo.create(make_config("lead_qualifier"))
        repo.create(make_config("scheduler", description="Books meetings", stratum="RTI"))
    folder = tmp_path / "statements"
    env = os.environ | {kept.ENV_STATEMENT_CACHE: str(folder), "ACTI_STORE_URL": url}
    command = [sys.executable, "-m", "acti_store", "search", "lead", "--stratum", "RAI"]
    outputs = []
    for _ in range(2):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        outputs.append(done.stdout)
        assert list(folder.glob("*/*.json"))
    assert outputs[0] == outputs[1]
    assert "lead_qualifier" in outputs[0] and "scheduler" not in outputs[0]


def test_a_changed_module_is_a_new_fingerprint(tmp_path: Path) -> None:
    """A module of the package that changes, wherever it is, changes the fingerprint: an entry
    compiled by the code it replaced is never found."""
    root = Path(kept.__file__).parent
    before = kept._fingerprint()
    module = root / "engines" / "sqlite" / "statements.py"
    stat = module.stat()
    try:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
        assert kept._fingerprint() != before
    finally:
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert kept._fingerprint() == before
