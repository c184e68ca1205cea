"""v1 schema: the v1 agent document as a table.

One row per ``outputs/agents/{name}.json`` of contract 1.x: the config fields plus the v1
``_metadata`` block (``created_at``, a semver string ``version`` such as "1.0.0", ``builder``).

Revision ID: 0001_v1
Revises:
Create Date: 2025-01-09
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import LONG_TEXT, TABLE_OPTIONS, TIMESTAMP

revision: str = "0001_v1"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", LONG_TEXT, nullable=False),
        sa.Column("system_prompt", LONG_TEXT, nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("stratum", sa.String(length=8), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("version", sa.String(length=20), nullable=False),
        sa.Column("builder", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("name", name=op.f("uq_agents_name")),
        **TABLE_OPTIONS,  # MariaDB: InnoDB, utf8mb4_bin (names sort and compare by code point)
    )
    op.create_index(op.f("ix_agents_stratum"), "agents", ["stratum"], unique=False)
    op.create_index(op.f("ix_agents_created_at"), "agents", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_agents_created_at"), table_name="agents")
    op.drop_index(op.f("ix_agents_stratum"), table_name="agents")
    op.drop_table("agents")
