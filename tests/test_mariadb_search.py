"""MariaDB's substring index (revision 0008, ``MariadbTrigramIndex`` of
``engines.mariadb.statements``): search finds what ``LIKE`` on the lower-cased text finds,
through every kind of write, without reading every agent."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from conftest import make_config

from acti_store import SearchQuery
from acti_store.engines.mariadb.statements import _PROBES, TRIGRAM_PROBE_CAP, covering_trigrams
from acti_store.repository import ImportItem, search
from acti_store.repository.sql import SqlAgentRepository
from acti_store.repository.strategy import strategy_for
from acti_store.sqlexec import Cursor, Prepared

pytestmark = pytest.mark.mysql


@pytest.fixture
def repo(mysql_repo: SqlAgentRepository) -> SqlAgentRepository:
    return mysql_repo


def found(repo: SqlAgentRepository, query: str, **filters: object) -> list[str]:
    return [a.name for a in repo.search(SearchQuery(query=query, **filters))]  # type: ignore[arg-type]


def trigrams(url: str, name: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT t.trigram FROM agent_trigrams t JOIN agents a ON a.id = t.agent_id "
                    "WHERE a.name = :name"
                ),
                {"name": name},
            )
            return {row[0] for row in rows}
    finally:
        engine.dispose()


def test_substrings_inside_words_across_name_and_description(repo: SqlAgentRepository) -> None:
    repo.create(make_config("lead_qualifier"))
    repo.create(make_config("invoice_bot", description="Chases unpaid invoices every Monday"))
    assert found(repo, "ualif") == ["lead_qualifier"]
    assert found(repo, "QUALIFIER inbound") == ["lead_qualifier"]  # name and description
    assert found(repo, "npai voic") == ["invoice_bot"]
    assert found(repo, "unpaid inbound") == []
    # Every trigram of a word, not the word: "ondaym" holds "nda", "day" and "aym" in no order.
    assert found(repo, "ondaym") == []
    assert found(repo, "ndaymo") == []


def test_words_shorter_than_a_trigram_are_tested_by_like(repo: SqlAgentRepository) -> None:
    repo.create(make_config("lead_qualifier"))
    repo.create(make_config("invoice_bot", description="Chases unpaid invoices every Monday"))
    assert found(repo, "q") == ["lead_qualifier"]
    assert found(repo, "mo") == ["invoice_bot"]
    assert found(repo, "np voices") == ["invoice_bot"]
    assert found(repo, "_b") == ["invoice_bot"]  # a literal underscore


def test_non_ascii_words(repo: SqlAgentRepository) -> None:
    repo.create(make_config("cafe_host", description="Réserve une table au Café de Flore"))
    assert found(repo, "CAFÉ") == ["cafe_host"]
    assert found(repo, "réserv") == ["cafe_host"]
    assert found(repo, "flore réserve") == ["cafe_host"]


def test_update_delete_clone_and_import_keep_the_index(
    repo: SqlAgentRepository, mysql_database: str
) -> None:
    repo.create(make_config("lead_qualifier"))
    repo.update("lead_qualifier", {"description": "Books meetings with warm prospects"})
    assert found(repo, "bant") == []
    assert found(repo, "prospect") == ["lead_qualifier"]
    repo.clone("lead_qualifier", "lead_copy", description="Sends quarterly newsletters out")
    assert found(repo, "newsletter") == ["lead_copy"]
    assert found(repo, "prospect") == ["lead_qualifier"]
    repo.delete("lead_qualifier")
    assert found(repo, "prospect") == []
    assert trigrams(mysql_database, "lead_qualifier") == set()
    items = [
        ImportItem(
            f"imported_{i}",
            agent=repo.get("lead_copy").model_copy(
                update={
                    "name": f"imported_{i}",
                    "description": f"Imported agent number {i} for zebras",
                }
            ),
        )
        for i in range(3)
    ]
    repo.bulk_put(items)
    assert found(repo, "zebra") == ["imported_0", "imported_1", "imported_2"]
    assert found(repo, "number 2 zebras") == ["imported_2"]
    # No trigram across the name and the description, none holding a space.
    assert "r 2" not in trigrams(mysql_database, "imported_2")
    assert "2im" not in trigrams(mysql_database, "imported_2")


def test_filters_and_common_words_over_the_probe_cap(repo: SqlAgentRepository) -> None:
    repo.create(make_config("lead_qualifier", stratum="RAI"))
    repo.create(make_config("lead_scorer", stratum="EEI", description="Scores inbound leads"))
    assert found(repo, "leads", stratum="RAI") == ["lead_qualifier"]
    assert found(repo, "inbound leads", sort_by="created_at") == ["lead_scorer", "lead_qualifier"]
    assert repo.count(SearchQuery(query="inbound")) == 2
    assert len(covering_trigrams(["abcdefgh", "xyz"])) == 4
    assert TRIGRAM_PROBE_CAP < 1000  # an id list stays under MariaDB's IN-to-subquery threshold


def explained(url: str, prepared: Prepared, values: dict[str, Any]) -> list[dict[str, Any]]:
    """EXPLAIN's rows for ``prepared`` as the repository runs it, with ``values``."""
    engine = sa.create_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("ANALYZE TABLE agents, agent_trigrams")
            cursor.fetchall()
            compiled = prepared.compiled(engine.dialect)
            cursor.execute(
                "EXPLAIN " + compiled.sql, compiled.params({"tenant": "default", **values})
            )
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            raw.close()
    finally:
        engine.dispose()


def test_a_text_search_reads_no_agent_it_does_not_need(
    repo: SqlAgentRepository, mysql_database: str
) -> None:
    for i in range(40):
        repo.create(make_config(f"agent_{i:02}", description=f"Handles case number {i} well"))
    repo.create(make_config("zebra_keeper", description="Feeds the zebras at dawn"))
    engine = strategy_for("mysql")
    grams = covering_trigrams(["zebras"])
    probe = explained(
        mysql_database,
        _PROBES[len(grams)],
        {f"gram_{i}": gram for i, gram in enumerate(grams)},
    )
    assert {row["table"] for row in probe} >= {"t0", "t1"}
    assert all(row["type"] != "ALL" for row in probe if row["table"]), probe
    query = SearchQuery(query="zebras", sort_by="updated_at")
    with repo.engine.connect() as conn:
        cursor = Cursor(conn.connection.cursor(), repo.engine.dialect)
        cursor.tenant = repo.tenant
        shape, values = search._bound(cursor, query, engine)
    assert shape.ids == 1
    statement = Prepared(search._ordered(shape, query.sort_by, engine).limit(query.limit))
    plan = explained(mysql_database, statement, values)
    assert [row["type"] for row in plan if row["table"] == "agents"] != ["ALL"], plan
    assert found(repo, "zebras", sort_by="updated_at") == ["zebra_keeper"]
