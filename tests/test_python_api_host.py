"""What a host application expects of the Python API: ``with``/``async with open_repository(...)``
closes the store, and ``create_builder_agent`` without the ``agents`` extra says what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_config

from acti_store import open_repository
from acti_store.repository import SqlAgentRepository
from acti_store.tools.texts import INSTALL_AGENTS_EXTRA

ROOT = Path(__file__).resolve().parents[1]


def counting_closes(repo: SqlAgentRepository) -> list[str]:
    """Record each ``close`` of ``repo`` (the store really closes too)."""
    calls: list[str] = []
    close = repo.close

    def recorded() -> None:
        calls.append("close")
        close()

    repo.close = recorded  # type: ignore[method-assign]
    return calls


def test_with_open_repository_closes_the_store(store_url: str) -> None:
    with open_repository(store_url) as repo:
        closes = counting_closes(repo)
        repo.create(make_config())
        assert isinstance(repo, SqlAgentRepository)
    assert closes == ["close"]
    with open_repository(store_url) as again:
        assert again.get("lead_qualifier").name == "lead_qualifier"


def test_with_closes_the_store_when_the_block_raises(store_url: str) -> None:
    with pytest.raises(KeyError), open_repository(store_url) as repo:
        closes = counting_closes(repo)
        raise KeyError("the host's own error goes on")
    assert closes == ["close"]


async def test_async_with_open_repository_acloses_the_store(store_url: str) -> None:
    async with open_repository(store_url) as repo:
        closes = counting_closes(repo)
        await repo.acreate(make_config())
        assert (await repo.aget("lead_qualifier")).name == "lead_qualifier"
    assert closes == ["close"]  # aclose: the async engine, then close on the store's threads
    with open_repository(store_url) as again:
        assert again.exists("lead_qualifier")


WITHOUT_AGENTS_EXTRA = """
import sys
sys.modules["deepagents"] = None  # as if the agents extra were not installed
from acti_store import open_repository
from acti_store.tools import create_builder_agent
with open_repository(sys.argv[1]) as repo:
    try:
        create_builder_agent("openai:gpt-4o", repo)
    except ImportError as exc:
        print(type(exc).__name__, exc, sep="\\n")
"""


@pytest.mark.slow  # a process of its own
def test_create_builder_agent_without_the_agents_extra_says_what_to_install(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_AGENTS_EXTRA, f"sqlite:///{tmp_path / 's.db'}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, "")
    kind, message = done.stdout.splitlines()
    assert kind == "MissingExtraError"  # an ImportError and an AgentStoreError
    assert message.startswith("create_builder_agent needs the agents extra (import of deepagents")
    assert message.endswith(f": {INSTALL_AGENTS_EXTRA}")
    assert INSTALL_AGENTS_EXTRA == 'pip install "acti-store[agents]"'  # the CLI's words too
