"""Every statement the repository can issue carries the tenant (issue 28, §3).

The statements are the ``sqlexec.Prepared`` of every module of acti_store (module globals and
the dicts and tuples they hold), those a store makes as it runs (a SQLite store put through
every kind of operation), and the search's, built for each engine's strategy from many
``SearchQuery`` shapes. Each is compiled for SQLite, PostgreSQL and MariaDB and its SQL read by
``tenant_sql`` (an independent check: it shares nothing with ``acti_store.tenancy``). The same
check runs on every statement the test session sends (``tenant_audit``); the last tests here
show both can fail.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tenant_sql
from conftest import make_config
from sqlalchemy import bindparam, delete, insert, or_, select, text, update
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Insert, Select, visitors

import acti_store
from acti_store import ExecutionRecord, SearchQuery, export_json, import_json, open_repository
from acti_store.engines.postgresql.connection import TransactionSettings
from acti_store.repository import search
from acti_store.repository.cursor import SortKey
from acti_store.repository.strategy import strategy_for
from acti_store.schema import Base, agent_tags, agents, executions
from acti_store.sqlexec import Prepared
from acti_store.tenancy import TENANT_SETTING, TENANT_TABLES, final_froms, written_keys

TABLES = tenant_sql.tenant_tables(Base.metadata)
DIALECTS: dict[str, Dialect] = {
    "sqlite": sqlite.pysqlite.dialect(),
    "postgresql": postgresql.psycopg.dialect(),
    "mysql": mysql.pymysql.dialect(),
}
#: Each engine strategy, by the dialect its statements are compiled for.
ENGINES = {"sqlite": "sqlite", "postgresql": "postgresql", "mysql": "mysql", "mariadb": "mysql"}


def _modules() -> Iterator[Any]:
    for found in pkgutil.walk_packages(acti_store.__path__, "acti_store."):
        # The CLI, and the Alembic environment of a checkout's ini: each runs on import.
        if not found.name.endswith(("__main__", "migrations.env")):
            yield importlib.import_module(found.name)


def _held(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, Prepared]]:
    if isinstance(value, Prepared):
        yield where, value
    elif depth < 3 and isinstance(value, dict):
        for key, item in list(value.items()):
            yield from _held(item, f"{where}[{key!r}]", depth + 1)
    elif depth < 3 and isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(list(value)):
            yield from _held(item, f"{where}[{index}]", depth + 1)


def _module_statements() -> dict[int, tuple[str, Prepared]]:
    found: dict[int, tuple[str, Prepared]] = {}
    for module in _modules():
        for name, value in list(vars(module).items()):
            for where, prepared in _held(value, f"{module.__name__}.{name}"):
                found.setdefault(id(prepared), (where, prepared))
    return found


def _record(at: datetime, task: str, success: bool) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=at,
        task=task,
        result_summary=f"done: {task}",
        success=success,
        duration_seconds=1.5,
        tool_calls_count=1,
        error_type=None if success else "ExecutionError",
    )


def _workload(url: str, folder: Path) -> None:
    """A SQLite store through every kind of operation (the statements it makes on the way)."""
    repo = open_repository(url)
    try:
        for i in range(3):
            repo.create(make_config(f"agent_{i}", tags=["sales", f"t{i}"]), message="made")
        repo.update("agent_0", {"description": "Changed once"}, message="first")
        repo.update("agent_0", {"tags": ["xy"], "tools": ["crm"]}, expected_version=2)
        repo.update("agent_1", {"stratum": "EEI", "system_prompt": "Another prompt. " * 5})
        for run in range(4):
            repo.record_execution("agent_0", _record(repo.now(), f"task {run}", run % 2 == 0))
        repo.record_execution("agent_0", _record(repo.now(), "pinned", True), version=1)
        repo.get_history("agent_0", limit=2)
        repo.get_history("agent_0", errors_only=True)
        repo.get_with_history("agent_1")
        repo.execution_stats("agent_0")
        repo.set_label("agent_0", "prod", 1, note="first")
        repo.set_label("agent_0", "prod", 2)
        repo.labels("agent_0")
        repo.label_history("agent_0")
        repo.version_stats("agent_0")
        repo.version_log("agent_0")
        repo.versions("agent_0", limit=2)
        repo.get_version("agent_0", 1)
        repo.diff("agent_0", 1, 2)
        repo.rollback("agent_0", 1)
        repo.remove_label("agent_0", "prod")
        repo.prune_versions("agent_0", keep=1)
        repo.clone("agent_1", "agent_copy", description="A copy of agent one")
        repo.count_by_stratum()
        repo.first_by_stratum(2)
        list(repo.iter_agents(page_size=2))
        list(repo.iter_export(page_size=2))
        list(repo.iter_export_versions(page_size=2))
        repo.list_names()
        repo.exists("agent_2")
        repo.search({"query": "agent", "tags": ["sales"], "sort_by": "created_at"})
        repo.search_page({"query": "ag", "limit": 1})
        repo.count({"stratum": "RAI"})
        export_json(repo, folder / "out", versions=True)
        repo.delete("agent_2", delete_history=False)
        repo.archived_history("agent_2")
        repo.delete("agent_0")
        import_json(repo, folder / "out", on_conflict="replace")
        repo.tenants()
    finally:
        repo.close()


class _NoClock:
    """A driver connection stand-in: SQLite's walk sets its progress handler on it."""

    def set_progress_handler(self, *_: Any) -> None:
        return None


