"""Configuration versions: snapshots, labels, the label log and per-version run counters.

Adds ``agent_versions`` (an immutable snapshot of the seven configuration fields per version,
keyed by ``(agent_id, version)``; ``WITHOUT ROWID`` on SQLite, so a snapshot writes one B-tree),
``agent_versions_archive`` (the snapshots of agents deleted with their history kept),
``agent_labels`` (where each label points), ``agent_label_moves``
(every set, move and removal of a label), ``agent_version_stats`` (lifetime runs, successes,
errors, summed duration and last run per version) and ``executions.agent_version`` (the version
that ran; NULL for the runs recorded before).

Backfill: one snapshot per existing agent at its current version, ``created_at`` its
``updated_at`` (when that version was written) and message ``imported at upgrade``: one
``INSERT ... SELECT``, so it runs in the database at the speed of a table copy (10,000 agents:
well under a second; see docs/architecture.md, "Migrations"). Older versions are unknown:
``versions()`` starts there.

Downgrade drops the five tables (every snapshot, label and label move is lost) and the
``agent_version`` column (a rebuild of ``executions`` on SQLite, batch mode; ``agents`` itself is
not touched).

Revision ID: 0006_versions
Revises: 0005_counters_64bit
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import DOUBLE_FLOAT, LONG_TEXT, TABLE_OPTIONS, TIMESTAMP

revision: str = "0006_versions"
down_revision: str | None = "0005_counters_64bit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: 64-bit on PostgreSQL, SQLite's INTEGER (already 64-bit) there: ``schema.Counter`` at 0006.
_COUNTER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = TIMESTAMP
UPGRADE_MESSAGE = "imported at upgrade"


def _agent_fk(table: str, ondelete: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["agent_id"], ["agents.id"], name=op.f(f"fk_{table}_agent_id_agents"), ondelete=ondelete
    )


def _config_columns() -> list[sa.Column[object]]:
    """A snapshot's columns after its key: the configuration, when it was made, its message."""
    return [
        sa.Column("description", LONG_TEXT, nullable=False),
        sa.Column("system_prompt", LONG_TEXT, nullable=False),
        sa.Column("tools", sa.JSON(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("stratum", sa.String(length=8), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("message", LONG_TEXT, nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "agent_versions",
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("version", _COUNTER, autoincrement=False, nullable=False),
        *_config_columns(),
        _agent_fk("agent_versions", "CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "version", name=op.f("pk_agent_versions")),
        sqlite_with_rowid=False,
        **TABLE_OPTIONS,
    )
    op.create_table(
        "agent_versions_archive",
        sa.Column("id", _COUNTER, autoincrement=True, nullable=False),
        sa.Column("agent_name", sa.String(length=64), nullable=False),
        sa.Column("version", _COUNTER, nullable=False),
        *_config_columns(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_versions_archive")),
        **TABLE_OPTIONS,
    )
    op.create_index(
        "ix_agent_versions_archive_agent_name_id",
        "agent_versions_archive",
        ["agent_name", "id"],
        unique=False,
    )
    op.create_table(
        "agent_labels",
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=32), nullable=False),
        sa.Column("version", _COUNTER, nullable=False),
        _agent_fk("agent_labels", "CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "label", name=op.f("pk_agent_labels")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "agent_label_moves",
        sa.Column("id", _COUNTER, autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("agent_name", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=32), nullable=False),
        sa.Column("from_version", _COUNTER, nullable=True),
        sa.Column("to_version", _COUNTER, nullable=True),
        sa.Column("moved_at", _TIME, nullable=False),
        sa.Column("note", LONG_TEXT, nullable=True),
        _agent_fk("agent_label_moves", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_label_moves")),
        **TABLE_OPTIONS,
    )
    op.create_index(
        "ix_agent_label_moves_agent_id_id", "agent_label_moves", ["agent_id", "id"], unique=False
    )
    op.create_index(
        "ix_agent_label_moves_agent_name_id",
        "agent_label_moves",
        ["agent_name", "id"],
        unique=False,
    )
    op.create_table(
        "agent_version_stats",
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("version", _COUNTER, autoincrement=False, nullable=False),
        sa.Column("runs", _COUNTER, nullable=False),
        sa.Column("successes", _COUNTER, nullable=False),
        sa.Column("errors", _COUNTER, nullable=False),
        sa.Column("duration_total", DOUBLE_FLOAT, nullable=False),
        sa.Column("last_executed_at", _TIME, nullable=True),
        _agent_fk("agent_version_stats", "CASCADE"),
        sa.PrimaryKeyConstraint("agent_id", "version", name=op.f("pk_agent_version_stats")),
        **TABLE_OPTIONS,
    )
    # A nullable column is added in place on both engines (no rebuild of the history).
    op.add_column("executions", sa.Column("agent_version", _COUNTER, nullable=True))

    # The backfill: one snapshot per agent at its current version, in one statement.
    op.execute(
        "INSERT INTO agent_versions (agent_id, version, description, system_prompt, tools, "
        "model, stratum, tags, created_at, message) "
        "SELECT id, version, description, system_prompt, tools, model, stratum, tags, "
        f"updated_at, '{UPGRADE_MESSAGE}' FROM agents"
    )


def downgrade() -> None:
    with op.batch_alter_table("executions") as batch:
        batch.drop_column("agent_version")
    op.drop_table("agent_version_stats")
    # MariaDB refuses to drop an index a foreign key needs (error 1553); dropping the table
    # drops its indexes with it there.
    if op.get_context().dialect.name not in ("mysql", "mariadb"):
        op.drop_index("ix_agent_label_moves_agent_name_id", table_name="agent_label_moves")
        op.drop_index("ix_agent_label_moves_agent_id_id", table_name="agent_label_moves")
    op.drop_table("agent_label_moves")
    op.drop_table("agent_labels")
    op.drop_index("ix_agent_versions_archive_agent_name_id", table_name="agent_versions_archive")
    op.drop_table("agent_versions_archive")
    op.drop_table("agent_versions")
