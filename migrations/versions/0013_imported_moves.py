"""The label log says which entries were imported: ``agent_label_moves.imported``.

An import with ``{name}_versions.json`` brings the label log another store wrote; its entries
are history, not moves this store's gates checked, and the log now says so (``LabelMove.imported``,
``interchange.versions_file``). Entries logged before this revision are this store's own moves
or entries of older imports that nothing marked: they stay unmarked.

Downgrade: the column is dropped. On MariaDB a downgrade below 0009 is refused here already
while other tenants hold rows, as 0012, 0011 and 0010 refuse it, before any step commits.

Revision ID: 0013_imported_moves
Revises: 0012_sqlite_sort_filters
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.migrations.guards import refuse_leaving_tenants

revision: str = "0013_imported_moves"
down_revision: str | None = "0012_sqlite_sort_filters"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN on every engine (SQLite takes it without a table rebuild).
    op.add_column(
        "agent_label_moves",
        sa.Column("imported", sa.Boolean(), server_default=sa.false(), nullable=False),
    )


def downgrade() -> None:
    # Refused while other tenants hold rows (0009 refuses it), before this step moves the
    # store's revision: MariaDB commits each step as it goes.
    refuse_leaving_tenants(
        (
            "0012_sqlite_sort_filters",
            "0011_label_routing",
            "0010_changes",
            "0009_tenants",
            *("-1", "-2", "-3", "-4"),
        )
    )
    with op.batch_alter_table("agent_label_moves") as batch:
        batch.drop_column("imported")