class _Canned:
    """A ``sqlexec.Cursor`` stand-in for the search: every statement answers ``rows``."""

    driver = _NoClock()

    def __init__(self, rows: list[tuple[int]]) -> None:
        self.rows = rows

    def all(self, prepared: Prepared, values: Any = None, **_: Any) -> list[tuple[int]]:
        return self.rows


#: Query fields, each with the values the shapes are made of.
_FIELDS: dict[str, list[Any]] = {
    "query": [None, "ab", "lead", "lead qual", "abc def ghi jk"],
    "stratum": [None, "RAI"],
    "tools": [None, ["crm"], ["voice", "crm", "calendar"]],
    "tags": [None, ["a"], [f"t{i}" for i in range(6)]],
    "created_after": [None, datetime(2025, 1, 1, tzinfo=UTC)],
    "created_before": [None, datetime(2026, 1, 1, tzinfo=UTC)],
    "min_executions": [None, 3],
}


def _queries() -> Iterator[SearchQuery]:
    """Each field's values one at a time, then all of them set at once, in each sort."""
    every = {field: values[-1] for field, values in _FIELDS.items()}
    shapes = [{field: value} for field, values in _FIELDS.items() for value in values]
    shapes += [every, every | {"query": "ab"}, every | {"tags": ["ab"], "tools": ["crm"]}]
    for shape, sort in itertools.product(shapes, ("name", "created_at", "execution_count")):
        yield SearchQuery.model_validate({"sort_by": sort} | shape)


def _search_statements(engine_name: str) -> None:
    """The search's statements of many shapes, for an engine's strategy; a probe that finds
    a few ids (an id list) and one that fills up (common words: none); where the engine's
    index walks first (SQLite's), with the walk and without it."""
    engine = strategy_for(engine_name)
    index = engine.text_index
    walks = (True, False) if index is not None and index.walks_first else (False,)
    for answers, walk in itertools.product(([(0,), (7,)], [(7,)] * 1000), walks):
        cursor: Any = _Canned(answers)
        with pytest.MonkeyPatch.context() as patched:
            if index is not None:
                patched.setattr(type(index), "walks_first", walk)
            for query in _queries():
                search.search_rows(cursor, query, engine)
                search.page_rows(cursor, query, None, engine)
                value = None if query.sort_by == "name" else 3
                search.page_rows(cursor, query, SortKey(value, "m"), engine)


