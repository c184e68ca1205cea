"""PostgreSQL: tenant-bound logins, and row-level security on ``agent_tenants``.

``agent_tenant_logins`` (``role``, a database login, and the ``tenant`` it is bound to) binds a
login to one tenant (``acti-store tenants bind ROLE TENANT``). The policy ``tenant_isolation``
of every tenant table is made again to compare ``tenant`` with ``guards.BOUND_SETTING``: the
tenant of ``session_user``'s binding where there is one, else the session's ``acti.tenant`` as
before. A bound login therefore sees and writes only its tenant whatever it sets, and whatever
role it takes (``SET ROLE`` changes ``current_user``, never ``session_user``). The bindings
are read in one scalar subquery per statement.

``agent_tenant_logins`` itself has row-level security, not forced: its owner (the role that
migrates, the operator) reads and writes every binding; any other role reads its own binding
only (``SELECT`` is granted to everyone, so a login needs no grant for the policies to read it)
and writes none, whatever it was granted.

``agent_tenants`` (the registry of tenants) gets the policy too, comparing ``name``, not
forced: its owner and superusers list and edit every tenant (``repo.tenants()``, the
operator's view), while the app role reads and registers only the tenant it runs as, and can
edit no other tenant's row.

SQLite and MariaDB have no logins row-level security could bind: nothing changes there.

Downgrade: the policies compare ``acti.tenant`` again, ``agent_tenants`` loses its row-level
security, and the bindings are dropped. On MariaDB a downgrade below 0009 is refused here already
while other tenants hold rows, as 0014 refuses it, before any step commits.

Revision ID: 0015_tenant_logins
Revises: 0014_tenant_lifecycle
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from acti_store.migrations.guards import (
    BOUND_SETTING,
    POLICY,
    SETTING,
    TENANT_TABLES_0011,
    refuse_leaving_tenants,
    tenant_policy,
)

revision: str = "0015_tenant_logins"
down_revision: str | None = "0014_tenant_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The tables of a tenant's data, as of this revision.
TABLES = TENANT_TABLES_0011
#: The bindings, and the policy that shows each role its own.
LOGINS = "agent_tenant_logins"
OWN_BINDING = "own_binding"


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(
        f"CREATE TABLE {LOGINS} (role name NOT NULL, tenant VARCHAR(64) NOT NULL, "
        f"CONSTRAINT pk_{LOGINS} PRIMARY KEY (role))"
    )
    op.execute(f"ALTER TABLE {LOGINS} ENABLE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY {OWN_BINDING} ON {LOGINS} FOR SELECT USING (role = session_user)")
    op.execute(f"GRANT SELECT ON {LOGINS} TO PUBLIC")
    for table in TABLES:
        op.execute(f"DROP POLICY {POLICY} ON {table}")
        tenant_policy(table, BOUND_SETTING)
    op.execute("ALTER TABLE agent_tenants ENABLE ROW LEVEL SECURITY")
    tenant_policy("agent_tenants", BOUND_SETTING, column="name")


def downgrade() -> None:
    refuse_leaving_tenants(
        (
            "0014_tenant_lifecycle",
            "0013_imported_moves",
            "0012_sqlite_sort_filters",
            "0011_label_routing",
            "0010_changes",
            "0009_tenants",
            *("-1", "-2", "-3", "-4", "-5", "-6"),
        )
    )
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(f"DROP POLICY {POLICY} ON agent_tenants")
    op.execute("ALTER TABLE agent_tenants DISABLE ROW LEVEL SECURITY")
    for table in TABLES:
        op.execute(f"DROP POLICY {POLICY} ON {table}")
        tenant_policy(table, SETTING)
    op.execute(f"DROP TABLE {LOGINS}")
