"""SQLite's search walks its sort's index, and that index carries the stratum, the tools and
the creation time (revision 0012): SQLite tests them on the index entry and fetches only the
rows that pass. The answer stays every filter's, in the sort's order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import make_config, make_record

from acti_store import AgentUpdate, SearchQuery, open_repository
from acti_store.engines.sqlite import statements as sqlite_engine
from acti_store.engines.sqlite.statements import FtsTrigramIndex
from acti_store.repository import search
from acti_store.repository.statements import COUNT_BY_STRATUM
from acti_store.repository.strategy import strategy_for
from acti_store.sqlexec import Cursor, Prepared

SORTS = ("name", "created_at", "updated_at", "execution_count")
STRATA = ("RAI", "EEI", "ZACS", None)
TOOLS = (["crm"], ["communication"], ["communication", "crm"], [])


def test_a_filtered_search_walks_the_sort_index_that_carries_its_filters(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = open_repository(url)
    try:
        for i in range(64):
            name = f"agent_{(i * 37) % 64:02}"  # created in another order than the names'
            repo.create(make_config(name, stratum=STRATA[i % 4], tools=TOOLS[i // 4 % 4]))
            for _ in range(i % 5):
                repo.record_execution(name, make_record())
        engine = strategy_for("sqlite")
        created = sorted(a.metadata.created_at for a in repo.search(SearchQuery(limit=100)))
        since = created[len(created) // 4]
        for sort in SORTS:
            query = SearchQuery(
                stratum="RAI", tools=["crm"], created_after=since, sort_by=sort, limit=50
            )
            every = repo.search(SearchQuery(sort_by=sort, limit=100))
            expected = [
                a.name
                for a in every
                if a.stratum == "RAI" and "crm" in a.tools and a.metadata.created_at >= since
            ]
            assert 0 < len(expected) < 8
            assert [a.name for a in repo.search(query)] == expected
            with repo.engine.connect() as conn:
                cursor = Cursor(conn.connection.cursor(), repo.engine.dialect)
                cursor.tenant = repo.tenant
                shape, values = search._bound(cursor, query, engine)
                statement = Prepared(search._ordered(shape, sort, engine).limit(query.limit))
                compiled = statement.compiled(repo.engine.dialect)
                params = compiled.params({"tenant": repo.tenant, **values, "limit": 50})
                plan = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + compiled.sql, tuple(params))
                details = [row[3] for row in plan]
            assert any(f"USING INDEX ix_agents_sort_{sort} " in d for d in details), details
    finally:
        repo.close()
    engine_ = sa.create_engine(url)
    try:
        with engine_.connect() as conn:
            columns = conn.exec_driver_sql("PRAGMA index_info(ix_agents_sort_updated_at)")
            carried = ["stratum", "tools_mask", "created_at"]
            assert [row[2] for row in columns] == ["tenant", "updated_at", *carried]
    finally:
        engine_.dispose()


def test_a_common_word_is_found_by_the_walk_and_a_rare_one_by_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search of one word and few filters walks its sort's order first: a common word fills
    the page there and the trigram index is not probed at all; a rare word's walk stops at its
    time (``WALK_SECONDS``, none here) and the probe's ids answer. Two words, or a word and
    three filters, are probed first. Every way, every match in the sort's order."""
    repo = open_repository(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        for i in range(300):
            zebra = " Watches the zebra crossing." if i in (17, 250) else ""
            repo.create(make_config(f"agent_{i:03}", description=f"Qualifies leads.{zebra}"))
        calls: list[str] = []
        probe, walk = FtsTrigramIndex.probe, FtsTrigramIndex.walk

        def probed(index: FtsTrigramIndex, cursor: Cursor, words: Sequence[str]) -> Any:
            calls.append("probe " + " ".join(words))
            return probe(index, cursor, words)

        def walked(index: FtsTrigramIndex, cursor: Cursor, *statement: Any) -> Any:
            rows = walk(index, cursor, *statement)
            calls.append("walk" if rows is not None else "walk stopped")
            return rows

        monkeypatch.setattr(FtsTrigramIndex, "probe", probed)
        monkeypatch.setattr(FtsTrigramIndex, "walk", walked)
        monkeypatch.setattr(sqlite_engine, "WALK_SECONDS", 0.0)

        def found(**fields: Any) -> list[str]:
            calls.clear()
            return [a.name for a in repo.search(SearchQuery.model_validate(fields))]

        assert found(query="LEADS", limit=5) == [f"agent_{i:03}" for i in range(5)]
        assert calls == ["walk"]
        assert found(query="leads", sort_by="created_at", limit=3) == [
            "agent_299", "agent_298", "agent_297"
        ]  # fmt: skip
        assert calls == ["walk"]
        assert found(query="Zebra", sort_by="created_at") == ["agent_250", "agent_017"]
        assert calls == ["walk stopped", "probe zebra"]
        assert found(query="zebra crossing") == ["agent_017", "agent_250"]
        assert calls == ["probe zebra crossing"]
        assert found(query="zebra", stratum="RAI", tools=["crm"], tags=["sales"]) == [
            "agent_017", "agent_250"
        ]  # fmt: skip
        assert calls == ["probe zebra"]
        monkeypatch.setattr(sqlite_engine, "WALK_SECONDS", 60.0)  # time enough to walk them all
        assert found(query="zebra", stratum="RAI", tags=["sales"]) == ["agent_017", "agent_250"]
        assert calls == ["walk"]
    finally:
        repo.close()


def test_a_count_of_a_word_looks_its_matches_up_and_counts_only_its_tenant(
    tmp_path: Path,
) -> None:
    """``count`` (what ``search_agents`` adds to a full page) takes the trigram index's whole
    match and looks each agent up by id, rather than testing every agent with ``LIKE``; the
    index holds every tenant's agents, and the count only the store's own."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    acme, globex = open_repository(url, tenant="acme"), open_repository(url, tenant="globex")
    try:
        for i in range(40):
            for repo, every in ((acme, 2), (globex, 3)):
                words = "Qualifies leads" if i % every else "Books meetings"
                stratum = "RAI" if i % 4 else "EEI"
                repo.create(make_config(f"agent_{i:02}", description=words, stratum=stratum))
        acme.update("agent_01", AgentUpdate(description="Books meetings"))  # in the index's log
        assert acme.count(SearchQuery(query="LEADS")) == 19
        assert globex.count(SearchQuery(query="leads")) == 26
        assert acme.count(SearchQuery(query="leads", stratum="EEI")) == 0
        assert globex.count(SearchQuery(query="leads qualifies", stratum="EEI")) == 6
        assert acme.count(SearchQuery(query="meetings")) == 21
        query = SearchQuery(query="leads", stratum="RAI")
        assert acme.count(query) == 19  # every agent of an odd number is RAI
        with acme.engine.connect() as conn:  # the statement that count just ran
            cursor = Cursor(conn.connection.cursor(), acme.engine.dialect)
            cursor.tenant = acme.tenant
            shape, values = search._bound(cursor, query, strategy_for("sqlite"), text_by="match")
            sql = search._statements[("count", "sqlite", shape)].compiled(acme.engine.dialect)
            params = sql.params({"tenant": acme.tenant, **values})
            explained = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql.sql, tuple(params))
            plan = [row[3] for row in explained]
        reads = [s for s in plan if s.split(" ")[:2] in (["SCAN", "agents"], ["SEARCH", "agents"])]
        assert reads == ["SEARCH agents USING INTEGER PRIMARY KEY (rowid=?)"], plan
    finally:
        acme.close()
        globex.close()


def _count_plan(repo: Any, query: SearchQuery) -> list[str]:
    """SQLite's plan of the statement ``repo.count(query)`` runs, with its values."""
    with repo.engine.connect() as conn:
        cursor = Cursor(conn.connection.cursor(), repo.engine.dialect)
        cursor.tenant = repo.tenant
        shape, values = search._bound(cursor, query, strategy_for("sqlite"), text_by="match")
        sql = search._statements[("count", "sqlite", shape)].compiled(repo.engine.dialect)
        params = sql.params({"tenant": repo.tenant, **values})
        return [
            row[3] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql.sql, tuple(params))
        ]


