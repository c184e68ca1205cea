"""The change feed: ``agent_changes``, each tenant's change counter, and consumers' checkpoints.

``agent_changes`` holds one row per change of a configuration (``acti_store.changes``), keyed
by ``(tenant, seq)`` (``WITHOUT ROWID`` on SQLite: one B-tree written per change). ``seq`` is
taken from the tenant's row of ``agent_change_counters``, moved by each write just before it
commits, so numbers follow commit order (``repository.feed``). ``agent_change_checkpoints``
keeps named consumers' positions (``acti-store relay``). Changes made before this revision are
not in the feed: it starts empty. All three are tenant tables: on PostgreSQL row-level security
binds them as it does the others (revision 0009).

Downgrade: the three tables are dropped (with the feed and the positions they hold). On
MariaDB a downgrade below 0009 is refused here already while other tenants hold rows (its DDL
cannot be rolled back, and 0009 refuses it).

Revision ID: 0010_changes
Revises: 0009_tenants
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import TABLE_OPTIONS, TIMESTAMP
from acti_store.migrations.guards import SETTING, isolate_tenants, refuse_leaving_tenants

revision: str = "0010_changes"
down_revision: str | None = "0009_tenants"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: 64-bit on PostgreSQL and MariaDB, SQLite's INTEGER (already 64-bit) there: ``schema.Counter``.
_COUNTER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TABLES = ("agent_changes", "agent_change_counters", "agent_change_checkpoints")


def _tenant() -> sa.Column[str]:
    return sa.Column("tenant", sa.String(length=64), server_default="default", nullable=False)


def upgrade() -> None:
    op.create_table(
        "agent_changes",
        _tenant(),
        sa.Column("seq", _COUNTER, nullable=False, autoincrement=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("version", _COUNTER, nullable=True),
        sa.Column("label", sa.String(length=32), nullable=True),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("tenant", "seq", name=op.f("pk_agent_changes")),
        sqlite_with_rowid=False,
        **TABLE_OPTIONS,
    )
    op.create_table(
        "agent_change_counters",
        _tenant(),
        sa.Column("last_seq", _COUNTER, nullable=False),
        sa.Column("pruned_through", _COUNTER, server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("tenant", name=op.f("pk_agent_change_counters")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "agent_change_checkpoints",
        _tenant(),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("seq", _COUNTER, nullable=False),
        sa.Column("saved_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("tenant", "name", name=op.f("pk_agent_change_checkpoints")),
        **TABLE_OPTIONS,
    )
    if op.get_context().dialect.name == "postgresql":
        isolate_tenants(TABLES, SETTING)


def downgrade() -> None:
    # Refused while other tenants hold rows (0009 refuses it), before this revision drops
    # anything: MariaDB's DDL cannot be rolled back.
    refuse_leaving_tenants(("0009_tenants", "-1"))
    for table in reversed(TABLES):
        op.drop_table(table)
