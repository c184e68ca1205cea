"""Labels that route and protect: splits, gates, and what the label log says of each move.

``agent_label_shares`` holds the shares of a label that splits its traffic over versions
(``agent_labels.version`` keeps its main version, the largest share); ``agent_label_gates``
the protected labels' gates. The label log (``agent_label_moves``) gains the whole split on
either side of a move (``from_weights``, ``to_weights``, spelled ``3=90 4=10``), whether the move
was a rollback or forced past a gate, and the gate's checks. Both new tables are tenant tables:
on PostgreSQL row-level security binds them as it does the others (revision 0009).

Downgrade: splits and gates are dropped (each split label stays on its main version), and so
are the log's new columns. On MariaDB a downgrade below 0009 is refused here already while
other tenants hold rows (its DDL cannot be rolled back, and 0009 refuses it).

Revision ID: 0011_label_routing
Revises: 0010_changes
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import DOUBLE_FLOAT, TABLE_OPTIONS
from acti_store.migrations.guards import SETTING, isolate_tenants, refuse_leaving_tenants

revision: str = "0011_label_routing"
down_revision: str | None = "0010_changes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: 64-bit on PostgreSQL and MariaDB, SQLite's INTEGER (already 64-bit) there: ``schema.Counter``.
_COUNTER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TABLES = ("agent_label_shares", "agent_label_gates")
MOVE_COLUMNS = ("from_weights", "to_weights", "rollback", "forced", "checks")


def _tenant() -> sa.Column[str]:
    return sa.Column("tenant", sa.String(length=64), server_default="default", nullable=False)


def upgrade() -> None:
    op.create_table(
        "agent_label_shares",
        _tenant(),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=32), nullable=False),
        sa.Column("version", _COUNTER, nullable=False, autoincrement=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id", "label"],
            ["agent_labels.agent_id", "agent_labels.label"],
            name=op.f("fk_agent_label_shares_agent_id_agent_labels"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("agent_id", "label", "version", name=op.f("pk_agent_label_shares")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "agent_label_gates",
        _tenant(),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=32), nullable=False),
        sa.Column("min_runs", _COUNTER, nullable=False),
        sa.Column("min_success_rate", DOUBLE_FLOAT, nullable=False),
        sa.Column("max_mean_duration", DOUBLE_FLOAT, nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_agent_label_gates_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("agent_id", "label", name=op.f("pk_agent_label_gates")),
        **TABLE_OPTIONS,
    )
    # Plain ADD COLUMNs on every engine (SQLite takes them without a table rebuild, and so
    # ``acti-store migrate --sql`` can print them without a live database).
    op.add_column("agent_label_moves", sa.Column("from_weights", sa.String(250), nullable=True))
    op.add_column("agent_label_moves", sa.Column("to_weights", sa.String(250), nullable=True))
    for flag in ("rollback", "forced"):
        op.add_column(
            "agent_label_moves",
            sa.Column(flag, sa.Boolean(), server_default=sa.false(), nullable=False),
        )
    op.add_column("agent_label_moves", sa.Column("checks", sa.JSON(), nullable=True))
    if op.get_context().dialect.name == "postgresql":
        isolate_tenants(TABLES, SETTING)


def downgrade() -> None:
    # Refused while other tenants hold rows (0009 refuses it), before this revision drops
    # anything: MariaDB's DDL cannot be rolled back.
    refuse_leaving_tenants(("0010_changes", "0009_tenants", "-1"))
    with op.batch_alter_table("agent_label_moves") as batch:
        for column in reversed(MOVE_COLUMNS):
            batch.drop_column(column)
    for table in reversed(TABLES):
        op.drop_table(table)
