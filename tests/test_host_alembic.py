"""acti_store beside an application that runs its own Alembic on the same database.

A small application project is written to a temporary folder: its own ``alembic.ini``, an
``env.py`` that passes ``acti_store.migrations.ignore_acti_store(...)`` as its ``include_name``,
one revision and one table. On PostgreSQL the table is ``agents`` in ``public`` and acti_store
lives in the schema ``acti`` (the application compares every schema, ``include_schemas=True``,
so the filter has work to do); on SQLite the application's table is ``app_users`` in the same
file (a second ``agents`` table cannot exist in one SQLite file). The real ``alembic`` command
runs ``upgrade head`` and ``check`` for both projects, in both orders, then acti_store is opened
and used: no error, no drift on either side, the application's table untouched. docs/host-app.md
("Using acti_store in your app") shows these files and commands.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import BACKENDS, make_config
from fresh_database import fresh_postgres_database

from acti_store import SearchQuery, open_repository
from acti_store.engine import VERSION_TABLE, migrations_dir

ROOT = Path(__file__).resolve().parents[1]
NO_DRIFT = "No new upgrade operations detected.\n"

#: The application's Alembic environment (docs/host-app.md shows it). ``APP_TABLE`` and
#: ``ACTI_SCHEMA`` are filled in per engine; ``APP_IGNORES_ACTI_STORE=0`` leaves the filter out
#: (the control).
APP_ENV = """\
import os

import sqlalchemy as sa
from alembic import context

from acti_store.migrations import ignore_acti_store

metadata = sa.MetaData()
sa.Table(
    "{app_table}",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("email", sa.String(200), nullable=False, unique=True),
)

config = context.config
engine = sa.create_engine(config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        include_schemas={include_schemas},
        include_name=(
            ignore_acti_store(schema="{acti_schema}")
            if os.environ.get("APP_IGNORES_ACTI_STORE", "1") == "1"
            else None
        ),
    )
    with context.begin_transaction():
        context.run_migrations()
"""

APP_REVISION = """\
import sqlalchemy as sa
from alembic import op

revision = "a1b2c3d4e5f6"
down_revision = None


def upgrade():
    op.create_table(
        "{app_table}",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("email", sa.String(200), nullable=False, unique=True),
    )


def downgrade():
    op.drop_table("{app_table}")
