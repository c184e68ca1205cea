"""The wheel ships the migrations: an installed acti_store opens a store from anywhere, and
Alembic runs its migrations from any folder with a minimal ini (``acti_store:migrations``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from installs import fresh_venv

from acti_store.engine import alembic_config

ROOT = Path(__file__).resolve().parents[1]
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()
TABLES = """
import sqlite3
print(*(r[0] for r in sqlite3.connect("app.db").execute("SELECT name FROM sqlite_master")))
"""

CHECK = """
import acti_store, pathlib, sys
from acti_store import open_repository
from acti_store.engine import migrations_dir
assert pathlib.Path(sys.prefix) in pathlib.Path(acti_store.__file__).parents, acti_store.__file__
assert migrations_dir() == pathlib.Path(acti_store.__file__).parent / "migrations", migrations_dir()
repo = open_repository("sqlite:///store.db")
repo.close()
print("opened", migrations_dir())
"""

#: The minimal ini for Alembic from an installed wheel (no logging sections): docs/architecture.md,
#: "Migrations".
MINIMAL_INI = """[alembic]
script_location = acti_store:migrations
sqlalchemy.url = sqlite:///app.db
"""


@pytest.mark.slow
def test_installed_wheel_finds_its_migrations(tmp_path: Path, built_wheel: Path) -> None:
    wheel = built_wheel
    python = fresh_venv(tmp_path / "venv")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True
    )
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    result = subprocess.run(
        [python, "-c", CHECK], cwd=workdir, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "opened" in result.stdout
    assert (workdir / "store.db").is_file()

    # Alembic from an empty folder, with a minimal ini and the installed package's scripts.
    appdir = tmp_path / "app"
    appdir.mkdir()
    (appdir / "alembic.ini").write_text(MINIMAL_INI)

    def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=appdir, capture_output=True, text=True, check=False)

    alembic = (python, "-m", "alembic", "-c", "alembic.ini")
    for step in (("upgrade", "head"), ("check",)):
        done = run(*alembic, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    current = run(*alembic, "current")
    assert current.returncode == 0, current.stderr
    assert f"{HEAD} (head)" in current.stdout
    check = run(python.parent / "acti-store", "migrate", "--check", "--url", "sqlite:///app.db")
    assert check.returncode == 0, check.stderr
    assert check.stdout == f"current: {HEAD}\nhead: {HEAD}\n"
    tables = run(python, "-c", TABLES)
    assert tables.returncode == 0, tables.stderr
    assert "acti_store_alembic_version" in tables.stdout.split()
    assert "alembic_version" not in tables.stdout.split()
