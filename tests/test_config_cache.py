"""``ConfigCache``: hits from memory, changes made by another process seen within
``max_staleness`` (through the change feed, or by reading again when the feed is down), and a
deleted agent's configurations never served again. On every engine (``store_url``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import Any

import pytest
from conftest import make_config
from mcp_harness import server_env

from acti_store import (
    AgentNotFoundError,
    AgentVersion,
    ArgumentTypeError,
    ConfigCache,
    InvalidInputError,
    LabelNotFoundError,
    SqlAgentRepository,
    StoreUnavailableError,
    open_repository,
)
from acti_store.routing import pick

#: Every store_url here is at head: the tests open it with options, not to migrate it.
pytestmark = pytest.mark.store_at_head

#: What a poll may take beyond ``max_staleness``: a get that reads the store, scheduling.
MARGIN = 0.3

#: Run in another process: ``argv[1]`` the store's URL, then a method of the repository and its
#: JSON arguments, in turn; prints ``time.time()`` once the last write returned (committed).
WRITER = textwrap.dedent(
    """
    import json, sys, time
    from acti_store import open_repository
    repo = open_repository(sys.argv[1])
    for method, args in json.loads(sys.argv[2]):
        getattr(repo, method)(*args)
    print(time.time(), flush=True)
    repo.close()
    """
)


def in_another_process(url: str, *calls: tuple[str, list[Any]]) -> subprocess.Popen[str]:
    """The writes ``calls`` in a process of their own (``WRITER``), started."""
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, json.dumps(calls)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )


def committed_at(process: subprocess.Popen[str]) -> float:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return float(out.strip())


def poll(
    read: Callable[[], AgentVersion | None], done: Callable[[AgentVersion | None], bool]
) -> tuple[AgentVersion | None, float]:
    """``read()`` every few ms until ``done`` says yes (30 s at most); its last answer and
    the wall-clock time it came."""
    deadline = time.monotonic() + 30
    while True:
        found = read()
        if done(found):
            return found, time.time()
        assert time.monotonic() < deadline, f"still {found!r}"
        time.sleep(0.002)


@pytest.fixture
def store(store_url: str) -> Iterator[SqlAgentRepository]:
    """A migrated store with agent ``a`` at versions 1 and 2, ``production`` at 1."""
    with closing(open_repository(store_url)) as repo:
        repo.create(make_config("a"))
        repo.update("a", {"description": "The second version of agent a, for the cache"})
        repo.set_label("a", "production", 1)
        yield repo


def test_a_hit_is_the_same_object_without_reading_the_store(
    store: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ConfigCache(store, max_staleness=60) as cache:
        current, production = cache.get("a"), cache.get("a", "production")
        assert (current.version, production.version) == (2, 1)
        assert production.labels == ["production"]

        def no_read(*args: Any, **kwargs: Any) -> AgentVersion:
            raise AssertionError("the store was read")

        monkeypatch.setattr(store, "get_version", no_read)
        monkeypatch.setattr(store, "aget_version", no_read)
        assert cache.get("a") is current
        assert cache.get("a", "production") is production


async def test_aget_hits_and_misses(store: SqlAgentRepository) -> None:
    with ConfigCache(store, max_staleness=60) as cache:
        first = await cache.aget("a", "production")
        assert first.version == 1
        assert await cache.aget("a", "production") is first
        assert cache.get("a", "production") is first


def test_a_split_label_sends_each_key_to_its_version_from_memory(
    store: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.set_label("a", "production", {1: 50, 2: 50})
    keys = [f"user-{i}" for i in range(200)]
    with ConfigCache(store, max_staleness=60) as cache:
        for key in keys:  # each version read once, then served from memory
            assert cache.get("a", "production", key).version == pick(
                {1: 50, 2: 50}, "a", "production", key
            )

        def no_read(*args: Any, **kwargs: Any) -> AgentVersion:
            raise AssertionError("the store was read")

        monkeypatch.setattr(store, "get_version", no_read)
        monkeypatch.setattr(store, "label_weights", no_read)
        routed = {key: cache.get("a", "production", key).version for key in keys}
        assert routed == {key: store.resolve("a", "production", key).version for key in keys}
        monkeypatch.undo()
        store.set_label("a", "production", 2)  # the feed drops the split
        deadline = time.monotonic() + 30
        while {cache.get("a", "production", key).version for key in keys} != {2}:
            assert time.monotonic() < deadline, "the split is still served"
            time.sleep(0.005)


def test_unknown_agents_and_labels_raise_the_stores_errors(store: SqlAgentRepository) -> None:
    with ConfigCache(store) as cache:
        with pytest.raises(AgentNotFoundError):
            cache.get("nobody_here")
        with pytest.raises(LabelNotFoundError):
            cache.get("a", "staging")


def test_a_label_moved_by_another_process_is_seen_within_max_staleness(
    store: SqlAgentRepository, store_url: str
) -> None:
    with ConfigCache(store, max_staleness=1.0) as cache:
        assert cache.get("a", "production").version == 1
        writer = in_another_process(store_url, ("set_label", ["a", "production", 2]))
        found, seen = poll(lambda: cache.get("a", "production"), lambda v: v.version == 2)
        elapsed = seen - committed_at(writer)
    assert found is not None and found.labels == ["production"]
    assert elapsed <= 1.0 + MARGIN


def test_the_feed_drops_a_changed_pointer_long_before_it_ages_out(
    store: SqlAgentRepository, store_url: str
) -> None:
    """With an hour's staleness allowed, the change feed alone makes the change seen."""
    with ConfigCache(store, max_staleness=3600) as cache:
        assert cache.get("a").version == 2
        writer = in_another_process(store_url, ("update", ["a", {"tags": ["fresh"]}]))
        found, seen = poll(lambda: cache.get("a"), lambda v: v.version == 3)
        elapsed = seen - committed_at(writer)
    assert found is not None and found.config.tags == ["fresh"]
    assert elapsed <= 5.0