"""


class Projects:
    """The application's project and acti_store's ini in one folder, on one database."""

    def __init__(self, folder: Path, url: str, postgresql: bool) -> None:
        self.folder, self.url, self.postgresql = folder, url, postgresql
        self.app_table = "agents" if postgresql else "app_users"
        self.acti_schema = "acti" if postgresql else ""
        versions = folder / "app_migrations" / "versions"
        versions.mkdir(parents=True)
        fields = {
            "app_table": self.app_table,
            "acti_schema": self.acti_schema,
            "include_schemas": postgresql,
        }
        (folder / "app_migrations" / "env.py").write_text(APP_ENV.format(**fields))
        (versions / "a1b2c3d4e5f6_app_users.py").write_text(APP_REVISION.format(**fields))
        (folder / "alembic.ini").write_text(
            f"[alembic]\nscript_location = %(here)s/app_migrations\nsqlalchemy.url = {url}\n"
        )
        # From an installed wheel: script_location = acti_store:migrations (tests/test_wheel.py);
        # in this checkout the scripts are its migrations/ folder.
        schema_line = f"acti_store_schema = {self.acti_schema}\n" if postgresql else ""
        (folder / "acti_store.ini").write_text(
            f"[alembic]\nscript_location = {migrations_dir()}\nsqlalchemy.url = {url}\n"
            + schema_line
        )

    def alembic(self, ini: str, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "alembic", "-c", ini, *argv],
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), **env},
        )

    def step(self, ini: str, *argv: str) -> str:
        """Run one Alembic command that must succeed; what it printed."""
        done = self.alembic(ini, *argv)
        assert done.returncode == 0, (ini, argv, done.stdout, done.stderr)
        assert done.stderr == "", (ini, argv, done.stderr)
        return done.stdout

    def upgrade_and_check(self, ini: str) -> None:
        assert self.step(ini, "upgrade", "head") == ""
        assert self.step(ini, "check") == NO_DRIFT

    def both_check_clean(self) -> None:
        assert self.step("alembic.ini", "check") == NO_DRIFT
        assert self.step("acti_store.ini", "check") == NO_DRIFT

    def app_table_state(self) -> list[Any]:
        """The application's table as it sees it: rows, columns, indexes and its revision."""
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(sa.text(f"SELECT * FROM {self.app_table} ORDER BY id")).all()
                revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
                if self.postgresql:
                    ddl = conn.execute(
                        sa.text(
                            "SELECT column_name, data_type, is_nullable, column_default "
                            "FROM information_schema.columns WHERE table_schema = 'public' "
                            "AND table_name = :t ORDER BY 1"
                        ),
                        {"t": self.app_table},
                    ).all()
                    ddl += conn.execute(
                        sa.text(
                            "SELECT indexname, indexdef FROM pg_indexes "
                            "WHERE schemaname = 'public' ORDER BY 1"
                        )
                    ).all()
                else:
                    ddl = conn.execute(
                        sa.text(
                            "SELECT type, name, sql FROM sqlite_master "
                            "WHERE tbl_name IN (:t, 'alembic_version') ORDER BY name"
                        ),
                        {"t": self.app_table},
                    ).all()
            return [[tuple(r) for r in rows], [tuple(r) for r in revision], [tuple(r) for r in ddl]]
        finally:
            engine.dispose()

    def add_app_rows(self) -> None:
        engine = sa.create_engine(self.url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    sa.text(f"INSERT INTO {self.app_table} (email) VALUES (:e)"),
                    [{"e": "ada@example.com"}, {"e": "alan@example.com"}],
                )
        finally:
            engine.dispose()


@pytest.fixture(params=BACKENDS)
def projects(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Projects]:
    if request.param == "sqlite":
        yield Projects(tmp_path, f"sqlite:///{tmp_path / 'app.db'}", postgresql=False)
        return
    with fresh_postgres_database() as url:
        yield Projects(tmp_path, url, postgresql=True)


@pytest.mark.slow
@pytest.mark.parametrize("first", ["app", "acti_store"])
def test_both_projects_upgrade_and_check_clean_in_either_order(
    projects: Projects, first: str
) -> None:
    if first == "app":
        projects.upgrade_and_check("alembic.ini")
        projects.add_app_rows()
        before = projects.app_table_state()
        projects.upgrade_and_check("acti_store.ini")
    else:
        projects.upgrade_and_check("acti_store.ini")
        projects.upgrade_and_check("alembic.ini")
        projects.add_app_rows()
        before = projects.app_table_state()

    repo = open_repository(projects.url, schema=projects.acti_schema)
    try:
        repo.create(make_config())
        assert [a.name for a in repo.search(SearchQuery(query="qualif"))] == ["lead_qualifier"]
        assert repo.list_names() == ["lead_qualifier"]
    finally:
        repo.close()

    projects.both_check_clean()
    assert projects.app_table_state() == before
    current = projects.step("acti_store.ini", "current")
    app_current = projects.step("alembic.ini", "current")
    assert current.endswith(" (head)\n") and app_current == "a1b2c3d4e5f6 (head)\n"


@pytest.mark.slow
def test_without_the_filter_the_apps_check_sees_acti_stores_tables(projects: Projects) -> None:
    """The control: the application's own Alembic, not told which tables are acti_store's,
    reports them as drift (it would drop them), so the filter above is what keeps it clean."""
    assert projects.step("alembic.ini", "upgrade", "head") == ""
    assert projects.step("acti_store.ini", "upgrade", "head") == ""

    done = projects.alembic("alembic.ini", "check", APP_IGNORES_ACTI_STORE="0")

    assert done.returncode != 0
    assert "New upgrade operations detected" in done.stdout + done.stderr
    assert "remove_table" in done.stdout + done.stderr
    assert VERSION_TABLE in done.stdout + done.stderr
