"""A plain install (no extras) has no greenlet: SQLAlchemy 2.1 installs it only with its asyncio
extra. ``import acti_store``, the CLI's main job and the async API on SQLite (threads) must not
need it; only PostgreSQL's async API does, and then it says what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Runs first in the child: greenlet cannot be imported, as on a plain install.
NO_GREENLET = "import sys; sys.modules['greenlet'] = None\n"

ASYNC_ON_SQLITE = """
import asyncio
from acti_store import AgentConfig, open_repository

async def main() -> None:
    repo = open_repository("sqlite:///store.db")
    try:
        await repo.acreate(AgentConfig(
            name="lead_qualifier",
            description="Qualifies inbound leads by assessing BANT criteria",
            system_prompt="You are a professional lead qualification specialist. Assess budget, "
            "authority, need and timeline for every lead.",
        ))
        print((await repo.aget("lead_qualifier")).metadata.version)
    finally:
        await repo.aclose()

asyncio.run(main())
"""


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ACTI_STORE_URL"}
    return subprocess.run(
        [sys.executable, "-c", NO_GREENLET + code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_and_async_api_on_sqlite_need_no_greenlet(tmp_path: Path) -> None:
    done = _run(ASYNC_ON_SQLITE, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    imported = _run("import sys, acti_store, acti_store.tools\nprint(*sys.modules)", tmp_path)
    assert imported.returncode == 0, imported.stderr
    modules = imported.stdout.split()
    assert "acti_store.tools" in modules and "sqlalchemy.ext.asyncio" not in modules


def test_quickstart_needs_no_greenlet(tmp_path: Path) -> None:
    done = _run("from acti_store.cli import main\nmain(['quickstart'])", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "outputs" / "acti_store.db").is_file()
