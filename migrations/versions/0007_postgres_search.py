"""PostgreSQL search at scale: a short pending list for the text indexes; a stratum in order.

- The pg_trgm GIN indexes of revision 0003 keep at most 128 kB of pending entries
  (``gin_pending_list_limit``; GIN's default is 4 MB). New entries wait in that list until a
  vacuum, or the write that fills it, moves them into the index, and every search reads the
  whole list: 3,112 pending entries (514 pages) made a search that matches nothing take 6 ms
  instead of 0.05 ms. A short list keeps searches fast and still lets writes add their entries
  in batches (``fastupdate = off`` would make each update of a description rewrite its
  trigrams in the index: 0.4 ms more per update).
- ``(stratum, created_at)``, ``(stratum, updated_at)`` and ``(stratum, execution_count)``: a
  search by stratum walks only that stratum, in the sort's order, instead of every agent.

SQLite is not touched (its search reads filters row by row along the sort's index on purpose:
``acti_store.repository.search``). These objects are made with raw SQL, outside the ORM
metadata, and kept out of ``alembic check`` like 0003's
(``acti_store.migrations.names.SEARCH_INDEX_PREFIXES``). Downgrade: the three indexes are
dropped and the GIN indexes go back to GIN's default list size.

Revision ID: 0007_postgres_search
Revises: 0006_versions
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007_postgres_search"
down_revision: str | None = "0006_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SORTED: tuple[str, ...] = ("created_at", "updated_at", "execution_count")
_TEXT_INDEXES: tuple[str, ...] = ("ix_agents_trgm_name", "ix_agents_trgm_description")


def _text_index_sql(change: str) -> str:
    """Apply ``change`` (SET or RESET a storage parameter) to 0003's text indexes, those that
    exist (pg_trgm may be missing). No ``%`` in it: printed as SQL (``--sql``) for a psycopg
    URL, a ``%`` would be doubled."""
    names = ", ".join(f"'{name}'" for name in _TEXT_INDEXES)
    return (
        "DO $$ DECLARE found record; BEGIN "
        "FOR found IN SELECT c.relname FROM pg_class c "
        "WHERE c.relkind = 'i' AND c.relnamespace = current_schema()::regnamespace "
        f"AND c.relname IN ({names}) LOOP "
        f"EXECUTE 'ALTER INDEX ' || quote_ident(found.relname) || ' {change}'; "
        "END LOOP; END $$"
    )


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(_text_index_sql("SET (gin_pending_list_limit = 128)"))
    for column in _SORTED:
        op.execute(f"CREATE INDEX ix_agents_sort_stratum_{column} ON agents (stratum, {column})")


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for column in _SORTED:
        op.execute(f"DROP INDEX IF EXISTS ix_agents_sort_stratum_{column}")
    op.execute(_text_index_sql("RESET (gin_pending_list_limit)"))