def test_with_the_feed_down_get_reads_the_store_after_max_staleness(
    store: SqlAgentRepository, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("the change feed is down (test)")

    for method in ("watch", "changes", "last_change"):
        monkeypatch.setattr(store, method, down)
    with (
        ConfigCache(store, max_staleness=2.0) as cache,
        closing(open_repository(store_url)) as other,
    ):
        held = cache.get("a", "production")
        other.set_label("a", "production", 2)
        moved = time.time()
        assert cache.get("a", "production") is held  # fresh: read moments ago
        _, seen = poll(lambda: cache.get("a", "production"), lambda v: v.version == 2)
    assert held.version == 1
    assert seen - moved <= 2.0 + MARGIN


def test_a_deleted_and_recreated_agent_is_not_served_its_old_config(
    store: SqlAgentRepository, store_url: str
) -> None:
    def current() -> AgentVersion | None:
        try:
            return cache.get("a")
        except AgentNotFoundError:
            return None

    with ConfigCache(store, max_staleness=3600) as cache:
        old = cache.get("a")
        writer = in_another_process(
            store_url,
            ("delete", ["a"]),
            ("create", [make_config("a", description="Agent a, created again").model_dump()]),
        )
        found, _ = poll(current, lambda v: v is not None and v is not old)
        committed_at(writer)
        assert found is not None
        assert found.version == 1 and found.config.description == "Agent a, created again"
        assert cache.get("a") is found


def test_max_staleness_must_be_a_positive_number_of_seconds(repo: SqlAgentRepository) -> None:
    for wrong in (0, -1.0, float("nan"), 86_401):
        with pytest.raises(InvalidInputError, match="max_staleness"):
            ConfigCache(repo, max_staleness=wrong)
    with pytest.raises(ArgumentTypeError, match="max_staleness"):
        ConfigCache(repo, max_staleness="1")  # type: ignore[arg-type]
