"""PostgreSQL's migration policy (``migration_policy.MigrationPolicy``): its DDL is
transactional; migrations queue on an advisory lock held until the transaction ends; a store's
tables are its schema's (the connection's current schema)."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from ...migration_policy import SCHEMA_OF_ITS_OWN, TransactionalMigration

#: Key of the advisory lock held while migrating, so concurrent openers queue.
MIGRATION_LOCK: Final = 0x61637469
#: What to give acti_store when its place holds another application's tables (MariaDB's too).


class PostgresqlMigration(TransactionalMigration):
    own_place_hint = SCHEMA_OF_ITS_OWN

    def lock(self, conn: Connection) -> None:
        # Openers queue behind a migration however long it takes (a table rewrite may take
        # longer than lock_timeout): it is not a write waiting on another writer.
        conn.execute(text("SET LOCAL lock_timeout = 0"))
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})

    def relation_names(self, conn: Connection) -> set[str]:
        query = (
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        )
        return set(conn.execute(text(query)).scalars())

    def place(self, conn: Connection) -> str:
        schema = str(conn.execute(text("SELECT current_schema()")).scalar_one())
        return f"the schema {schema} of the PostgreSQL database"


MIGRATION: Final = PostgresqlMigration()
