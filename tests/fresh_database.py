"""A PostgreSQL database of its own for a test that needs ``public`` and the database-wide
extensions to itself (an application's tables beside a store, where ``pg_trgm`` goes), made in
the server of ``ACTI_STORE_TEST_POSTGRES_URL`` and dropped afterwards; what a schema (on MariaDB:
a database) holds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from conftest import POSTGRES_URL, SKIP_POSTGRES


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """Yield the URL of a new, empty database; drop it (and its sessions) at the end."""
    if not POSTGRES_URL:
        pytest.skip(SKIP_POSTGRES)
    name = f"acti_db_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        try:
            yield sa.make_url(POSTGRES_URL).set(database=name).render_as_string(False)
        finally:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def relations(url: str, schema: str) -> dict[str, str]:
    """Every table, index, sequence and view in ``schema``, by name, with its kind (PostgreSQL's
    ``relkind``). On MariaDB ``schema`` is a database: its tables and views (``r``, ``v``), its
    indexes (``i``, named ``table.index``: MariaDB names them per table) and triggers (``t``)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name in ("mysql", "mariadb"):
                rows = conn.execute(
                    sa.text(
                        "SELECT table_name, IF(table_type = 'VIEW', 'v', 'r') "
                        "FROM information_schema.tables WHERE table_schema = :schema "
                        "UNION ALL SELECT DISTINCT CONCAT(table_name, '.', index_name), 'i' "
                        "FROM information_schema.statistics WHERE table_schema = :schema "
                        "UNION ALL SELECT trigger_name, 't' "
                        "FROM information_schema.triggers WHERE trigger_schema = :schema"
                    ),
                    {"schema": schema},
                ).all()
            else:
                rows = conn.execute(
                    sa.text(
                        "SELECT c.relname, c.relkind FROM pg_class c "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :schema"
                    ),
                    {"schema": schema},
                ).all()
    finally:
        engine.dispose()
    return {str(name): str(kind) for name, kind in rows}


def extension_schema(url: str, extension: str = "pg_trgm") -> str | None:
    """The schema ``extension`` is installed in, None when it is not installed."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text(
                    "SELECT n.nspname FROM pg_extension e "
                    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = :name"
                ),
                {"name": extension},
            ).scalar()
    finally:
        engine.dispose()
    return None if found is None else str(found)
