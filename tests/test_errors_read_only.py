"""A store opened with ``read_only=True`` (``--read-only``) can be read where it cannot be written.

On both engines every write raises ``ReadOnlyStoreError`` and the tools answer with the store-error
text; the database itself refuses writes too (SQLite ``mode=ro``, PostgreSQL read-only
transactions). A SQLite store in a read-only folder, or a read-only file, is listed, shown,
searched and exported by a process that cannot write it.

The tests run as root, whom ``chmod`` does not stop. The unprivileged checks run the CLI in a
subprocess without the capabilities that let root bypass file permissions (``setpriv
--bounding-set=-dac_override,...``): the venv's Python lives under ``/root``, which ``nobody``
cannot even enter. As another user they run the CLI as is.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import (
    AgentUpdate,
    ExecutionRecord,
    ImportItem,
    ReadOnlyStoreError,
    SchemaVersionError,
    SqlAgentRepository,
    StoreUnavailableError,
    open_repository,
)
from acti_store.cli.store import QUICKSTART_AGENTS
from acti_store.tools.builder import BuilderTools

ROOT = Path(__file__).resolve().parents[1]
#: The capabilities that let root read and write whatever the permission bits say.
BYPASS_CAPABILITIES = "-dac_override,-dac_read_search,-fowner"


def seed(repo: SqlAgentRepository) -> None:
    for config in QUICKSTART_AGENTS:
        repo.create(config)
    repo.record_execution(
        "lead_qualifier",
        ExecutionRecord(
            timestamp=repo.now(),
            task="Qualify John",
            result_summary="HIGH priority",
            success=True,
            duration_seconds=1.5,
        ),
    )


@pytest.fixture
def reader(store_url: str) -> Iterator[SqlAgentRepository]:
    """A seeded store, opened again read-only."""
    writer = open_repository(store_url)
    seed(writer)
    writer.close()
    repo = open_repository(store_url, read_only=True)
    try:
        yield repo
    finally:
        repo.close()


def test_every_write_through_read_only_raises(reader: SqlAgentRepository) -> None:
    assert [a.name for a in reader.list_agents()] == sorted(c.name for c in QUICKSTART_AGENTS)
    assert reader.get_history("lead_qualifier").total_executions == 1
    before = reader.get("lead_qualifier")
    record = reader.get_history("lead_qualifier").executions[0]
    for write in (
        lambda: reader.create(make_config("new_agent")),
        lambda: reader.update("lead_qualifier", AgentUpdate(model="openai:gpt-4o")),
        lambda: reader.delete("lead_qualifier"),
        lambda: reader.clone("lead_qualifier", "copy_agent"),
        lambda: reader.record_execution("lead_qualifier", record),
        lambda: reader.bulk_put([ImportItem("new_agent", agent=before)]),
    ):
        with pytest.raises(
            ReadOnlyStoreError, match="is open read-only: nothing can be written"
        ) as e:
            write()
        assert isinstance(e.value, StoreUnavailableError) and e.value.transient is False
    assert reader.get("lead_qualifier") == before and not reader.exists("new_agent")


def test_the_database_itself_refuses_writes(reader: SqlAgentRepository) -> None:
    reader.read_only = False  # past the repository's own check: the connection must refuse
    with pytest.raises(ReadOnlyStoreError, match="cannot be written by this process"):
        reader.create(make_config("new_agent"))
    assert not reader.exists("new_agent")


def test_tools_on_a_read_only_store_answer_with_the_store_error(
    reader: SqlAgentRepository,
) -> None:
    tools = BuilderTools(lambda: reader)
    text, artifact = tools.update_agent_config(name="lead_qualifier", model="openai:gpt-4o")
    assert artifact["status"] == "error" and artifact["error"] == "store_error"
    assert text.startswith("ERROR: The agent store could not complete the request.")
    assert "is open read-only" in text
    assert artifact["transient"] is False and "Trying again will not help" in text  # lasting
    text, artifact = tools.list_created_agents()
    assert artifact["status"] == "success" and "lead_qualifier" in text


def test_read_only_does_not_migrate(store_url: str) -> None:
    with pytest.raises(SchemaVersionError, match="a read-only open does not upgrade it"):
        open_repository(
            _empty_sqlite(store_url) if store_url.startswith("sqlite") else store_url,
            read_only=True,
        )


def _empty_sqlite(store_url: str) -> str:
    path = Path(store_url.removeprefix("sqlite:///"))
    sqlite3.connect(path).close()  # an empty database file: no schema
    return store_url


def test_read_only_on_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "store.db"
    with pytest.raises(StoreUnavailableError, match=r"store\.db is not a file") as raised:
        open_repository(f"sqlite:///{missing}", read_only=True)
    assert raised.value.transient is False
    assert not missing.parent.exists()


# --------------------------------------------------------------------------------------------------
# A process that cannot write the store
# --------------------------------------------------------------------------------------------------


def unprivileged(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``acti-store argv`` in a process that file permissions apply to."""
    return unprivileged_python("-m", "acti_store", *argv)


