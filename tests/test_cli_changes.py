"""``acti-store changes``: the change feed on the command line, run as a person runs it.

A real store on each engine (``store_url``), the command in a process of its own: the listing as
text and as JSON lines, ``--after``, ``--tenant``, a pruned position, and ``--follow`` picking up
a change another process makes, ended by Ctrl-C or SIGTERM with status 0 and no traceback.
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import IO, Any

import pytest
from conftest import make_config
from test_cli_errors_commands import acti_store, environment

from acti_store import Change, SqlAgentRepository, open_repository

pytestmark = pytest.mark.slow  # a process per command

#: A line of the listing: seq, time (UTC, ``Z``), kind, agent, version, label (if any).
LINE = re.compile(
    r"^(?P<seq>\d+)  (?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (?P<kind>[a-z_]+) +"
    r"(?P<agent>[a-z][a-z0-9_]*)  (?P<version>v\d+|-)(?:  (?P<label>[a-z][a-z0-9_-]*))?$"
)


def make_changes(repo: SqlAgentRepository) -> None:
    """One of each common kind: created (twice), updated, label_set, label_removed, deleted."""
    repo.create(make_config("lead_qualifier"))
    repo.create(make_config("support_bot"))
    repo.update("lead_qualifier", {"description": "Qualifies leads by BANT, second take"})
    repo.set_label("lead_qualifier", "production", 2)
    repo.remove_label("lead_qualifier", "production")
    repo.delete("support_bot")


#: What ``make_changes`` leaves in the feed: (kind, agent, version, label).
EXPECTED = [
    ("created", "lead_qualifier", 1, None),
    ("created", "support_bot", 1, None),
    ("updated", "lead_qualifier", 2, None),
    ("label_set", "lead_qualifier", 2, "production"),
    ("label_removed", "lead_qualifier", 2, "production"),
    ("deleted", "support_bot", 1, None),
]


def summary(change: Change) -> tuple[str, str, int | None, str | None]:
    return (change.kind, change.agent, change.version, change.label)


@pytest.fixture
def store(store_url: str) -> str:
    with open_repository(store_url) as repo:
        make_changes(repo)
    return store_url


def stored_changes(url: str, tenant: str | None = None) -> list[Change]:
    with open_repository(url, tenant=tenant) as repo:
        return repo.changes(limit=1000)


def test_the_listing_shows_every_change_oldest_first(store: str) -> None:
    changes = stored_changes(store)
    assert [summary(c) for c in changes] == EXPECTED

    text = acti_store(["changes", "--url", store])
    assert text.problems(0, None) == []
    rows = [LINE.match(line) for line in text.stdout.splitlines()]
    assert all(rows), text.stdout
    assert [
        (int(r["seq"]), r["kind"], r["agent"], r["version"], r["label"]) for r in rows if r
    ] == [(c.seq, c.kind, c.agent, f"v{c.version}", c.label) for c in changes]
    assert [r["at"] for r in rows if r] == [c.at.strftime("%Y-%m-%dT%H:%M:%SZ") for c in changes]

    as_json = acti_store(["--url", store, "changes", "--json"])  # --url before the command
    assert as_json.problems(0, None) == []
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [
        json.loads(json.dumps(c.to_json())) for c in changes
    ]
    assert all(json.loads(line)["tenant"] == "default" for line in as_json.stdout.splitlines())


def test_after_lists_only_the_changes_after_that_seq(store: str) -> None:
    changes = stored_changes(store)
    third = changes[2].seq
    done = acti_store(["changes", "--after", str(third), "--json", "--url", store])
    assert done.problems(0, None) == []
    assert [json.loads(line)["seq"] for line in done.stdout.splitlines()] == [
        c.seq for c in changes[3:]
    ]
    last = acti_store(["changes", "--after", str(changes[-1].seq), "--url", store])
    assert last.problems(0, None) == [] and last.stdout == ""


def test_more_changes_than_a_page(tmp_path_factory: pytest.TempPathFactory) -> None:
    """250 changes: read a page of 100 at a time, every one of them, once, in order."""
    url = f"sqlite:///{tmp_path_factory.mktemp('paging') / 'store.db'}"
    with open_repository(url) as repo:
        repo.create(make_config("lead_qualifier"))
        for number in range(249):
            repo.update("lead_qualifier", {"description": f"Qualifies leads, take {number}"})
    done = acti_store(["changes", "--json", "--url", url])
    assert done.problems(0, None) == []
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["version"] for line in lines] == list(range(1, 251))
    assert [line["seq"] for line in lines] == sorted({line["seq"] for line in lines})


def test_a_pruned_position_is_one_error_line(store: str) -> None:
    with open_repository(store) as repo:
        first = repo.changes()[0].seq
        repo.prune_changes(before=repo.now() + timedelta(seconds=1))
    done = acti_store(["changes", "--after", str(first), "--url", store])
    assert done.problems(1, "error: ") == [] and done.stdout == ""
    beyond = acti_store(["changes", "--after", "1000000", "--url", store])  # a store reset
    assert beyond.problems(1, "error: ") == [] and beyond.stdout == ""
    everything = acti_store(["changes", "--url", store])  # from the oldest kept: none left
    assert everything.problems(0, None) == [] and everything.stdout == ""


def test_tenant_shows_only_that_tenants_changes(store: str) -> None:
    with open_repository(store, tenant="acme") as acme:
        acme.create(make_config("acme_bot"))
        acme.update("acme_bot", {"description": "Answers Acme's customers, politely"})
    before = acti_store(["--tenant", "acme", "changes", "--json", "--url", store])
    after = acti_store(["changes", "--tenant", "acme", "--json", "--url", store])
    default = acti_store(["changes", "--json", "--url", store])
    for done in (before, after, default):
        assert done.problems(0, None) == []
    for done in (before, after):
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(line["kind"], line["agent"], line["tenant"]) for line in lines] == [
            ("created", "acme_bot", "acme"),
            ("updated", "acme_bot", "acme"),
        ]
    assert {json.loads(line)["agent"] for line in default.stdout.splitlines()} == {
        "lead_qualifier",
        "support_bot",
    }


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's foreground job gets it


def _lines(stream: IO[str]) -> tuple[queue.Queue[str], threading.Thread]:
    """The lines of ``stream`` as they come, read by a thread (a pipe read never blocks a test)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_follow_prints_a_change_another_process_makes(store: str, stop: signal.Signals) -> None:
    changes = stored_changes(store)
    process = subprocess.Popen(
        [sys.executable, "-m", "acti_store", "changes", "--follow", "--json", "--url", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        preexec_fn=_default_sigint,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        lines, reader = _lines(process.stdout)
        errors = process.stderr

        def next_line(timeout: float) -> Any:
            try:
                return json.loads(lines.get(timeout=timeout))
            except queue.Empty:
                process.kill()
                process.wait()
                pytest.fail(f"no line in {timeout} s; stderr: {errors.read()}")

        backlog = [next_line(60) for _ in changes]
        assert [line["seq"] for line in backlog] == [c.seq for c in changes]
        with open_repository(store) as repo:  # this test's process, not the follower's
            repo.update("lead_qualifier", {"description": "Qualifies leads, third take"})
            made = time.monotonic()
            new = repo.changes(after=changes[-1].seq)
        line = next_line(10)
        waited = time.monotonic() - made
        assert [line] == [json.loads(json.dumps(c.to_json())) for c in new]
        assert (line["kind"], line["agent"], line["version"]) == ("updated", "lead_qualifier", 3)
        assert waited < 3, f"the follower took {waited:.1f} s to print the change"
        process.send_signal(stop)
        process.wait(timeout=30)
        stderr = errors.read()
        reader.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, stderr) == (0, "")
    assert lines.empty()  # nothing more: no second copy of a change
