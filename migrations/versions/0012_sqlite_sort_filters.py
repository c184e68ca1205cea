"""SQLite search: the sort indexes carry the stratum, the tools and the creation time, so a
search tests those filters on the index entry.

A search on SQLite walks its sort's index and reads each filter from the row
(``acti_store.repository.search``), stopping at ``limit`` matches. Where the filters together
match few agents, the walk fetched most of the table's rows only to refuse them: every filter
at once took 30 ms median at 100,000 agents (94 ms p90), a creation range sorted by update
31 ms p90. ``ix_agents_sort_<column>`` on ``(tenant, column, stratum, tools_mask, created_at)``
(``created_at``'s own: no second ``created_at``) replaces ``ix_agents_tenant_<column>`` for the
three sorts but the name's: the same walk, and SQLite tests those filters on the index entry
before it fetches the row. ``ix_agents_sort_name`` does the same for the name's sort (the
name's unique index stays: it keeps names unique). The run counter is not carried: every run
would move its entries in the other indexes. None of the carried columns changes but by an
update of the stratum or the tools.

Other engines are not touched (on MariaDB a downgrade below 0009 is refused here already while
other tenants hold rows, as 0011 and 0010 refuse it, before any step commits). The indexes are
made with raw SQL, outside the ORM metadata: ``alembic check`` leaves them out by their prefix,
and on SQLite leaves out the ORM's three indexes they replace (``acti_store.migrations.names``).
A later revision that rebuilds ``agents`` on SQLite (batch mode) must make them again.
Downgrade: the ORM's indexes are back, and the four are dropped.

Revision ID: 0012_sqlite_sort_filters
Revises: 0011_label_routing
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from acti_store.migrations.guards import refuse_leaving_tenants

revision: str = "0012_sqlite_sort_filters"
down_revision: str | None = "0011_label_routing"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The sorts, each with its index; the first three replace the ORM's ``ix_agents_tenant_<column>``.
_REPLACED = ("created_at", "updated_at", "execution_count")
_SORTED = (*_REPLACED, "name")


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    for column in _REPLACED:
        op.execute(f"DROP INDEX IF EXISTS ix_agents_tenant_{column}")
    for column in _SORTED:
        carried = "stratum, tools_mask" + ("" if column == "created_at" else ", created_at")
        op.execute(f"CREATE INDEX ix_agents_sort_{column} ON agents (tenant, {column}, {carried})")


def downgrade() -> None:
    # Refused while other tenants hold rows (0009 refuses it), before this step moves the
    # store's revision: MariaDB commits each step as it goes.
    refuse_leaving_tenants(("0011_label_routing", "0010_changes", "0009_tenants", "-1", "-2", "-3"))
    if op.get_context().dialect.name != "sqlite":
        return
    for column in _SORTED:
        op.execute(f"DROP INDEX IF EXISTS ix_agents_sort_{column}")
    for column in _REPLACED:
        op.execute(f"CREATE INDEX ix_agents_tenant_{column} ON agents (tenant, {column})")
