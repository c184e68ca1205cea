"""docs/host-app.md's Alembic recipe works as written on both installs (issue 49, item 8).

The ini of the page (``script_location = acti_store:migrations``) is read from the page itself,
given a SQLite URL of a fresh folder (and no schema: that is PostgreSQL's), and the page's
``alembic -c acti_store.ini upgrade head``, ``check`` and ``current`` run in a fresh virtual
environment where acti_store is installed as README says (``pip install -e .``, the checkout's
scripts are its top-level ``migrations/``), and where it is installed from its wheel (the
scripts inside the package).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from installs import fresh_venv

from acti_store.engine import alembic_config

ROOT = Path(__file__).resolve().parents[1]
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def recipe_ini(url: str) -> str:
    """docs/host-app.md's ``acti_store.ini``, on ``url`` and without a schema (SQLite)."""
    page = (ROOT / "docs" / "host-app.md").read_text(encoding="utf-8")
    (ini,) = [b for b in re.findall(r"```ini\n(.*?)```", page, re.S) if "script_location" in b]
    assert "script_location = acti_store:migrations\n" in ini
    lines = [line for line in ini.splitlines() if not line.startswith("acti_store_schema")]
    return "\n".join(
        re.sub(r"^sqlalchemy\.url = .*", f"sqlalchemy.url = {url}", line) for line in lines
    )


@pytest.mark.slow
@pytest.mark.parametrize("install", ["editable", "wheel"])
def test_the_host_app_alembic_recipe_runs_as_written(
    install: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    python = fresh_venv(tmp_path / "venv")
    if install == "editable":
        target = ["-e", str(ROOT)]
    else:  # the session's wheel (conftest.built_wheel), built once for every test installing it
        target = [str(request.getfixturevalue("built_wheel"))]
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", *target], check=True)
    app = tmp_path / "app"
    app.mkdir()
    (app / "acti_store.ini").write_text(recipe_ini("sqlite:///store.db"))
    where = subprocess.run(
        [python, "-c", "import acti_store; print(acti_store.__file__)"],
        cwd=app,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (Path(where).is_relative_to(ROOT)) == (install == "editable"), where

    def alembic(*argv: str) -> str:
        done = subprocess.run(
            [python, "-m", "alembic", "-c", "acti_store.ini", *argv],
            cwd=app,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        return done.stdout

    alembic("upgrade", "head")
    assert alembic("check") == "No new upgrade operations detected.\n"
    assert alembic("current") == f"{HEAD} (head)\n"
    assert (app / "store.db").is_file()
