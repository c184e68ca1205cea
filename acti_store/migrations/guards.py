"""What several revisions of ``migrations/versions`` do alike: a check a revision runs before it
changes anything, and PostgreSQL's row-level security on tenant tables. Each revision names the
tables as it knew them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa
from alembic import op

from ..column_types import MYSQL_DIALECTS
from ..errors import SchemaVersionError
from ..revisions import end_migration

#: The tables that gained a tenant in revision 0009, as it knew them.
TENANT_TABLES_0009: Final = (
    "agents",
    "agent_tags",
    "executions",
    "agent_versions",
    "agent_versions_archive",
    "agent_labels",
    "agent_label_moves",
    "agent_version_stats",
)
DEFAULT_TENANT: Final = "default"
#: Row-level security's policy on each tenant table, and the session setting it compares.
POLICY: Final = "tenant_isolation"
SETTING: Final = "current_setting('acti.tenant', true)"


def isolate_tenants(tables: Sequence[str]) -> None:
    """PostgreSQL: row-level security on ``tables``, forced (it binds their owner too): a
    session sees and writes only the rows of its ``acti.tenant``."""
    for table in tables:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY {POLICY} ON {table} "
            f"USING (tenant = {SETTING}) WITH CHECK (tenant = {SETTING})"
        )


def refuse_leaving_tenants(kept: Sequence[str]) -> None:
    """A downgrade step above 0009_tenants, on MariaDB: ``refuse_other_tenants`` unless the
    command's destination is one of ``kept`` (revisions, or targets relative to the head, that
    keep tenants). MariaDB commits each step's DDL as it goes, so each step checks before it
    changes anything or moves the store's revision. Not when printing SQL (no rows to read)."""
    context = op.get_context()
    environment = context.environment_context  # None: no destination known, so checked
    target = environment.get_revision_argument() if environment is not None else None
    if context.dialect.name in MYSQL_DIALECTS and target not in kept and not context.as_sql:
        refuse_other_tenants()


def refuse_other_tenants(tables: Sequence[str] = TENANT_TABLES_0009) -> None:
    """Refuse a downgrade below 0009_tenants while ``tables`` hold rows of a tenant other than
    the default one: once names are unique across the store again, theirs would collide."""
    bind = op.get_bind()
    for table in tables:
        found = bind.execute(
            sa.text(f"SELECT DISTINCT tenant FROM {table} WHERE tenant <> :default"),
            {"default": DEFAULT_TENANT},
        ).all()
        if found:
            names = ", ".join(sorted(row[0] for row in found))
            end_migration(bind, refused=True)  # MariaDB: nothing changed, no repair to ask for
            raise SchemaVersionError(
                f"cannot downgrade below 0009_tenants: {table} holds rows of tenants other "
                f"than '{DEFAULT_TENANT}' ({names}); their agent names would collide. Export "
                "those tenants (acti-store --tenant NAME export DIR) and delete their agents "
                "first."
            )
