"""What differs between engines when acti_store migrates a store: how migrations queue, whether
DDL commits as it goes (and so a migration is marked before its first DDL and recovered after
an interruption), where the store's tables are looked for, and how that place is named to a
person. Each engine's ``migration`` part gives it (``MIGRATION``); ``acti_store.revisions``,
``schema_head`` and the revisions' guards ask it (``migration_policy``), never the engine's name.
"""

from __future__ import annotations

from typing import Final, Protocol, cast

from sqlalchemy import Connection

from .engine_registry import engine_for

#: What to give acti_store on an engine with schemas (or databases) of their own, when the place
#: it was given holds another application's tables.
SCHEMA_OF_ITS_OWN: Final = (
    'Give acti_store a schema of its own, e.g. open_repository(url, schema="acti"), '
    "acti-store --schema acti ..., alembic -x schema=acti or ACTI_STORE_SCHEMA=acti"
)


class MigrationPolicy(Protocol):
    #: Whether a failed migration's DDL is rolled back with its transaction (SQLite, PostgreSQL).
    #: MariaDB's commits as it goes: a migration there is marked (``mark``) before its first DDL,
    #: an interrupted one is recovered (``recover``), and a downgrade step checks before it
    #: changes anything.
    transactional_ddl: bool
    #: The ORM's indexes a revision replaced on this engine by its own (not drift there).
    replaced_indexes: frozenset[str]
    #: What to give acti_store when its place holds another application's tables.
    own_place_hint: str

    def lock(self, conn: Connection) -> None:
        """Queue behind any other migration of this database, in ``conn``'s transaction."""

    def unlock(self, conn: Connection) -> None:
        """After the migration's transaction: what ``lock`` took beyond it, released."""

    def mark(self, conn: Connection, before: str, to: str) -> None:
        """Record, committed before any DDL, that a migration from revisions ``before`` to
        ``to`` (comma-separated) is under way; nothing where DDL is transactional."""

    def recover(self, conn: Connection) -> None:
        """Holding the lock: finish with a migration that was interrupted part way."""

    def relation_names(self, conn: Connection) -> set[str]:
        """The tables and views where the migrations would create acti_store's."""

    def place(self, conn: Connection) -> str:
        """Where those are, for a person: "the database file ...", "the schema ... of ..."."""


class TransactionalMigration:
    """A ``MigrationPolicy``'s defaults for an engine whose DDL is transactional: a failed
    migration leaves nothing to mark or recover, and its lock ends with its transaction."""

    transactional_ddl = True
    replaced_indexes: frozenset[str] = frozenset()

    def unlock(self, conn: Connection) -> None:
        """Nothing: the lock ended with the transaction."""

    def mark(self, conn: Connection, before: str, to: str) -> None:
        """Nothing: a failed migration's DDL rolls back."""

    def recover(self, conn: Connection) -> None:
        """Nothing: no migration is left part way."""


def migration_policy(dialect_name: str) -> MigrationPolicy:
    """The migration policy of the engine of ``dialect_name``."""
    return cast(MigrationPolicy, engine_for(dialect_name).part("migration").MIGRATION)