def test_a_count_by_a_filter_reads_only_that_filters_index_entries(tmp_path: Path) -> None:
    """What ``search_agents`` adds to a full page (``count``) and what ``list_agents`` heads
    its groups with (``count_by_stratum``) read only the index entries of the filter's range,
    never the rows. Every create pays for ``ix_agents_tenant_stratum`` and
    ``ix_agents_tenant_tools_mask``, but without them these counts read the whole tenant: at
    100,000 agents a stratum's count went from about 2 ms to 57 ms, a tool's from 5-7 ms to
    45-71 ms, ``count_by_stratum`` from 37-57 ms to 364 ms (benchmarks/results/
    cost_of_a_call.md, section 1)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    repo = open_repository(url)
    try:
        for i in range(48):
            repo.create(
                make_config(f"agent_{i:02}", stratum=STRATA[i % 4], tools=TOOLS[i // 4 % 4])
            )
            for _ in range(i % 3):
                repo.record_execution(f"agent_{i:02}", make_record())
        created = sorted(a.metadata.created_at for a in repo.search(SearchQuery(limit=100)))
        since = created[30]
        every = repo.search(SearchQuery(limit=100))
        cases = [
            ({"stratum": "RAI"}, lambda a: a.stratum == "RAI", "ix_agents_tenant_stratum",
             "(tenant=? AND stratum=?)"),
            ({"tools": ["crm"]}, lambda a: "crm" in a.tools, "ix_agents_tenant_tools_mask",
             "(tenant=? AND tools_mask=?)"),
            ({"created_after": since}, lambda a: a.metadata.created_at >= since,
             "ix_agents_sort_created_at", "(tenant=? AND created_at>?)"),
            ({"min_executions": 2}, lambda a: a.metadata.execution_count >= 2,
             "ix_agents_sort_execution_count", "(tenant=? AND execution_count>?)"),
        ]  # fmt: skip
        for fields, matches, index, bounds in cases:
            query = SearchQuery.model_validate(fields)
            assert repo.count(query) == sum(1 for a in every if matches(a)) > 0
            plan = _count_plan(repo, query)
            assert plan == [f"SEARCH agents USING COVERING INDEX {index} {bounds}"], plan
        counted = {s: n for s, n in repo.count_by_stratum().items() if n}
        assert counted == {"RAI": 12, "EEI": 12, "ZACS": 12, None: 12}
        with repo.engine.connect() as conn:
            sql = COUNT_BY_STRATUM.compiled(repo.engine.dialect)
            params = sql.params({"tenant": repo.tenant})
            explained = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql.sql, tuple(params))
            plan = [row[3] for row in explained]
        assert plan == ["SEARCH agents USING COVERING INDEX ix_agents_tenant_stratum (tenant=?)"]
    finally:
        repo.close()