def unprivileged_python(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``python argv`` in a process that file permissions apply to."""
    command = [sys.executable, *argv]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop the permission bypass")
        command = [setpriv, f"--bounding-set={BYPASS_CAPABILITIES}", *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACTI_STORE_EXPORT_DIR": ""}
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.fixture
def locked_folder(tmp_path: Path) -> Iterator[Path]:
    """A seeded store (merged, no side files) in a folder nobody may write."""
    source = tmp_path / "source" / "store.db"
    writer = open_repository(f"sqlite:///{source}")
    seed(writer)
    writer.close()
    folder = tmp_path / "locked"
    folder.mkdir()
    shutil.copy(source, folder / "store.db")
    (folder / "store.db").chmod(0o444)
    folder.chmod(0o555)
    probe = unprivileged("--help")
    if probe.returncode != 0:
        pytest.skip(f"cannot run an unprivileged process here: {probe.stderr.strip()[-200:]}")
    try:
        yield folder
    finally:
        folder.chmod(0o755)


def reads(url: str, export_to: Path) -> list[subprocess.CompletedProcess[str]]:
    return [
        unprivileged(*argv, "--url", url, "--read-only")
        for argv in (
            ("list",),
            ("show", "lead_qualifier"),
            ("search", "lead"),
            ("history", "lead_qualifier"),
            ("export", str(export_to)),
        )
    ]


def test_a_store_in_a_read_only_folder_can_be_read(locked_folder: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{locked_folder / 'store.db'}"
    refused = unprivileged("list", "--url", url)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(
        "error: cannot open the store: the store is read-only: attempt to write a readonly"
    )
    assert "--read-only" in refused.stderr

    exported = tmp_path / "exported"
    exported.mkdir(mode=0o777)
    exported.chmod(0o777)
    runs = reads(url, exported)
    assert [(r.returncode, r.stderr) for r in runs] == [(0, "")] * 5
    listing, show, search, history, export = (r.stdout for r in runs)
    assert "Total: 3 agent(s)" in listing and '"name": "lead_qualifier"' in show
    assert "1. lead_qualifier" in search and "Qualify John" in history
    assert "Exported 3 agent(s) and 1 history file(s)" in export
    assert sorted(os.listdir(locked_folder)) == ["store.db"]  # no side file, nothing written


#: Opens the store read-only, walks a search in pages, every agent, and exports it: one line of
#: JSON with what it saw.
PAGING_SCRIPT = """
import json, sys
from acti_store import SearchQuery, export_json, open_repository
repo = open_repository(sys.argv[1], read_only=True)
names, cursor = [], None
while True:
    page = repo.search_page(SearchQuery(limit=1), cursor)
    names += [agent.name for agent in page.agents]
    if (cursor := page.next_cursor) is None:
        break
report = export_json(repo, sys.argv[2])
print(json.dumps({
    "url": repo.engine.url.database, "pages": names, "total": page.total,
    "agents": [agent.name for agent in repo.iter_agents(page_size=1)],
    "exported": [report.agents, report.histories],
}))
"""


def test_a_store_in_a_read_only_folder_pages_and_exports(
    locked_folder: Path, tmp_path: Path
) -> None:
    """``immutable=1``: the export's one read transaction and ``search_page``'s work there."""
    exported = tmp_path / "exported"
    exported.mkdir(mode=0o777)
    exported.chmod(0o777)
    run = unprivileged_python(
        "-c", PAGING_SCRIPT, f"sqlite:///{locked_folder / 'store.db'}", str(exported)
    )
    assert (run.returncode, run.stderr) == (0, "")
    seen = json.loads(run.stdout)
    names = sorted(config.name for config in QUICKSTART_AGENTS)
    assert "immutable=1" in seen["url"]
    assert (seen["pages"], seen["agents"], seen["total"]) == (names, names, len(names))
    assert seen["exported"] == [len(names), 1]
    assert sorted(os.listdir(locked_folder)) == ["store.db"]  # no side file, nothing written


def test_a_read_only_file_in_a_writable_folder_can_be_read(
    locked_folder: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "open"
    folder.mkdir()
    shutil.copy(locked_folder / "store.db", folder / "store.db")
    (folder / "store.db").chmod(0o444)
    folder.chmod(0o777)
    exported = tmp_path / "exported"
    exported.mkdir()
    exported.chmod(0o777)
    runs = reads(f"sqlite:///{folder / 'store.db'}", exported)
    assert [(r.returncode, r.stderr) for r in runs] == [(0, "")] * 5


def test_an_unmerged_log_in_a_read_only_folder_is_read(locked_folder: Path) -> None:
    """``immutable=1`` would ignore a write-ahead log: with one there, the store opens ``mode=ro``
    and sees what the log holds."""
    locked_folder.chmod(0o755)
    database = locked_folder / "store.db"
    database.chmod(0o644)
    # A writer killed before it merged its log: -wal and -shm stay next to the file.
    script = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "c.execute(\"UPDATE agents SET description = 'Changed in the log only' "
        "WHERE name = 'research_assistant'\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(database)], check=True)
    assert (locked_folder / "store.db-wal").stat().st_size > 0
    for side in ("store.db", "store.db-wal", "store.db-shm"):
        (locked_folder / side).chmod(0o444)
    locked_folder.chmod(0o555)
    shown = unprivileged(
        "show", "research_assistant", "--url", f"sqlite:///{database}", "--read-only"
    )
    assert shown.returncode == 0, shown.stderr
    assert "Changed in the log only" in shown.stdout
