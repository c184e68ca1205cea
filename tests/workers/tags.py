"""``acti-store update --add-tag/--remove-tag`` run by several processes on one agent at once.

Each worker owns one tag at a time: in round ``r`` it runs ``update NAME --add-tag w{k}-r{r}
--remove-tag w{k}-r{r-1}`` through the CLI's ``main`` (the command's own read and write, its own
store opened per command), every worker starting the round together. A tag edit that rewrote the
list read before another worker's write would lose that worker's tag or bring back its old one.
"""

from __future__ import annotations

import contextlib
import io
import re
from multiprocessing.synchronize import Barrier

from acti_store import open_repository
from acti_store.cli import main

from .harness import context, run_children
from .scenarios import TIMEOUT, agent_config

#: The agent's own tag, which no worker touches.
BASE_TAG = "base"
HEADLINE = re.compile(r"SUCCESS: Agent '[a-z_]+' updated \(v(\d+) -> v(\d+)\)\.")


def worker_tag(worker: int, round_: int) -> str:
    return f"w{worker}-r{round_}"


def expected_tags(workers: int, round_: int) -> set[str]:
    """The tags once every worker has run round ``round_`` (-1: none has run yet)."""
    if round_ < 0:
        return {BASE_TAG}
    return {BASE_TAG} | {worker_tag(k, round_) for k in range(workers)}


def edit_own_tag(
    url: str, worker: int, rounds: int, name: str, barrier: Barrier
) -> list[tuple[int, str, str, list[str]]]:
    """Run this worker's ``rounds`` commands; return, per round, the exit status, stdout and
    stderr of the command, and the tags read at the start of the round, before anyone wrote."""
    outcomes: list[tuple[int, str, str, list[str]]] = []
    for round_ in range(rounds):
        barrier.wait()  # every worker is done with the previous round
        repo = open_repository(url, migrate=False)
        try:
            before = repo.get(name).tags
        finally:
            repo.close()
        barrier.wait()  # every worker has read: the round's writes start together
        argv = ["update", name, "--add-tag", worker_tag(worker, round_)]
        if round_ > 0:
            argv += ["--remove-tag", worker_tag(worker, round_ - 1)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([*argv, "--url", url])
        outcomes.append((status, out.getvalue(), err.getvalue(), before))
    return outcomes


def tag_race(url: str, *, processes: int, rounds: int) -> list[str]:
    """``processes`` workers edit their own tag of one agent ``rounds`` times, together: every
    command succeeds with its own version, and after each round the agent holds exactly every
    worker's newest tag and its own."""
    repo = open_repository(url)
    try:
        repo.create(agent_config("tagged", tags=[BASE_TAG]))
        ctx = context()
        barrier = ctx.Barrier(processes, timeout=TIMEOUT)
        obtained = run_children(
            ctx,
            edit_own_tag,
            [(url, worker, rounds, "tagged", barrier) for worker in range(processes)],
            timeout=TIMEOUT,
        )
        problems = []
        versions: list[int] = []
        for worker, outcomes in enumerate(obtained):
            for round_, (status, out, err, before) in enumerate(outcomes):
                headline = HEADLINE.match(out)
                if status != 0 or err or headline is None:
                    problems.append(f"worker {worker} round {round_}: status {status}, {err!r}")
                    continue
                old, new = int(headline[1]), int(headline[2])
                if new != old + 1:
                    problems.append(f"worker {worker} round {round_}: v{old} -> v{new}")
                versions.append(new)
                if set(before) != expected_tags(processes, round_ - 1) or len(before) != len(
                    set(before)
                ):
                    problems.append(f"round {round_} started with tags {before}")
        if sorted(versions) != list(range(2, processes * rounds + 2)):
            problems.append(f"versions written: {sorted(versions)}")
        agent = repo.get("tagged")
        if set(agent.tags) != expected_tags(processes, rounds - 1):
            problems.append(f"final tags {agent.tags}")
        if agent.metadata.version != processes * rounds + 1:
            problems.append(f"final version {agent.metadata.version}")
        return problems
    finally:
        repo.close()
