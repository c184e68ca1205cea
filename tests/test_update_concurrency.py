"""``update_agent_config`` under concurrency: without an expected version, nothing is refused.

The tool gives the repository no expected version, so an update applies to the latest version;
the "Changes applied" text and the artifact compare the two versions the update's own
transaction saw, so each version is reported exactly once and each report's "before" is what the
previous version wrote.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from conftest import make_config
from langchain_core.messages import ToolMessage

from acti_store import AgentUpdate, SqlAgentRepository
from acti_store.tools import make_builder_tools

THREADS = 4
UPDATES = 100
HEADLINE = re.compile(r"SUCCESS: Agent 'lead_qualifier' updated \(v(\d+) -> v(\d+)\)\.")
CHANGE = re.compile(r'\n  - description: "([^"]*)" -> "([^"]*)"\n')


def test_concurrent_tool_updates_are_never_refused(repo: SqlAgentRepository) -> None:
    """4 threads x 100 tool updates of one agent: none refused, versions 2..401 each reported
    exactly once (text and artifact agree), each "before" is the description of the version
    it replaced."""
    initial = make_config(description="The first description")
    repo.create(initial)
    tool = {t.name: t for t in make_builder_tools(repo)}["update_agent_config"]
    barrier = threading.Barrier(THREADS)
    results: list[tuple[str, dict[str, Any]]] = []
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            barrier.wait()
            for j in range(UPDATES):
                message = tool.invoke(
                    {
                        "type": "tool_call",
                        "id": f"{k}-{j}",
                        "name": "update_agent_config",
                        "args": {"name": "lead_qualifier", "description": f"Thread {k}, no. {j}"},
                    }
                )
                assert isinstance(message, ToolMessage)
                results.append((str(message.content), message.artifact))
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    refused = [text for text, artifact in results if artifact["status"] != "success"]
    assert refused == []
    written: dict[int, str] = {1: initial.description}  # version -> the description it holds
    replaced: dict[int, str] = {}  # new version -> the "before" its report shows
    for text, artifact in results:
        headline = HEADLINE.match(text)
        change = CHANGE.search(text)
        assert headline is not None and change is not None, text
        old, new = int(headline[1]), int(headline[2])
        assert (old, new) == (
            artifact["previous_version"],
            artifact["agent"]["_metadata"]["version"],
        )
        assert new == old + 1 and new not in written
        assert artifact["changed"] == ["description"]
        assert change[2] == artifact["agent"]["description"]
        written[new] = change[2]
        replaced[new] = change[1]
    final = THREADS * UPDATES + 1
    assert sorted(written) == list(range(1, final + 1))
    assert all(replaced[v] == written[v - 1] for v in range(2, final + 1))
    stored = repo.get("lead_qualifier")
    assert (stored.metadata.version, stored.description) == (final, written[final])


def test_update_returning_previous_is_one_transaction(repo: SqlAgentRepository) -> None:
    """The repository returns the version it replaced next to the new one; ``update`` still
    returns the agent alone."""
    repo.create(make_config())
    outcome = repo.update_returning_previous("lead_qualifier", AgentUpdate(tags=["first"]))
    assert outcome.previous.tags == ["sales", "qualification"]
    assert (outcome.previous.metadata.version, outcome.agent.metadata.version) == (1, 2)
    assert outcome.agent == repo.get("lead_qualifier")
    agent = repo.update("lead_qualifier", AgentUpdate(tags=["second"]), expected_version=2)
    assert (agent.tags, agent.metadata.version) == (["second"], 3)
