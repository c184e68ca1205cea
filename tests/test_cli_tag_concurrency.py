"""``acti-store update --add-tag/--remove-tag`` from several processes at once loses no tag.

The command edits the tag list it read and writes it expecting the version it read; when another
write came in between, it reads again and retries (``cli.write._cmd_update``). Each worker
process runs it on the same agent, all starting each round together (``workers.tags``). On SQLite
and on PostgreSQL.
"""

from __future__ import annotations

from conftest import make_config
from workers import tags

from acti_store import AgentUpdate, SqlAgentRepository
from acti_store.cli.options import cli_tools


def test_concurrent_tag_edits_from_the_cli_lose_no_tag(store_url: str) -> None:
    # 4 processes x 12 rounds, each adding its own new tag and removing its previous one: after
    # each round the agent holds exactly every worker's newest tag; one version per command.
    assert tags.tag_race(store_url, processes=4, rounds=12) == []


def test_an_update_expecting_an_old_version_is_a_conflict(repo: SqlAgentRepository) -> None:
    """What the CLI's tag edit retries on: the ``conflict`` refusal, nothing written."""
    repo.create(make_config())
    repo.update("lead_qualifier", AgentUpdate(description="Changed since it was read"))
    text, artifact = cli_tools(repo).update_agent_config(
        name="lead_qualifier", tags=["mine"], expected=1
    )
    assert artifact == {"status": "error", "error": "conflict", "name": "lead_qualifier"}
    assert text.startswith("ERROR: ") and "expected version 1, the store has 2" in text
    agent = repo.get("lead_qualifier")
    assert (agent.metadata.version, agent.tags) == (2, make_config().tags)
