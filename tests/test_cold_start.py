"""What a short-lived process loads: ``import acti_store`` and the reading commands on a store at
head leave Alembic, the other engines' dialects and the agents extra unloaded, and the reading
commands also the other commands, the MCP SDK, the tools' LangChain side, the runs, the
export machinery and the version tools; a stdio MCP server answers ``initialize`` before it
loads LangChain and the agent stack; every public name still resolves. Run the way a user runs
them, in a fresh interpreter, so that nothing this test session imported hides a regression.
(Their speed is ``python -m benchmarks.cold_start``'s.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_config
from mcp_harness import served

import acti_store
from acti_store import open_repository

#: Modules a call that needs none of them must not load: the migrations' machinery, the
#: PostgreSQL and MariaDB dialects (a SQLite store), and the agents extra.
NOT_NEEDED = (
    "alembic",
    "sqlalchemy.dialects.postgresql",
    "sqlalchemy.dialects.mysql",
    "langchain_core",
    "deepagents",
)

#: What ``show`` and ``list`` on a store at head do not need either (``cli.COMMAND_MODULES``:
#: only the command's own module builds its parser; the rest load in the commands that use them).
NOT_NEEDED_TO_READ = (
    *NOT_NEEDED,
    "mcp",
    "langchain",
    "langsmith",
    "langgraph",
    "acti_store.tools.specs",
    "acti_store.tools.langchain_tools",
    "acti_store.tools.defaults",
    "acti_store.tools.version_tools",
    "acti_store.execution.runner",
    "acti_store.mcp_server",
    "acti_store.interchange",
    "acti_store.revisions",
    "acti_store.cli.write",
    "acti_store.cli.versions",
    "acti_store.cli.relay",
    "acti_store.cli.serve_mcp",
    "acti_store.cli.tenants",
)

#: Runs ``acti_store.cli.main`` on the arguments given as JSON, then prints, on the last line,
#: the modules of ``NOT_NEEDED`` that were loaded (the command's own output comes before).
_PROBE = """
import json, sys
from acti_store.cli import main
status = main(json.loads(sys.argv[1]))
unwanted = json.loads(sys.argv[2])
print(json.dumps([m for m in unwanted if m in sys.modules]))
sys.exit(status)
"""


def _loaded_by(code: str, *args: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    *output, last = done.stdout.splitlines()
    return json.loads(last), "\n".join(output)


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('cold') / 'store.db'}"
    with open_repository(url, export_dir="") as repo:
        repo.create(make_config())
    return url


def test_importing_the_package_loads_none_of_them() -> None:
    probe = (
        "import json, sys, acti_store\n"
        f"print(json.dumps([m for m in {list(NOT_NEEDED)!r} if m in sys.modules]))\n"
    )
    loaded, _ = _loaded_by(probe)
    assert loaded == []


@pytest.mark.parametrize("command", [["show", "lead_qualifier"], ["list"]])
def test_a_reading_command_on_a_store_at_head_loads_none_of_them(
    store_url: str, command: list[str]
) -> None:
    argv = ["--url", store_url, *command]
    loaded, output = _loaded_by(_PROBE, json.dumps(argv), json.dumps(NOT_NEEDED_TO_READ))
    assert "lead_qualifier" in output  # the command did its work
    assert loaded == []


#: ``acti-store serve-mcp`` over stdio, printing on stderr at its exit which modules of the
#: agent stack (argv[2], JSON) it loaded.
_SERVER = """
import atexit, json, sys
stack = json.loads(sys.argv[2])
atexit.register(lambda: print(json.dumps([m for m in stack if m in sys.modules]), file=sys.stderr))
from acti_store.cli import main
sys.exit(main(["--url", sys.argv[1], "serve-mcp", "--transport", "stdio"]))
"""
#: What ``execute_created_agent`` needs and a stdio server loads after ``initialize``.
AGENT_STACK = ("langchain_core", "langsmith", "deepagents", "acti_store.tools.defaults")


@pytest.mark.parametrize("request_tools", [False, True])
async def test_a_stdio_server_loads_the_agent_stack_after_initialize(
    store_url: str, tmp_path: Path, request_tools: bool
) -> None:
    argv = [sys.executable, "-c", _SERVER, store_url, json.dumps(AGENT_STACK)]
    log = tmp_path / "server.log"
    async with served("stdio", argv, log) as server:  # initialized
        if request_tools:
            listed = await server.session.list_tools()
            assert "execute_created_agent" in {tool.name for tool in listed.tools}
    loaded = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
    # Only initialize: none of it; a first request: all of it (a run then finds it loaded).
    assert loaded == (list(AGENT_STACK) if request_tools else [])


def test_every_public_name_resolves_from_the_package() -> None:
    for name in acti_store.__all__:
        assert getattr(acti_store, name) is not None, name
    assert set(acti_store.__all__) <= set(dir(acti_store))
    namespace: dict[str, object] = {}
    exec("from acti_store import *", namespace)
    assert set(acti_store.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        acti_store.no_such_name  # noqa: B018 - the attribute access is the test


def test_the_public_names_are_where_they_are_defined() -> None:
    from acti_store import errors, models, repository

    assert acti_store.AgentConfig is models.AgentConfig
    assert acti_store.AgentNotFoundError is errors.AgentNotFoundError
    assert acti_store.SqlAgentRepository is repository.SqlAgentRepository
    assert Path(acti_store.__file__).name == "__init__.py"
