"""MariaDB's and MySQL's migration policy (``migration_policy.MigrationPolicy``).

Their DDL commits as it goes and cannot be rolled back: a migration is recorded under way in
``MIGRATION_PROGRESS_TABLE`` before its first DDL (``mark``), and its row is deleted in the
migration's last transaction (``migrations.progress.end_migration``); a row left behind is an
interrupted migration (``recover``). Migrations queue on a named lock, which is the session's
(not the transaction's): released after the migration (``unlock``).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from ...engine import MIGRATION_PROGRESS_TABLE, VERSION_TABLE
from ...errors import SchemaVersionError, StoreUnavailableError
from ...migration_policy import SCHEMA_OF_ITS_OWN
from ...migrations.names import ORM_TABLES, is_acti_store_table
from ...migrations.progress import MARKER
from ...revisions import heads_in
from ...schema_head import has_progress_table, progress

#: The name of the named lock held while migrating (``GET_LOCK``): one per database.
_LOCK_NAME: Final = "CONCAT('acti_store_migration.', DATABASE())"
#: How long a migration waits for another's lock (seconds, about 34 years): ``GET_LOCK`` has no
#: "forever" there (a negative timeout answers NULL at once, without taking the lock).
_LOCK_WAIT: Final = 2**30
#: The progress table: InnoDB, so that deleting its row commits with the migration's last
#: revision stamp.
_PROGRESS_DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS {MIGRATION_PROGRESS_TABLE} (started_at DATETIME(6) NOT NULL, "
    "from_revision VARCHAR(255) NOT NULL, to_revision VARCHAR(255) NOT NULL) ENGINE=InnoDB"
)


class MariadbMigration:
    transactional_ddl = False
    replaced_indexes: frozenset[str] = frozenset()
    own_place_hint = SCHEMA_OF_ITS_OWN

    def lock(self, conn: Connection) -> None:
        taken = conn.execute(text(f"SELECT GET_LOCK({_LOCK_NAME}, {_LOCK_WAIT})")).scalar()
        if taken != 1:
            raise StoreUnavailableError(
                "cannot open the store: the server did not give its migration lock "
                f"(GET_LOCK answered {taken})",
                transient=False,
            )

    def unlock(self, conn: Connection) -> None:
        """Drop the progress table ``end_migration`` emptied, and release the named lock."""
        if conn.info.pop(MARKER, None) == "ended":
            conn.execute(text(f"DROP TABLE IF EXISTS {MIGRATION_PROGRESS_TABLE}"))
        conn.execute(text(f"SELECT RELEASE_LOCK({_LOCK_NAME})"))
        conn.commit()

    def mark(self, conn: Connection, before: str, to: str) -> None:
        conn.execute(text(_PROGRESS_DDL))
        conn.execute(text(f"DELETE FROM {MIGRATION_PROGRESS_TABLE}"))
        conn.execute(
            text(
                f"INSERT INTO {MIGRATION_PROGRESS_TABLE} (started_at, from_revision, "
                "to_revision) VALUES (UTC_TIMESTAMP(6), :before, :to)"
            ),
            {"before": before, "to": to},
        )
        # Committed now, on the server: the first DDL would commit it anyway (DDL commits as it
        # goes there), but a revision may begin with DML. The migration carries on in the
        # transaction the server begins next, which ``conn``'s transaction commits or rolls back.
        conn.exec_driver_sql("COMMIT")
        conn.info[MARKER] = "running"

    def recover(self, conn: Connection) -> None:
        """The store at the revision the marker was going to: the migration had ended; the
        marker is removed. Else the schema may be half-made, and MariaDB cannot undo it: a store
        that holds no row in any of acti_store's tables (the migration was creating it, or it
        was empty) has every acti_store table dropped, so the migration that follows makes the
        store from scratch; a store holding rows is refused (``SchemaVersionError``), nothing
        written."""
        found = progress(conn)
        if found is not None and heads_in(conn, VERSION_TABLE) != set(
            filter(None, found.to_revision.split(","))
        ):
            tables = sorted(
                name
                for name in self.relation_names(conn)
                if is_acti_store_table(name) and name != MIGRATION_PROGRESS_TABLE
            )
            holding = [name for name in tables if name in ORM_TABLES and _has_rows(conn, name)]
            if holding:
                raise SchemaVersionError(
                    f"{found.describe()} was interrupted part way (killed, or it failed); "
                    "MariaDB cannot undo schema changes, so the store's schema is half-made, "
                    f"and it holds data (in {', '.join(holding)}). Nothing was changed. Restore "
                    "the database from its backup, then run acti-store migrate"
                )
            if tables:
                conn.execute(text("SET SESSION foreign_key_checks = 0"))
                try:
                    conn.execute(text(f"DROP TABLE IF EXISTS {', '.join(tables)}"))
                finally:
                    conn.execute(text("SET SESSION foreign_key_checks = 1"))
        if found is not None or has_progress_table(conn):
            conn.execute(text(f"DROP TABLE IF EXISTS {MIGRATION_PROGRESS_TABLE}"))

    def relation_names(self, conn: Connection) -> set[str]:
        query = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
        return set(conn.execute(text(query)).scalars())

    def place(self, conn: Connection) -> str:
        return f"the database {conn.engine.url.database}"


def _has_rows(conn: Connection, table: str) -> bool:
    return conn.execute(text(f"SELECT 1 FROM {table} LIMIT 1")).first() is not None


MIGRATION: Final = MariadbMigration()
