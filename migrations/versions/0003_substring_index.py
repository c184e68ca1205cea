"""Substring search index on agent names and descriptions.

SQLite: an external-content FTS5 table with the trigram tokenizer (``agents_fts``), kept in step
with ``agents`` by triggers, so in the same transaction as every write. PostgreSQL: ``pg_trgm``
GIN indexes on ``lower(name)`` and ``lower(description)``, which serve ``LIKE '%word%'``. If the
``pg_trgm`` extension cannot be created (no privilege), the indexes are skipped with a warning and
search falls back to scanning; nothing else changes.

``pg_trgm`` is one per database: installed in any schema, it is used there (the indexes name its
operator class with that schema, so they do not depend on the search path). Missing, it is
created in the store's own schema (``open_repository(schema=...)``), else in ``public``.

These objects are not part of the ORM metadata; ``migrations/env.py`` keeps them out of
``alembic check`` (``acti_store.migrations.names.SEARCH_INDEX_PREFIXES``).

Revision ID: 0003_search
Revises: 0002_v2
Create Date: 2025-01-11
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from acti_store.engine import store_schema

revision: str = "0003_search"
down_revision: str | None = "0002_v2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")

_SQLITE_UP = (
    "CREATE VIRTUAL TABLE agents_fts USING fts5("
    "name, description, content='agents', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER agents_fts_insert AFTER INSERT ON agents BEGIN "
    "INSERT INTO agents_fts(rowid, name, description) VALUES (new.id, new.name, new.description); "
    "END",
    "CREATE TRIGGER agents_fts_delete AFTER DELETE ON agents BEGIN "
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "VALUES ('delete', old.id, old.name, old.description); "
    "END",
    "CREATE TRIGGER agents_fts_update AFTER UPDATE OF name, description ON agents "
    "WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN "
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "VALUES ('delete', old.id, old.name, old.description); "
    "INSERT INTO agents_fts(rowid, name, description) VALUES (new.id, new.name, new.description); "
    "END",
    "INSERT INTO agents_fts(agents_fts) VALUES ('rebuild')",
)
_SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS agents_fts_update",
    "DROP TRIGGER IF EXISTS agents_fts_delete",
    "DROP TRIGGER IF EXISTS agents_fts_insert",
    "DROP TABLE IF EXISTS agents_fts",
)


#: ``_pg_trgm_schema`` and the indexes, done by the server: the upgrade printed as SQL. Missing,
#: pg_trgm is created in the session's current schema (the store's: the printed SQL sets the
#: search path to it). No ``%`` in it: the printed SQL would show it doubled.
_PG_TRGM_OFFLINE = """DO $$
DECLARE
    trgm text;
BEGIN
    SELECT n.nspname INTO trgm FROM pg_extension e
        JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
    IF trgm IS NULL THEN
        BEGIN
            EXECUTE 'CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA '
                || quote_ident(current_schema());
            trgm := current_schema();
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING USING MESSAGE =
                'pg_trgm unavailable (' || SQLERRM || '): substring search will scan';
        END;
    END IF;
    IF trgm IS NOT NULL THEN
        EXECUTE 'CREATE INDEX ix_agents_trgm_name ON agents USING gin (lower(name) '
            || quote_ident(trgm) || '.gin_trgm_ops)';
        EXECUTE 'CREATE INDEX ix_agents_trgm_description ON agents USING gin (lower(description) '
            || quote_ident(trgm) || '.gin_trgm_ops)';
    END IF;
END $$"""


def _pg_trgm_schema(bind: sa.Connection) -> str | None:
    """The schema holding pg_trgm, creating the extension if we may; None if unavailable."""
    find = sa.text(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'pg_trgm'"
    )
    schema = bind.execute(find).scalar()
    if schema is not None:
        return str(schema)
    home = store_schema(bind) or "public"
    bind.execute(sa.text("SAVEPOINT acti_pg_trgm"))
    try:
        bind.execute(sa.text(f'CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA "{home}"'))
    except sa.exc.DBAPIError as exc:
        bind.execute(sa.text("ROLLBACK TO SAVEPOINT acti_pg_trgm"))
        schema = bind.execute(find).scalar()  # created meanwhile by a concurrent migration?
        if schema is not None:
            return str(schema)
        log.warning("pg_trgm unavailable (%s): substring search will scan", exc.orig)
        return None
    bind.execute(sa.text("RELEASE SAVEPOINT acti_pg_trgm"))
    return home


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _SQLITE_UP:
            op.execute(statement)
    elif bind.dialect.name == "postgresql":
        if context.is_offline_mode():  # printed as SQL (--sql): the server looks pg_trgm up
            op.execute(_PG_TRGM_OFFLINE)
            return
        schema = _pg_trgm_schema(bind)
        if schema is not None:
            for column in ("name", "description"):
                op.execute(
                    f"CREATE INDEX ix_agents_trgm_{column} ON agents "
                    f'USING gin (lower({column}) "{schema}".gin_trgm_ops)'
                )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _SQLITE_DOWN:
            op.execute(statement)
    elif bind.dialect.name == "postgresql":
        for column in ("name", "description"):
            op.execute(f"DROP INDEX IF EXISTS ix_agents_trgm_{column}")
