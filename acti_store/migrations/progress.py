"""The end of a MariaDB migration's progress marker, shared by the code around Alembic
(``acti_store.revisions``, which writes the marker) and the revisions themselves
(``migrations.guards``, a revision that refuses to run before it changed anything).

MariaDB's DDL commits as it goes: ``revisions.mark_migration`` records a migration under way in
``MIGRATION_PROGRESS_TABLE`` before its first DDL, and ``end_migration`` deletes that row in the
migration's last transaction, so that it goes in the same commit as the last revision's stamp.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from ..engine import MIGRATION_PROGRESS_TABLE

#: ``Connection.info`` key of this connection's progress marker (MariaDB): ``"running"`` once
#: ``revisions.mark_migration`` wrote it, ``"ended"`` once ``end_migration`` deleted its row.
MARKER: Final = "acti_store_migration_marker"


def end_migration(conn: Connection, *, refused: bool = False) -> None:
    """After Alembic, in the migration's transaction: delete the progress marker of
    ``revisions.mark_migration``, so that it goes in the same commit as the last revision's
    stamp. ``refused``: a revision refuses to run before it changed anything (0009's downgrade):
    deleted and committed now, the store being as it was."""
    if conn.info.get(MARKER) == "running":
        conn.execute(text(f"DELETE FROM {MIGRATION_PROGRESS_TABLE}"))
        conn.info[MARKER] = "ended"
        if refused:
            conn.exec_driver_sql("COMMIT")
