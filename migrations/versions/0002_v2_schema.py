"""v2 schema: enhanced metadata, tags, execution history.

Upgrade (contract "Migration Notes", ``_migrate_v1_metadata``): every string ``version`` becomes
the integer 1, ``updated_at`` = ``created_at``, ``last_executed_at`` NULL, counters 0, tags empty;
adds the ``agent_tags`` and ``executions`` tables. Existing rows keep all their data.

Downgrade is lossy where v1 has no column: it drops tags, the execution history, the counters,
``updated_at`` and ``last_executed_at``; the integer version N becomes the string "N.0.0".

Revision ID: 0002_v2
Revises: 0001_v1
Create Date: 2025-01-10
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from acti_store.column_types import DOUBLE_FLOAT, LONG_TEXT, TABLE_OPTIONS, TIMESTAMP
from acti_store.migrations.offline import offline_data_step

revision: str = "0002_v2"
down_revision: str | None = "0001_v1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copy of the category bits at this revision (schema.TOOL_BITS may grow later).
_TOOL_BITS = {"voice": 1, "websearch": 2, "calendar": 4, "communication": 8, "crm": 16}
_NEW_COLUMNS = (
    ("tools_mask", sa.Integer()),
    ("tags", sa.JSON()),
    ("updated_at", TIMESTAMP),
    ("last_executed_at", TIMESTAMP),
    ("version_number", sa.Integer()),
    ("execution_count", sa.Integer()),
    ("success_count", sa.Integer()),
    ("error_count", sa.Integer()),
    ("total_executions", sa.Integer()),
)


def _mask(tools: object) -> int:
    if isinstance(tools, str):
        tools = json.loads(tools)
    if not isinstance(tools, list):
        return 0
    mask = 0
    for tool in tools:
        mask |= _TOOL_BITS.get(str(tool), 0)
    return mask


def _agents_before_rebuild() -> sa.Table:
    """The agents table as the rebuild in ``upgrade`` finds it: 0001's, plus the new columns.

    What batch mode reflects on SQLite; given to it when the upgrade is printed as SQL (no
    database to reflect: ``migrate --sql`` on an empty one).
    """
    return sa.Table(
        "agents",
        sa.MetaData(),
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
        *(sa.Column(name, type_, nullable=True) for name, type_ in _NEW_COLUMNS),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
        sa.UniqueConstraint("name", name="uq_agents_name"),
        sa.Index("ix_agents_stratum", "stratum"),
        sa.Index("ix_agents_created_at", "created_at"),
    )


def upgrade() -> None:
    offline = context.is_offline_mode()
    if offline:  # printed as SQL (--sql): only where there are no rows to compute masks of
        offline_data_step(revision, "computes each agent's tool mask")
    with op.batch_alter_table("agents") as batch:
        for name, type_ in _NEW_COLUMNS:
            batch.add_column(sa.Column(name, type_, nullable=True))

    agents = sa.table(
        "agents",
        sa.column("id", sa.Integer()),
        sa.column("tools", sa.JSON()),
        sa.column("tools_mask", sa.Integer()),
    )
    bind = op.get_bind()
    op.execute(
        "UPDATE agents SET updated_at = created_at, last_executed_at = NULL, version_number = 1, "
        "execution_count = 0, success_count = 0, error_count = 0, total_executions = 0, "
        "tags = '[]'"
    )
    rows = [] if offline else bind.execute(sa.select(agents.c.id, agents.c.tools)).all()
    masks = [{"agent_id": row.id, "mask": _mask(row.tools)} for row in rows]
    if masks:
        bind.execute(
            agents.update()
            .where(agents.c.id == sa.bindparam("agent_id"))
            .values(tools_mask=sa.bindparam("mask")),
            masks,
        )

    rebuilt = _agents_before_rebuild() if offline else None
    with op.batch_alter_table("agents", copy_from=rebuilt) as batch:
        batch.drop_column("version")
        batch.alter_column(
            "version_number", new_column_name="version", nullable=False, existing_type=sa.Integer()
        )
        for name, type_ in _NEW_COLUMNS:
            if name not in ("version_number", "last_executed_at"):
                batch.alter_column(name, nullable=False, existing_type=type_)
        batch.create_index(batch.f("ix_agents_tools_mask"), ["tools_mask"], unique=False)
        batch.create_index(batch.f("ix_agents_updated_at"), ["updated_at"], unique=False)
        batch.create_index(batch.f("ix_agents_execution_count"), ["execution_count"], unique=False)

    op.create_table(
        "agent_tags",
        sa.Column("tag", sa.String(length=32), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_agent_tags_agent_id_agents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tag", "agent_id", name=op.f("pk_agent_tags")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_agent_tags_agent_id"), "agent_tags", ["agent_id"], unique=False)
    op.create_table(
        "executions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("agent_name", sa.String(length=64), nullable=False),
        sa.Column("execution_id", sa.String(length=64), nullable=False),
        sa.Column("timestamp", TIMESTAMP, nullable=False),
        sa.Column("task", LONG_TEXT, nullable=False),
        sa.Column("result_summary", LONG_TEXT, nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("duration_seconds", DOUBLE_FLOAT, nullable=False),
        sa.Column("tool_calls_count", sa.Integer(), nullable=False),
        sa.Column("error_type", sa.String(length=100), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
            name=op.f("fk_executions_agent_id_agents"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_executions")),
        **TABLE_OPTIONS,
    )
    op.create_index("ix_executions_agent_id_id", "executions", ["agent_id", "id"], unique=False)
    op.create_index("ix_executions_agent_name_id", "executions", ["agent_name", "id"], unique=False)


def downgrade() -> None:
    mariadb = op.get_context().dialect.name in ("mysql", "mariadb")
    # MariaDB refuses to drop an index a foreign key needs (error 1553); dropping the table
    # drops its indexes with it there.
    if not mariadb:
        op.drop_index("ix_executions_agent_name_id", table_name="executions")
        op.drop_index("ix_executions_agent_id_id", table_name="executions")
    op.drop_table("executions")
    if not mariadb:
        op.drop_index(op.f("ix_agent_tags_agent_id"), table_name="agent_tags")
    op.drop_table("agent_tags")

    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("version_text", sa.String(length=20), nullable=True))
    if mariadb:  # || is OR there: '1.0.0' would be '1'
        op.execute("UPDATE agents SET version_text = CONCAT(version, '.0.0')")
    else:
        op.execute("UPDATE agents SET version_text = CAST(version AS VARCHAR(12)) || '.0.0'")
    with op.batch_alter_table("agents") as batch:
        batch.drop_index(batch.f("ix_agents_execution_count"))
        batch.drop_index(batch.f("ix_agents_updated_at"))
        batch.drop_index(batch.f("ix_agents_tools_mask"))
        for name, _type in _NEW_COLUMNS:
            if name != "version_number":
                batch.drop_column(name)
        batch.drop_column("version")
        batch.alter_column(
            "version_text",
            new_column_name="version",
            nullable=False,
            existing_type=sa.String(length=20),
        )
