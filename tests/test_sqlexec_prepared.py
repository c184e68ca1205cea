"""``sqlexec``: statements compiled once per kind of dialect, and the connections a SQLite file
store keeps."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import bindparam, create_engine, select

from acti_store.connections import KEPT_IDLE_MAX, KeptConnections, connections_for
from acti_store.engine import make_engine
from acti_store.schema import agents
from acti_store.sqlexec import Prepared


def test_one_statement_compiles_for_each_paramstyle_of_a_driver() -> None:
    qmark = create_engine("sqlite://").dialect
    named = create_engine("sqlite://", paramstyle="named").dialect
    statement = Prepared(select(agents.c.id).where(agents.c.name == bindparam("name")))

    first, second = statement.compiled(qmark), statement.compiled(named)

    # Confined to the store's tenant (``tenancy.scoped``), the parameter the cursor binds.
    assert first.sql.endswith("WHERE agents.name = ? AND agents.tenant = ?")
    assert second.sql.endswith("WHERE agents.name = :name AND agents.tenant = :tenant")
    assert first.params({"name": "x", "tenant": "acme"}) == ["x", "acme"]
    assert second.params({"name": "x", "tenant": "acme"}) == {"name": "x", "tenant": "acme"}
    # Compiled once per kind of dialect: another engine of the same kind shares it.
    assert statement.compiled(create_engine("sqlite://", paramstyle="named").dialect) is second


def test_a_file_store_keeps_a_bounded_number_of_idle_connections(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")
    kept = connections_for(engine)
    assert isinstance(kept, KeptConnections)
    taken = [kept.take() for _ in range(KEPT_IDLE_MAX + 3)]  # operations running at once
    assert kept.idle_count == 0
    for connection in taken:
        kept.give(connection)
    assert kept.idle_count == KEPT_IDLE_MAX  # the others were closed
    again = kept.take()
    assert again is taken[KEPT_IDLE_MAX - 1]  # last in, first out: the warmest one
    kept.give(again)
    kept.close()
    assert kept.idle_count == 0
