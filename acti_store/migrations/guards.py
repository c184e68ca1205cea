"""What several revisions of ``migrations/versions`` do alike: a check a revision runs before it
changes anything, and PostgreSQL's row-level security on tenant tables. Each revision names the
tables as it knew them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import sqlalchemy as sa
from alembic import op

from ..errors import SchemaVersionError
from ..migration_policy import migration_policy
from .progress import end_migration

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
#: The tables of a tenant's data as of revision 0011 (0010's change feed, 0011's routing).
TENANT_TABLES_0011: Final = (
    *TENANT_TABLES_0009,
    "agent_changes",
    "agent_change_counters",
    "agent_change_checkpoints",
    "agent_label_shares",
    "agent_label_gates",
)
#: Row-level security's policy on each tenant table, and the session setting it compares.
POLICY: Final = "tenant_isolation"
SETTING: Final = "current_setting('acti.tenant', true)"
#: From revision 0015: the tenant of the session's login where ``agent_tenant_logins`` binds it
#: (``session_user``: the login, which ``SET ROLE`` and security-definer functions leave as it
#: is), else its setting. A scalar subquery: PostgreSQL evaluates it once per statement (an
#: InitPlan), not once per row, and the table in it is the one the policy named when made.
BOUND_SETTING: Final = (
    "(SELECT coalesce((SELECT bound.tenant FROM agent_tenant_logins bound "
    f"WHERE bound.role = session_user), {SETTING}))"
)


def isolate_tenants(tables: Sequence[str], setting: str) -> None:
    """PostgreSQL: row-level security on ``tables``, forced (it binds their owner too): a
    session sees and writes only the rows of its tenant, ``setting`` (``SETTING`` up to
    revision 0014, ``BOUND_SETTING`` from 0015: a revision names the one of its time)."""
    for table in tables:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        tenant_policy(table, setting)


def tenant_policy(table: str, setting: str, column: str = "tenant") -> None:
    """PostgreSQL: ``table``'s policy ``POLICY``: its rows seen and written where ``column``
    is the tenant ``setting``."""
    op.execute(
        f"CREATE POLICY {POLICY} ON {table} "
        f"USING ({column} = {setting}) WITH CHECK ({column} = {setting})"
    )


def refuse_leaving_tenants(kept: Sequence[str]) -> None:
    """A downgrade step above 0009_tenants, on MariaDB: ``refuse_other_tenants`` unless the
    command's destination is one of ``kept`` (revisions, or targets relative to the head, that
    keep tenants). MariaDB commits each step's DDL as it goes, so each step checks before it
    changes anything or moves the store's revision. Not when printing SQL (no rows to read)."""
    context = op.get_context()
    environment = context.environment_context  # None: no destination known, so checked
    target = environment.get_revision_argument() if environment is not None else None
    policy = migration_policy(context.dialect.name)
    if policy.transactional_ddl or target in kept or context.as_sql:
        return
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
