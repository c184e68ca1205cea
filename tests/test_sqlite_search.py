"""SQLite's search walks its sort's index, and that index carries the stratum, the tools and
the creation time (revision 0012): SQLite tests them on the index entry and fetches only the
rows that pass. The answer stays every filter's, in the sort's order."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from conftest import make_config, make_record

from acti_store import SearchQuery, open_repository
from acti_store.repository import search
from acti_store.repository.engines import strategy_for
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