@pytest.fixture(scope="module")
def statements(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Prepared, list[str]]]:
    """Every ``Prepared`` of the package, after a store's workload and the search's shapes,
    with the dialects to compile it for: every one, but a search's its engine's only."""
    made: list[Prepared] = []
    original = Prepared.__init__

    def recording(self: Prepared, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    folder = tmp_path_factory.mktemp("statements")
    found: dict[int, tuple[str, Prepared, list[str]]] = {}
    Prepared.__init__ = recording  # type: ignore[method-assign]
    try:
        _workload(f"sqlite:///{folder / 'store.db'}", folder)
        for prepared in made:
            found[id(prepared)] = ("made by a store", prepared, list(DIALECTS))
        for engine_name, dialect in ENGINES.items():
            made.clear()
            _search_statements(engine_name)
            for prepared in made:
                found[id(prepared)] = (f"a search on {engine_name}", prepared, [dialect])
    finally:
        Prepared.__init__ = original  # type: ignore[method-assign]
    for where, prepared in _module_statements().values():
        found.setdefault(id(prepared), (where, prepared, list(DIALECTS)))
    return list(found.values())


def _compiled(prepared: Prepared, dialects: list[str]) -> dict[str, str]:
    """Its SQL per dialect it compiles for (an engine's own statement compiles for it only)."""
    return {name: sql for name, (sql, _) in _compiled_named(prepared, dialects).items()}


def _compiled_named(
    prepared: Prepared, dialects: list[str]
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Its SQL per dialect, with its parameters' names in order."""
    sql = {}
    for name in dialects:
        try:
            compiled = prepared.compiled(DIALECTS[name])
        except Exception:  # another engine's construct (an upsert's clause)
            continue
        sql[name] = (compiled.sql, compiled.names)
    return sql


def test_the_tenant_tables_are_the_tables_with_a_tenant_column() -> None:
    assert TABLES == TENANT_TABLES


def test_every_statement_of_the_package_carries_the_tenant(
    statements: list[tuple[str, Prepared, list[str]]],
) -> None:
    checked = 0
    failures = []
    for where, prepared, dialects in statements:
        sql = _compiled_named(prepared, dialects)
        assert sql, f"{where} compiles for no dialect"
        for dialect, (found, names) in sql.items():
            checked += 1
            if problems := tenant_sql.problems(found, TABLES, names):
                failures.append(f"{where} ({dialect}): {problems}\n{found}")
    assert failures == []
    # The walk found the package's statements, the store's and the search's many shapes.
    assert len(statements) > 300, len(statements)
    assert checked > 400, checked


def test_every_search_engine_and_tenant_table_is_covered(
    statements: list[tuple[str, Prepared, list[str]]],
) -> None:
    texts = "\n".join(text for _, p, d in statements for text in _compiled(p, d).values())
    for table in TABLES:
        assert f"FROM {table}" in texts or f"INTO {table}" in texts, table
    for probe in ("agents_fts MATCH", "agent_trigrams t0", "+agents.stratum"):
        assert probe in texts


def _raw(statement: Any, dialect: Dialect) -> str:
    """The SQL of ``statement`` as compiled without ``sqlexec`` (so without the tenant)."""
    return str(statement.compile(dialect=dialect))


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_the_check_fails_statements_without_the_tenant(dialect: str) -> None:
    name = bindparam("b_name")
    outer = agents.outerjoin(executions, executions.c.agent_id == agents.c.id)
    forgetful = [
        select(agents.c.id).where(agents.c.name == name),
        select(agents.c.id).where(or_(agents.c.name == name, agents.c.tenant == bindparam("t"))),
        select(executions.c.id).select_from(outer).where(agents.c.name == name),
        update(agents).where(agents.c.name == name).values(description="x"),
        delete(agent_tags).where(agent_tags.c.tag == bindparam("tag")),
        insert(agents).values(name=name),
        select(agents.c.id).where(
            agents.c.id.in_(select(agent_tags.c.agent_id).where(agent_tags.c.tag == "a"))
        ),
    ]
    for statement in forgetful:
        unscoped = _raw(statement, DIALECTS[dialect])
        assert tenant_sql.problems(unscoped, TABLES), unscoped
        # The same statement run as the repository runs it: the tenant added.
        if statement.is_insert:  # its values as the repository's INSERTs take them
            prepared = Prepared(insert(agents), columns=["name"])
        else:
            prepared = Prepared(statement)
        scoped = prepared.compiled(DIALECTS[dialect]).sql
        assert tenant_sql.problems(scoped, TABLES) == [], scoped


_SESSION = """
import sqlite3

from sqlalchemy import text
from sqlalchemy.dialects import sqlite

from acti_store import sqlexec


def test_sends_it():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE agents (id INTEGER, name TEXT, tenant TEXT)")
    cursor = sqlexec.Cursor(conn.cursor(), sqlite.dialect())
    cursor.tenant = "acme"
    # A fixed SQL text: a path that neither ``scoped`` nor its refusal of a text() sees.
    tenant = "{tenant}"
    values = ("x", "acme") if tenant else ("x",)
    cursor.raw("SELECT agents.id FROM agents WHERE agents.name = ?" + tenant, values)
"""


@pytest.mark.parametrize(
    ("tenant", "workers"),
    [("", None), ("", 2), (" AND agents.tenant = ?", 2)],
    ids=["forgets", "forgets-xdist", "carries-xdist"],
)
def test_the_session_audit_fails_a_run_that_sends_one(
    tmp_path: Path, tenant: str, workers: int | None
) -> None:
    """A session whose test sends a statement without the tenant fails (exit status 1), with
    the statement printed, under xdist too (a worker sent it); with the tenant it passes."""
    if workers is not None and importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed: the audit's path under xdist is not run")
    (tmp_path / "test_inner.py").write_text(_SESSION.replace("{tenant}", tenant))
    (tmp_path / "test_other.py").write_text("def test_nothing():\n    pass\n")
    here = Path(__file__).parent
    path = os.pathsep.join([str(here.parent), str(here), os.environ.get("PYTHONPATH", "")])
    # Only the plugins the inner session needs: another installed one (pytest-alembic's oldest
    # releases) may refuse a session rooted outside the project.
    command = [sys.executable, "-m", "pytest", "-p", "tenant_audit", "-p", "no:cacheprovider"]
    command += [] if workers is None else ["-p", "xdist.plugin", "-n", str(workers)]
    done = subprocess.run(
        [*command, "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if tenant:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "each carries the tenant" in done.stdout
    else:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "2 passed" in done.stdout
        assert "FROM agents WHERE agents.name = ?" in done.stdout
        assert "FROM agents without agents.tenant = <parameter>" in done.stdout


def _tenant_condition_on(table: Any) -> Any:
    return table.c.tenant == bindparam("tenant")


_MULTI_TABLE = {
    "update": update(agents)
    .where(agents.c.id == agent_tags.c.agent_id, agent_tags.c.tag == bindparam("tag"))
    .values(description="x"),
    "delete": delete(agents).where(
        agents.c.id == agent_tags.c.agent_id, agent_tags.c.tag == bindparam("tag")
    ),
}


@pytest.mark.parametrize("kind", list(_MULTI_TABLE))
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_the_check_fails_a_multi_table_write_without_the_tenant_of_its_second_table(
    dialect: str, kind: str
) -> None:
    """``UPDATE agents ... FROM agent_tags`` (MySQL: ``UPDATE agents, agent_tags``), ``DELETE
    FROM agents USING agent_tags``: the target's condition alone is caught; ``scoped`` gives
    every table its own."""
    statement = _MULTI_TABLE[kind]
    try:
        target_only = _raw(statement.where(_tenant_condition_on(agents)), DIALECTS[dialect])
    except Exception:  # SQLite has no multi-table DELETE
        assert (dialect, kind) == ("sqlite", "delete")
        return
    listed = "USING" if kind == "delete" else "UPDATE" if dialect == "mysql" else "FROM"
    assert tenant_sql.problems(target_only, TABLES) == [
        f"{listed} agent_tags without agent_tags.tenant = <parameter>"
    ], target_only
    compiled = Prepared(statement).compiled(DIALECTS[dialect])
    assert tenant_sql.problems(compiled.sql, TABLES, compiled.names) == [], compiled.sql
    assert compiled.sql.count(".tenant = ") == 2, compiled.sql


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_the_check_fails_a_text_without_the_tenant(dialect: str) -> None:
    """A ``text()`` is read as any statement: one whose condition compares the tenant column
    with another parameter is caught (its positional parameter named by the statement), and
    ``scoped`` refuses to compile a ``text()`` on a tenant table that does not bind it."""
    wrong = text("SELECT agents.id FROM agents WHERE agents.tenant = :name")
    right = text("SELECT agents.id FROM agents WHERE agents.tenant = :tenant")
    for statement, fails in ((wrong, True), (right, False)):
        compiled = statement.compile(dialect=DIALECTS[dialect])
        names = compiled.positiontup or list(compiled.binds)
        found = tenant_sql.problems(compiled.string, TABLES, names)
        assert found == (["FROM agents without agents.tenant = <parameter>"] if fails else [])
    assert Prepared(right).compiled(DIALECTS[dialect]).tenant_bound
    with pytest.raises(RuntimeError, match="text\\(\\) on agents must bind :tenant"):
        Prepared(text("SELECT agents.id FROM agents WHERE agents.name = :name")).compiled(
            DIALECTS[dialect]
        )


def test_the_check_fails_a_spliced_tenant() -> None:
    """The tenant written into the SQL as a string is caught, in a condition and in row-level
    security's setting; PostgreSQL's settings as the engines send them bind it."""
    condition = select(agents.c.id).where(agents.c.tenant == "acme")
    spliced = str(
        condition.compile(dialect=DIALECTS["postgresql"], compile_kwargs={"literal_binds": True})
    )
    assert "the tenant spliced into the SQL: tenant = 'acme'" in tenant_sql.problems(
        spliced, TABLES
    )
    setting = f"SELECT set_config('{TENANT_SETTING}', 'acme', false)"
    assert tenant_sql.problems(setting, TABLES) == [
        "the tenant spliced into the SQL: set_config(..., 'acme'"
    ]
    sql, values = strategy_for("postgresql").tenant_sql("acme") or ("", ())
    assert tenant_sql.problems(sql, TABLES) == [] and values == ("acme",)
    pooled, values = TransactionSettings(None, 1000, False).statement("acme")
    assert tenant_sql.problems(pooled, TABLES) == [] and "acme" in values


def _elements(statement: Any) -> Iterator[Any]:
    return visitors.iterate(statement)


def test_what_tenancy_reads_of_sqlalchemy_agrees_with_its_public_api(
    statements: list[tuple[str, Prepared, list[str]]],
) -> None:
    """``tenancy.final_froms`` and ``tenancy.written_keys`` read SQLAlchemy's private state
    (the one place that does): for every SELECT and INSERT of the package they say what the
    public API says, or a release of SQLAlchemy has changed under them."""
    selects: dict[int, Any] = {}
    inserts: dict[int, Any] = {}
    for _, prepared, _ in statements:
        for element in _elements(prepared.statement):
            if isinstance(element, Select):
                selects[id(element)] = element
            elif isinstance(element, Insert) and element.table.name in TENANT_TABLES:
                inserts[id(element)] = element
    for found in selects.values():
        read, public = final_froms(found), found.get_final_froms()
        assert len(read) == len(public), found
        assert all(a.compare(b) for a, b in zip(read, public, strict=True)), found
    checked = 0
    for found in inserts.values():
        keys = written_keys(found)
        if keys is None:
            continue
        checked += 1
        sql = next(iter(_compiled(Prepared(found), list(DIALECTS)).values()))
        columns = re.search(r"INSERT INTO \w+ \(([^)]*)\)", sql)
        assert columns is not None, sql
        assert keys == {c.strip() for c in columns.group(1).split(",")}, sql
    assert len(selects) > 80 and checked > 5, (len(selects), checked)
