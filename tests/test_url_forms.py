"""The URLs people paste (issue 49, item 5): a server's URL without its driver opens the store.

``postgres://`` (what Heroku, Render and Fly put in ``DATABASE_URL``) and ``postgresql://`` are
read as ``postgresql+psycopg://``; ``mysql://`` and ``mariadb://`` as PyMySQL's when it is
installed. Each form opens a real store (the async engine too), shows as the URL it was read as,
and, with the driver missing (a ``sitecustomize`` on ``PYTHONPATH`` blocks its import, as on an
install without the extra), the CLI names the driver and the extra in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MYSQL_URL, POSTGRES_URL, SKIP_MYSQL, SKIP_POSTGRES, make_config
from sqlalchemy import text
from sqlalchemy.engine import make_url

from acti_store import open_repository
from acti_store.engine import make_async_engine, resolve_url, store_location

ROOT = Path(__file__).resolve().parents[1]


def _as(url: str, scheme: str) -> str:
    """``url`` written with ``scheme`` (no driver), as pasted from a ``DATABASE_URL``."""
    return make_url(url).set(drivername=scheme).render_as_string(hide_password=False)


@pytest.mark.parametrize(
    ("given", "read_as"),
    [
        (
            "postgres://u:secret@db.example:5432/app",
            "postgresql+psycopg://u:***@db.example:5432/app",
        ),
        ("postgresql://u@db.example/app?sslmode=require", "postgresql+psycopg://u@db.example/app"),
        ("mysql://root@db.example/app", "mysql+pymysql://root@db.example/app"),
        ("mariadb://root@db.example/app", "mariadb+pymysql://root@db.example/app"),
        ("postgres+psycopg://u@db.example/app", "postgresql+psycopg://u@db.example/app"),
        ("mysql+mysqldb://root@db.example/app", "mysql+mysqldb://root@db.example/app"),
    ],
)
def test_a_url_without_its_driver_is_read_with_acti_store_s(given: str, read_as: str) -> None:
    assert store_location(resolve_url(given)).startswith(read_as)


@pytest.mark.postgresql
@pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES)
@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
async def test_each_postgresql_form_opens_the_store(scheme: str, postgres_schema: str) -> None:
    url = _as(postgres_schema, scheme)
    with open_repository(url) as repo:
        repo.create(make_config())
        assert repo.engine.url.drivername == "postgresql+psycopg"
        assert repo.location.startswith("postgresql+psycopg://")
    with open_repository(postgres_schema) as again:  # the same store as the full URL's
        assert again.get("lead_qualifier").metadata.version == 1
    engine = make_async_engine(url)
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM agents"))).scalar_one() == 1
        assert engine.url.drivername == "postgresql+psycopg_async"
    finally:
        await engine.dispose()


@pytest.mark.mysql
@pytest.mark.skipif(not MYSQL_URL, reason=SKIP_MYSQL)
@pytest.mark.parametrize("scheme", ["mysql", "mariadb"])
def test_each_mariadb_form_opens_the_store(scheme: str, mysql_database: str) -> None:
    with open_repository(_as(mysql_database, scheme)) as repo:
        repo.create(make_config())
        assert repo.engine.url.drivername == f"{scheme}+pymysql"
    with open_repository(mysql_database) as again:
        assert again.get("lead_qualifier").metadata.version == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "module", "says"),
    [
        (
            "mysql://root@127.0.0.1:9/app",
            "pymysql",
            "the mysql driver 'pymysql' is not installed",
        ),
        (
            "mariadb://root@127.0.0.1:9/app",
            "pymysql",
            "the mariadb driver 'pymysql' is not installed",
        ),
        (
            "postgres://u@127.0.0.1:9/app",
            "psycopg",
            "the postgresql driver 'psycopg' is not installed",
        ),
    ],
)
def test_a_missing_driver_is_named_with_its_extra(
    tmp_path: Path, url: str, module: str, says: str
) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()  # imported at startup: the driver cannot be imported, as without the extra
    (shim / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    env = {**os.environ, "PYTHONPATH": f"{shim}{os.pathsep}{ROOT}"}
    env.pop("ACTI_STORE_URL", None)
    extra = "mysql" if module == "pymysql" else "postgres"
    for argv in (["list", "--url", url], ["migrate", "--url", url]):
        done = subprocess.run(
            [sys.executable, "-m", "acti_store", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"error: {says}"), line
        assert line.endswith(f'Install it with: pip install "acti-store[{extra}]"'), line
        assert "mysqlclient" not in line
