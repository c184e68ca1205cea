"""Tenants have a lifecycle: a store-wide tenant mode and a limit on each tenant's agents.

``agent_store_settings`` holds the store's settings by name; this revision writes ``tenants``:
``strict`` (a store refuses to write for a tenant nobody registered: ``acti-store tenants
create``) on a store that holds no tenant's data yet, ``open`` (writing for a new tenant
registers it, as before this revision) on one that does, so an existing store keeps its
behaviour. A store holds data when a tenant is registered (``agent_tenants``: a store opened for
it to write) or the default tenant has an agent. PostgreSQL: the agents are read as the default
tenant (``acti.tenant``, for this transaction only), since row-level security hides them from a
session without it. SQL printed without a database (``--sql``): ``strict`` from an empty store,
``open`` from a revision.

``agent_tenants.max_agents`` (NULL: no limit) is the most agents a tenant may hold.

Downgrade: the column and the table are dropped. On MariaDB a downgrade below 0009 is refused
here already while other tenants hold rows, as 0013 refuses it, before any step commits.

Revision ID: 0014_tenant_lifecycle
Revises: 0013_imported_moves
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import TABLE_OPTIONS
from acti_store.migrations.guards import DEFAULT_TENANT, refuse_leaving_tenants

revision: str = "0014_tenant_lifecycle"
down_revision: str | None = "0013_imported_moves"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The setting's name, and its value on a new store and on one that holds data.
SETTING = "tenants"
STRICT, OPEN = "strict", "open"


def upgrade() -> None:
    op.add_column("agent_tenants", sa.Column("max_agents", sa.Integer(), nullable=True))
    settings = op.create_table(
        "agent_store_settings",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_agent_store_settings")),
        **TABLE_OPTIONS,
    )
    op.bulk_insert(settings, [{"name": SETTING, "value": OPEN if _holds_data() else STRICT}])


def _holds_data() -> bool:
    """Whether the store holds a tenant's data already (then it keeps the open mode)."""
    context = op.get_context()
    if context.as_sql:
        environment = context.environment_context
        start = environment.get_starting_revision_argument() if environment else None
        return start not in (None, "base")
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT 1 FROM agent_tenants")).first() is not None:
        return True
    if context.dialect.name != "postgresql":
        return bind.execute(sa.text("SELECT 1 FROM agents LIMIT 1")).first() is not None
    previous = bind.execute(sa.text("SELECT current_setting('acti.tenant', true)")).scalar()
    bind.execute(sa.text("SELECT set_config('acti.tenant', :t, true)"), {"t": DEFAULT_TENANT})
    found = bind.execute(sa.text("SELECT 1 FROM agents LIMIT 1")).first() is not None
    bind.execute(sa.text("SELECT set_config('acti.tenant', :t, true)"), {"t": previous or ""})
    return found


def downgrade() -> None:
    refuse_leaving_tenants(
        (
            "0013_imported_moves",
            "0012_sqlite_sort_filters",
            "0011_label_routing",
            "0010_changes",
            "0009_tenants",
            *("-1", "-2", "-3", "-4", "-5"),
        )
    )
    op.drop_table("agent_store_settings")
    with op.batch_alter_table("agent_tenants") as batch:
        batch.drop_column("max_agents")
