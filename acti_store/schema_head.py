"""Whether a store's schema is at head, read without Alembic: the question every open asks.

Loading Alembic and the migration scripts costs a short-lived process (a CLI call, an MCP stdio
server) more than the call itself, and a store at head needs neither. ``HEAD_REVISION`` is the
newest migration's id, kept here and nowhere else; ``tests/test_schema_head.py`` fails, saying
what to write, when a new migration leaves it behind. A store recorded at exactly that
revision, with no MariaDB migration under way, is at head; anything else (another revision,
no version table, an unreachable database) goes on to ``acti_store.revisions``, which loads
Alembic and decides, migrates or refuses as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sqlalchemy import Connection, Engine, text

from .engine import MIGRATION_PROGRESS_TABLE, VERSION_TABLE
from .migration_policy import migration_policy

#: The revision of the newest script in ``migrations/versions``: the revision of a store at head.
#: A new migration updates it (the test of this module compares it with Alembic's head).
HEAD_REVISION: Final = "0015_tenant_logins"


@dataclass(frozen=True)
class MigrationProgress:
    """The marker row of a MariaDB migration under way (or interrupted): where it started from
    and where it was going (revisions joined by commas; ``""``: none, base)."""

    started_at: datetime
    from_revision: str
    to_revision: str

    def describe(self) -> str:
        return (
            f"the migration from revision {self.from_revision or 'none'} to "
            f"{self.to_revision or 'base'} (started {self.started_at:%Y-%m-%d %H:%M:%S} UTC)"
        )


def at_head(engine: Engine) -> bool:
    """Whether the store records ``HEAD_REVISION`` alone in ``VERSION_TABLE`` and no MariaDB
    migration is under way: then opening it needs no migration and no check by Alembic.

    False for anything else, a failure to read included: ``acti_store.revisions`` then reads
    the store again with Alembic, and says what is wrong in its own words."""
    try:
        with engine.connect() as conn:
            return progress(conn) is None and _recorded_revisions(conn) == {HEAD_REVISION}
    except Exception:
        return False


def _recorded_revisions(conn: Connection) -> set[str]:
    """The revisions in ``VERSION_TABLE`` (Alembic's one column, ``version_num``)."""
    return set(conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())


def progress(conn: Connection) -> MigrationProgress | None:
    """The marker of a MariaDB migration under way or interrupted (``revisions.mark_migration``);
    None without one (and on the engines whose DDL is transactional)."""
    if migration_policy(conn.dialect.name).transactional_ddl or not has_progress_table(conn):
        return None
    columns = "started_at, from_revision, to_revision"
    query = text(f"SELECT {columns} FROM {MIGRATION_PROGRESS_TABLE} LIMIT 1")
    row = conn.execute(query).mappings().first()
    return None if row is None else MigrationProgress(**row)


def has_progress_table(conn: Connection) -> bool:
    """Whether MariaDB's ``MIGRATION_PROGRESS_TABLE`` exists in the store's database."""
    found = conn.execute(
        text(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() "
            "AND table_name = :name"
        ),
        {"name": MIGRATION_PROGRESS_TABLE},
    ).first()
    return found is not None
