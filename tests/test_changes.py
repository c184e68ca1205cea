"""The change feed (issue 29): what each write appends, reading it from a position, retention,
consumers' checkpoints, tenants, and watching it as changes commit, on every engine."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, make_config, migrate_from_template
from sqlalchemy import text

from acti_store import (
    Change,
    ChangesExpiredError,
    ExecutionRecord,
    InvalidInputError,
    SqlAgentRepository,
    VersionConflictError,
    export_json,
    import_json,
    open_repository,
)


def kinds(changes: list[Change]) -> list[tuple[Any, ...]]:
    return [(c.kind, c.agent, c.version, c.label) for c in changes]


def test_each_write_appends_its_change_in_commit_order(
    repo: SqlAgentRepository, clock: FakeClock
) -> None:
    repo.create(make_config("alpha"))
    repo.update("alpha", {"description": "Qualifies leads, second version"})
    repo.set_label("alpha", "production", 1)
    repo.set_label("alpha", "production", 1)  # already there: no move, no change
    repo.set_label("alpha", "production", 2)
    repo.remove_label("alpha", "production")
    repo.rollback("alpha", 1)
    repo.clone("alpha", "beta")
    repo.record_execution(
        "alpha",
        ExecutionRecord(
            timestamp=clock(), task="t", result_summary="ok", success=True, duration_seconds=1.0
        ),
    )
    assert repo.prune_versions("alpha", 0) == 2
    assert repo.prune_versions("alpha", 0) == 0  # nothing pruned: no change
    repo.delete("beta")
    with pytest.raises(VersionConflictError):  # a refused write appends nothing
        repo.update("alpha", {"model": "openai:gpt-4o"}, expected_version=1)

    changes = repo.changes()
    assert kinds(changes) == [
        ("created", "alpha", 1, None),
        ("updated", "alpha", 2, None),
        ("label_set", "alpha", 1, "production"),
        ("label_set", "alpha", 2, "production"),
        ("label_removed", "alpha", 2, "production"),
        ("updated", "alpha", 3, None),  # the rollback
        ("created", "beta", 1, None),
        ("versions_pruned", "alpha", 3, None),
        ("deleted", "beta", 1, None),
    ]
    assert [c.seq for c in changes] == list(range(1, 10))
    assert {c.tenant for c in changes} == {"default"}
    assert all(a.at < b.at for a, b in itertools.pairwise(changes))  # the store's clock
    assert repo.last_change() == 9
    assert kinds(repo.changes(after=6, limit=2)) == kinds(changes[6:8])
    assert repo.changes(after=9) == []
    assert changes[1].to_json() == {
        "seq": 2,
        "kind": "updated",
        "agent": "alpha",
        "version": 2,
        "label": None,
        "at": changes[1].at.isoformat().replace("+00:00", "Z"),
        "tenant": "default",
    }


def test_an_import_appends_a_change_per_agent_it_creates_or_replaces(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    for name in ("alpha", "beta"):
        repo.create(make_config(name))
    export_json(repo, tmp_path)
    repo.delete("alpha")
    start = repo.last_change()
    import_json(repo, tmp_path, on_conflict="skip")  # alpha made again, beta skipped
    assert kinds(repo.changes(after=start)) == [("created", "alpha", 1, None)]
    start = repo.last_change()
    import_json(repo, tmp_path, on_conflict="replace")
    assert sorted(kinds(repo.changes(after=start))) == [
        ("updated", "alpha", 1, None),
        ("updated", "beta", 1, None),
    ]


def test_a_pruned_position_is_refused_never_skipped(
    repo: SqlAgentRepository, clock: FakeClock
) -> None:
    repo.create(make_config("alpha"))
    clock.advance(hours=2)
    repo.update("alpha", {"description": "Qualifies leads, second version"})
    cutoff = clock.current
    clock.advance(hours=2)
    repo.update("alpha", {"description": "Qualifies leads, third version"})

    assert repo.prune_changes(cutoff) == 2
    assert repo.prune_changes(cutoff) == 0
    assert [c.seq for c in repo.changes()] == [3]  # None: from the oldest kept
    assert [c.seq for c in repo.changes(after=2)] == [3]  # a consumer that saw 2 loses nothing
    with pytest.raises(ChangesExpiredError) as caught:
        repo.changes(after=1)
    assert (caught.value.after, caught.value.oldest) == (1, 3)
    assert "changes up to 2 were pruned" in str(caught.value)
    with pytest.raises(ChangesExpiredError, match="the newest change is 3"):
        repo.changes(after=7)  # a position this store never gave: not a silent gap either
    with pytest.raises(InvalidInputError, match="limit"):
        repo.changes(limit=0)
    with pytest.raises(InvalidInputError, match="after"):
        repo.changes(after=-1)
    with pytest.raises(InvalidInputError, match="time zone"):
        repo.prune_changes(cutoff.replace(tzinfo=None))


def test_keep_changes_prunes_after_writes(store_url: str, request: pytest.FixtureRequest) -> None:
    migrate_from_template(request, store_url)
    clock = FakeClock()
    repo = open_repository(store_url, clock=clock, keep_changes=timedelta(seconds=1))
    try:
        assert repo.keep_changes == timedelta(seconds=1)
        repo.create(make_config("alpha"))
        # The store's clock, not the machine's, says when it prunes next (a tenth of
        # keep_changes after the last time): no wait for the machine's.
        clock.advance(hours=1)
        repo.update("alpha", {"description": "Qualifies leads, second version"})
        assert [c.seq for c in repo.changes()] == [2]
        with pytest.raises(ChangesExpiredError):
            repo.changes(after=0)
    finally:
        repo.close()
    with pytest.raises(InvalidInputError, match="keep_changes"):
        open_repository(store_url, keep_changes=timedelta(0))


def test_checkpoints_keep_a_consumers_position(repo: SqlAgentRepository) -> None:
    assert repo.checkpoint("relay_one") is None
    repo.save_checkpoint("relay_one", 4)
    repo.save_checkpoint("relay_one", 7)
    repo.save_checkpoint("relay_two", 1)
    assert (repo.checkpoint("relay_one"), repo.checkpoint("relay_two")) == (7, 1)
    assert repo.changes() == []  # a checkpoint is not a change
    with pytest.raises(InvalidInputError):
        repo.save_checkpoint("not a name", 1)


def test_each_tenant_has_its_own_feed(repo: SqlAgentRepository, store_url: str) -> None:
    repo.create(make_config("alpha"))
    acme = open_repository(store_url, tenant="acme")
    try:
        acme.create(make_config("alpha"))
        acme.delete("alpha")
        acme.save_checkpoint("relay", 2)
        assert kinds(acme.changes()) == [
            ("created", "alpha", 1, None),
            ("deleted", "alpha", 1, None),
        ]
        assert {c.tenant for c in acme.changes()} == {"acme"}
        assert kinds(repo.changes()) == [("created", "alpha", 1, None)]
        assert (repo.last_change(), acme.last_change()) == (1, 2)
        assert repo.checkpoint("relay") is None
    finally:
        acme.close()


WRITE_LATER = """
import sys, time
from acti_store import open_repository
repo = open_repository(sys.argv[1], export_dir="")
time.sleep(float(sys.argv[2]))
repo.update("alpha", {"description": "Qualifies leads, written by another process"})
repo.set_label("alpha", "production", 2)
repo.close()
"""


def _write_later(url: str, delay: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITE_LATER, url, str(delay)])


def test_watch_delivers_what_another_process_commits(
    repo: SqlAgentRepository, store_url: str
) -> None:
    repo.create(make_config("alpha"))
    writer = _write_later(store_url, 0.5)
    try:
        seen: list[Change] = []
        for change in repo.watch(timeout=60):  # from now: alpha's creation is not repeated
            seen.append(change)
            if len(seen) == 2:
                break
    finally:
        assert writer.wait(timeout=60) == 0
    assert kinds(seen) == [("updated", "alpha", 2, None), ("label_set", "alpha", 2, "production")]
    everything = kinds(list(repo.watch(after=0, timeout=0.3)))
    assert everything == [("created", "alpha", 1, None), *kinds(seen)]

    async def drain() -> list[Change]:
        return [change async for change in repo.awatch(after=0, timeout=0.3)]

    assert kinds(asyncio.run(drain())) == everything
    with pytest.raises(InvalidInputError, match="timeout"):
        repo.watch(timeout=-1)


def _backend_pids(repo: SqlAgentRepository) -> list[int]:
    """The server sessions of the store's database other than this one's (the watcher's)."""
    backend = repo.engine.dialect.name
    with repo.engine.connect() as conn:
        if backend == "postgresql":
            query = "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"
        else:
            query = (
                "SELECT id FROM information_schema.processlist "
                "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
            )
        return [row[0] for row in conn.execute(text(query))]


def _kill(repo: SqlAgentRepository, pids: list[int]) -> None:
    with repo.engine.connect() as conn:
        for pid in pids:
            if repo.engine.dialect.name == "postgresql":
                conn.execute(text(f"SELECT pg_terminate_backend({pid})"))
            else:
                conn.execute(text(f"KILL {pid}"))


def test_awatch_goes_on_after_its_connection_is_lost(
    repo: SqlAgentRepository, store_url: str
) -> None:
    if repo.engine.dialect.name == "sqlite":
        pytest.skip("SQLite: a file, no connection to lose")
    repo.create(make_config("alpha"))

    async def follow() -> list[Change]:
        seen: list[Change] = []
        watcher = repo.awatch()
        first = asyncio.ensure_future(anext(watcher))
        await asyncio.sleep(0.5)  # the watcher is waiting on its connection
        _kill(repo, _backend_pids(repo))
        await asyncio.sleep(0.3)
        writer = _write_later(store_url, 0)
        try:
            seen.append(await asyncio.wait_for(first, 30))
            seen.append(await asyncio.wait_for(anext(watcher), 30))
        finally:
            await watcher.aclose()
            assert await asyncio.to_thread(writer.wait, 60) == 0
        return seen

    seen = asyncio.run(follow())
    assert kinds(seen) == [("updated", "alpha", 2, None), ("label_set", "alpha", 2, "production")]


def test_awatch_is_woken_within_a_moment(repo: SqlAgentRepository, store_url: str) -> None:
    """Not a benchmark (``benchmarks/changes.py`` measures it): a change another process
    commits reaches a waiting watcher through its signal, well before the watcher's own
    fallback read (``WAIT_SLICE``, a second) would find it."""
    repo.create(make_config("alpha"))

    async def follow() -> float:
        watcher = repo.awatch()
        pending = asyncio.ensure_future(anext(watcher))
        await asyncio.sleep(0.3)
        other = open_repository(store_url, export_dir="")
        try:
            await asyncio.to_thread(
                other.update, "alpha", {"description": "Qualifies leads, second version"}
            )
            committed = time.monotonic()
            change = await asyncio.wait_for(pending, 10)
            assert change.version == 2
            return time.monotonic() - committed
        finally:
            other.close()
            await watcher.aclose()

    assert asyncio.run(follow()) < 0.4


def test_pruning_never_leaves_a_hole_when_clocks_disagree(
    repo: SqlAgentRepository, clock: FakeClock
) -> None:
    """A writer whose clock is behind stamps a later change earlier: it stays, with every change
    numbered after the first one kept."""
    start = clock.current
    repo.create(make_config("alpha"))  # 1, at start
    clock.advance(hours=2)
    repo.create(make_config("beta"))  # 2, two hours on
    clock.set(start)
    repo.create(make_config("gamma"))  # 3, stamped back at the start by a clock behind
    assert repo.prune_changes(start + timedelta(hours=1)) == 1
    assert [c.agent for c in repo.changes()] == ["beta", "gamma"]


#: A process that ends an ``awatch`` while its signal waits, the wait made a minute long.
_ENDS_WHILE_WAITING = """
import asyncio, sys, time
from acti_store import open_repository
from acti_store.repository.roles import changes
changes.WAIT_SLICE = 60.0
repo = open_repository(sys.argv[1], export_dir="")

async def follow():
    watcher = repo.awatch()
    pending = asyncio.ensure_future(anext(watcher))
    await asyncio.sleep(0.5)  # the watcher's thread is in its minute-long wait
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    await watcher.aclose()

asyncio.run(follow())
repo.close()
print(time.monotonic(), flush=True)
"""


def test_a_process_ends_at_once_with_a_watch_it_ended(
    repo: SqlAgentRepository, store_url: str
) -> None:
    """An ``awatch`` ended while its signal waits does not keep its process alive until the
    wait is over (an MCP server over stdio, whose client closed stdin, exits at once)."""
    child = subprocess.run(
        [sys.executable, "-c", _ENDS_WHILE_WAITING, store_url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    exited = time.monotonic()
    assert child.returncode == 0, child.stderr
    assert exited - float(child.stdout) < 30  # not the minute the signal would still wait
