"""Tenants: a ``tenant`` column on every table of a tenant's data, names unique per tenant, and on
PostgreSQL row-level security.

Every table that holds a tenant's data (``acti_store.tenancy.TENANT_TABLES``) gains ``tenant``
(``VARCHAR(64) NOT NULL DEFAULT 'default'``): the rows already stored are the default tenant's,
which a store opened without a tenant sees, so a store made before this revision opens unchanged.
An agent's name becomes unique per tenant (``uq_agents_tenant_name`` on ``(tenant, name)``, in
place of ``uq_agents_name``), and each index of ``agents`` leads with the tenant
(``ix_agents_tenant_<column>`` in place of ``ix_agents_<column>``; MariaDB's sort indexes of
0008 too): one tenant's page, sorted by creation, walks that tenant's range of the index (with
``(created_at)`` alone and ``tenant = ?``, SQLite read the whole tenant and sorted it: 132 ms at
20,000 agents). ``agent_tenants`` lists the tenants stores were opened for.

PostgreSQL: adding a column with a constant default rewrites nothing; the one step that reads
the table is the new unique index (its build is the time the migration holds its locks, measured
in the release notes). Then row-level security, forced for the table owner too, on every tenant
table: policy ``tenant_isolation`` lets a session see and write the rows whose tenant is its
setting ``acti.tenant``; a session without it sees no row and can write none. Superusers and
roles with BYPASSRLS are not bound by it (docs/tenants.md: the roles to use).

SQLite cannot change a table's unique constraint in place: ``agents`` is rebuilt (a copy under a
new name, the old table dropped, the copy renamed, its indexes and triggers made again), which
needs foreign keys off, or dropping ``agents`` would cascade into its child tables: the
migration runner turns them off before its transaction (``acti_store.revisions``), and this
revision refuses to run with them on. MariaDB: each column is added in place, the unique index
replaced in one ALTER.

Downgrade: refused while any row belongs to a tenant other than the default one (names would
collide once unique across the store again: export and delete those tenants' agents first);
else the policies, the index, the columns and ``agent_tenants`` are dropped.

Revision ID: 0009_tenants
Revises: 0008_mariadb_search
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import MYSQL_DIALECTS, TABLE_OPTIONS, TIMESTAMP
from acti_store.errors import SchemaVersionError
from acti_store.migrations.guards import (
    POLICY,
    SETTING,
    TENANT_TABLES_0009,
    isolate_tenants,
    refuse_other_tenants,
)

revision: str = "0009_tenants"
down_revision: str | None = "0008_mariadb_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The tables of a tenant's data, as of this revision.
TABLES = TENANT_TABLES_0009
DEFAULT = "default"
#: The agents' columns indexed alone before this revision, after the tenant from it.
INDEXED = ("stratum", "tools_mask", "created_at", "updated_at", "execution_count")
#: MariaDB's sort indexes (0008), ``(column DESC, name)``, after the tenant from this revision.
MARIADB_SORTED = ("created_at", "updated_at", "execution_count")
_COLUMN = f"tenant VARCHAR(64) DEFAULT '{DEFAULT}' NOT NULL"
_KEY = "CONSTRAINT pk_agents PRIMARY KEY (id), \n\t"
#: The end of ``agents``' definition on SQLite, before and after (revision 0002 wrote it).
_SQLITE_BEFORE = _KEY + "CONSTRAINT uq_agents_name UNIQUE (name)"
_SQLITE_AFTER = f"{_COLUMN}, \n\t{_KEY}CONSTRAINT uq_agents_tenant_name UNIQUE (tenant, name)"


def _dialect() -> str:
    return op.get_context().dialect.name


def upgrade() -> None:
    dialect = _dialect()
    if dialect == "sqlite":
        _rebuild_sqlite_agents(upgrading=True)
        for table in TABLES[1:]:
            op.execute(f"ALTER TABLE {table} ADD COLUMN {_COLUMN}")
    else:
        for table in TABLES:
            op.execute(f"ALTER TABLE {table} ADD COLUMN {_COLUMN}")
        if dialect in MYSQL_DIALECTS:  # one ALTER: the table is read once
            op.execute(
                "ALTER TABLE agents DROP INDEX uq_agents_name, "
                "ADD CONSTRAINT uq_agents_tenant_name UNIQUE (tenant, name), "
                + ", ".join(_mariadb_indexes(tenant=True))
            )
        else:
            op.execute("ALTER TABLE agents DROP CONSTRAINT uq_agents_name")
            op.execute(
                "ALTER TABLE agents ADD CONSTRAINT uq_agents_tenant_name UNIQUE (tenant, name)"
            )
            for column in INDEXED:
                op.execute(f"DROP INDEX ix_agents_{column}")
                op.execute(f"CREATE INDEX ix_agents_tenant_{column} ON agents (tenant, {column})")
    op.create_table(
        "agent_tenants",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_agent_tenants")),
        **TABLE_OPTIONS,
    )
    if dialect == "postgresql":
        isolate_tenants(TABLES, SETTING)


def downgrade() -> None:
    dialect = _dialect()
    if dialect == "postgresql":  # first: the owner itself sees no row under forced security
        for table in TABLES:
            op.execute(f"DROP POLICY IF EXISTS {POLICY} ON {table}")
            op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
            op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    if not op.get_context().as_sql:
        refuse_other_tenants(TABLES)
    op.drop_table("agent_tenants")
    if dialect == "sqlite":
        _rebuild_sqlite_agents(upgrading=False)
        for table in TABLES[1:]:
            op.execute(f"ALTER TABLE {table} DROP COLUMN tenant")
        return
    if dialect in MYSQL_DIALECTS:
        op.execute(
            "ALTER TABLE agents DROP INDEX uq_agents_tenant_name, "
            "ADD CONSTRAINT uq_agents_name UNIQUE (name), "
            + ", ".join(_mariadb_indexes(tenant=False))
        )
    else:
        op.execute("ALTER TABLE agents DROP CONSTRAINT uq_agents_tenant_name")
        op.execute("ALTER TABLE agents ADD CONSTRAINT uq_agents_name UNIQUE (name)")
        for column in INDEXED:
            op.execute(f"DROP INDEX ix_agents_tenant_{column}")
            op.execute(f"CREATE INDEX ix_agents_{column} ON agents ({column})")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} DROP COLUMN tenant")


def _mariadb_indexes(*, tenant: bool) -> list[str]:
    """MariaDB: the ALTER TABLE clauses that put the agents' indexes after (or, not
    ``tenant``, back before) the tenant."""
    old, new = (
        ("ix_agents_", "ix_agents_tenant_") if tenant else ("ix_agents_tenant_", "ix_agents_")
    )
    lead = "tenant, " if tenant else ""
    clauses = [f"DROP INDEX {old}{c}, ADD INDEX {new}{c} ({lead}{c})" for c in INDEXED]
    clauses += [
        f"DROP INDEX ix_agents_sort_{c}, ADD INDEX ix_agents_sort_{c} ({lead}{c} DESC, name)"
        for c in MARIADB_SORTED
    ]
    return clauses


#: SQLite: ``agents`` as revisions 0002 and 0004 left it, for SQL printed without a database
#: (``acti-store migrate --sql``; run it on a connection with foreign keys off, SQLite's default).
_SQLITE_AGENTS = (
    'CREATE TABLE "agents" (\n\tid INTEGER NOT NULL, \n\tname VARCHAR(64) NOT NULL, '
    "\n\tdescription TEXT NOT NULL, \n\tsystem_prompt TEXT NOT NULL, \n\ttools JSON NOT NULL, "
    "\n\tmodel VARCHAR(200) NOT NULL, \n\tstratum VARCHAR(8), \n\tcreated_at DATETIME NOT NULL, "
    "\n\tbuilder VARCHAR(200) NOT NULL, \n\ttools_mask INTEGER NOT NULL, \n\ttags JSON NOT NULL, "
    "\n\tupdated_at DATETIME NOT NULL, \n\tlast_executed_at DATETIME, "
    "\n\tversion INTEGER NOT NULL, "
    "\n\texecution_count INTEGER NOT NULL, \n\tsuccess_count INTEGER NOT NULL, "
    "\n\terror_count INTEGER NOT NULL, \n\ttotal_executions INTEGER NOT NULL, "
    f"\n\t{_SQLITE_BEFORE}\n)"
)
_SQLITE_LOGGED = (
    "INSERT OR IGNORE INTO agents_fts_log (agent_id, indexed_name, indexed_description) VALUES "
)
_SQLITE_TRIGGERS = (
    "CREATE TRIGGER agents_fts_log_delete AFTER DELETE ON agents BEGIN "
    f"{_SQLITE_LOGGED}(old.id, old.name, old.description); END",
    f"CREATE TRIGGER agents_fts_log_insert AFTER INSERT ON agents BEGIN {_SQLITE_LOGGED}"
    "(new.id, NULL, NULL); END",
    "CREATE TRIGGER agents_fts_log_update AFTER UPDATE OF name, description ON agents "
    "WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN "
    f"{_SQLITE_LOGGED}(old.id, old.name, old.description); END",
)
_SQLITE_COLUMNS = [
    part.split()[0]
    for part in _SQLITE_AGENTS.split("(", 1)[1].split(", \n\t")
    if not part.startswith("CONSTRAINT")
]


def _sqlite_agents(upgrading: bool) -> tuple[str, list[str], list[str]]:
    """``agents``' definition, its columns, and its triggers, as the store holds
    them (as the revisions left them, when printing SQL)."""
    if op.get_context().as_sql:
        table_sql = (
            _SQLITE_AGENTS if upgrading else _SQLITE_AGENTS.replace(_SQLITE_BEFORE, _SQLITE_AFTER)
        )
        columns = _SQLITE_COLUMNS if upgrading else [*_SQLITE_COLUMNS, "tenant"]
        return table_sql, columns, list(_SQLITE_TRIGGERS)
    bind = op.get_bind()
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise SchemaVersionError(
            "0009_tenants rebuilds the agents table and must run with SQLite's foreign keys off "
            "(dropping the table would delete its histories): run `acti-store migrate` or "
            "`alembic upgrade head`, which turn them off"
        )
    (table_sql,) = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agents'"
    ).one()
    kept = [
        sql
        for (sql,) in bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'agents' "
            "AND type = 'trigger' ORDER BY name"
        )
    ]
    columns = [row[1] for row in bind.exec_driver_sql("PRAGMA table_info(agents)")]
    return table_sql, columns, kept


def _rebuild_sqlite_agents(*, upgrading: bool) -> None:
    """SQLite: ``agents`` made again with (upgrading) or without the tenant and its unique
    constraint and indexes, its rows and triggers kept (SQLite's procedure for a table change
    ALTER TABLE cannot make)."""
    table_sql, columns, kept = _sqlite_agents(upgrading)
    if upgrading:
        new_sql = table_sql.replace(_SQLITE_BEFORE, _SQLITE_AFTER)
    else:
        new_sql = table_sql.replace(_SQLITE_AFTER, _SQLITE_BEFORE)
        columns.remove("tenant")
    if new_sql == table_sql:
        raise SchemaVersionError("0009_tenants: the agents table is not as revision 0008 left it")
    listed = ", ".join(columns)
    op.execute("PRAGMA legacy_alter_table = ON")  # the children's foreign keys keep their text
    op.execute(f"CREATE TABLE rebuilt_agents {new_sql[new_sql.index('(') :]}")
    op.execute(f"INSERT INTO rebuilt_agents ({listed}) SELECT {listed} FROM agents")
    op.execute("DROP TABLE agents")
    op.execute("ALTER TABLE rebuilt_agents RENAME TO agents")
    op.execute("PRAGMA legacy_alter_table = OFF")
    for sql in kept:  # its triggers
        op.execute(sql)
    for column in INDEXED:
        if upgrading:
            op.execute(f"CREATE INDEX ix_agents_tenant_{column} ON agents (tenant, {column})")
        else:
            op.execute(f"CREATE INDEX ix_agents_{column} ON agents ({column})")
    if not op.get_context().as_sql:
        broken = op.get_bind().exec_driver_sql("PRAGMA foreign_key_check").all()
        if broken:
            raise SchemaVersionError(
                f"0009_tenants: the rebuilt agents table breaks foreign keys: {broken}"
            )
