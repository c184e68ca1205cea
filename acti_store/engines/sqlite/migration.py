"""SQLite's migration policy (``migration_policy.MigrationPolicy``): its DDL is transactional;
a migration's transaction begins with ``BEGIN IMMEDIATE`` (a connection with the execution
option ``acti_write``), which is the lock; a store's tables are the file's."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from ...engine import store_location
from ...migration_policy import TransactionalMigration

#: The ORM's indexes that revision 0012 replaces by wider ones of its own
#: (``ix_agents_sort_<column>``, which carry the stratum, the tools and the creation time): not
#: missing here.
REPLACED_INDEXES: Final = frozenset(
    f"ix_agents_tenant_{column}" for column in ("created_at", "updated_at", "execution_count")
)


class SqliteMigration(TransactionalMigration):
    replaced_indexes = REPLACED_INDEXES
    own_place_hint = "Give acti_store a database file of its own (e.g. sqlite:///acti_store.db)"

    def lock(self, conn: Connection) -> None:
        """Nothing more: the transaction's ``BEGIN IMMEDIATE`` holds the write lock."""

    def relation_names(self, conn: Connection) -> set[str]:
        query = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
        return set(conn.execute(text(query)).scalars())

    def place(self, conn: Connection) -> str:
        return f"the database file {store_location(conn.engine.url)}"


MIGRATION: Final = SqliteMigration()
