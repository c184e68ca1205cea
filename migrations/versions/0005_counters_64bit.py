"""Versions, lifetime counters and history record ids are 64-bit.

PostgreSQL: ``agents.version``, ``execution_count``, ``success_count``, ``error_count``,
``total_executions`` and ``executions.id`` (with its sequence, which a SERIAL column creates ``AS
integer``) become BIGINT: past 2,147,483,647 an INTEGER fails with "integer out of range", and a
record id is used up by every run ever recorded. The table is rewritten under an exclusive lock.

SQLite: nothing to do. Its INTEGER holds 64 bits already, and the ORM keeps the name INTEGER
there (``schema.Counter``), so ``alembic check`` sees no drift. Rebuilding ``agents`` in batch mode
would also drop the search-index triggers of revisions 0003/0004 and, with foreign keys on,
cascade into ``executions``: not done.

Downgrade (PostgreSQL) narrows the columns and the sequence back to INTEGER; it fails, changing
nothing, if a stored value or the sequence no longer fits in 32 bits.

Revision ID: 0005_counters_64bit
Revises: 0004_search_log
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0005_counters_64bit"
down_revision: str | None = "0004_search_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (
    ("agents", "version"),
    ("agents", "execution_count"),
    ("agents", "success_count"),
    ("agents", "error_count"),
    ("agents", "total_executions"),
    ("executions", "id"),
)


def _widen(to: sa.types.TypeEngine[int], was: sa.types.TypeEngine[int], sql_type: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":  # its INTEGER is 64-bit already
        return
    whole = bind.dialect.name in ("mysql", "mariadb")
    for table, column in _COLUMNS:
        op.alter_column(
            table,
            column,
            type_=to,
            existing_type=was,
            existing_nullable=False,
            # MariaDB/MySQL: a column is changed whole, and the id keeps its AUTO_INCREMENT
            # (only there: Alembic warns of it on PostgreSQL)
            **({"existing_autoincrement": True} if whole and column == "id" else {}),
        )
    if bind.dialect.name != "postgresql":
        return
    if context.is_offline_mode():  # printed as SQL (--sql): the server looks the sequence up
        op.execute(
            "DO $$ BEGIN IF pg_get_serial_sequence('executions', 'id') IS NOT NULL THEN "
            "EXECUTE 'ALTER SEQUENCE ' || pg_get_serial_sequence('executions', 'id') || "
            f"' AS {sql_type}'; END IF; END $$"
        )
        return
    sequence = bind.execute(sa.text("SELECT pg_get_serial_sequence('executions', 'id')")).scalar()
    if sequence is not None:  # the name comes from the catalog, quoted as needed
        op.execute(sa.text(f"ALTER SEQUENCE {sequence} AS {sql_type}"))


def upgrade() -> None:
    _widen(sa.BigInteger(), sa.Integer(), "bigint")


def downgrade() -> None:
    _widen(sa.Integer(), sa.BigInteger(), "integer")
