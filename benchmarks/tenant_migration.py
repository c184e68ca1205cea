"""How long revision ``0009_tenants`` holds its locks on a 100,000-agent PostgreSQL store.

Builds a store at ``0008_mariadb_search`` in a database of its own (dropped at the end), fills it
with raw SQL (``INSERT ... SELECT generate_series``: N agents, two tags, one version snapshot and
its run statistics each, three history records each), then upgrades it to ``0009_tenants`` the
way ``open_repository`` does (``revisions.upgrade_schema``, one transaction) while three other
sessions run:

- a reader, ``SELECT id, version FROM agents WHERE name = ...`` in a loop;
- a writer, ``UPDATE agents SET execution_count = execution_count + 1 WHERE name = ...``;
- a sampler of ``pg_locks`` (every few milliseconds): which relations the migration holds in
  ``ACCESS EXCLUSIVE`` or ``SHARE`` mode, first and last seen.

The clients run as the superuser the URL names, so row-level security (which the revision turns
on) does not hide the rows from them. Each client's longest call while the migration ran is how
long it stalled behind the migration's locks. Then the same for the downgrade back to 0008.

    python -m benchmarks.tenant_migration [--url URL] [--agents 100000] [--out FILE]

URL default: ``$ACTI_STORE_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg
import sqlalchemy as sa

from acti_store.engine import make_engine
from acti_store.revisions import upgrade_schema

from .measure import git_state

BEFORE = "0008_mariadb_search"
STRONG = ("AccessExclusiveLock", "ShareLock", "ExclusiveLock", "ShareRowExclusiveLock")

FILL = [
    """INSERT INTO agents (name, description, system_prompt, tools, model, stratum, created_at,
        builder, tools_mask, tags, updated_at, last_executed_at, version, execution_count,
        success_count, error_count, total_executions)
    SELECT 'agent_' || lpad(i::text, 7, '0'),
        'Qualifies inbound leads by BANT criteria, agent number ' || i,
        repeat('You are a careful assistant. ', 8), '["crm", "communication"]',
        'anthropic:claude-sonnet-4-5', (ARRAY['RTI', 'RAI', 'ZACS', 'EEI', 'IGE'])[1 + i % 5],
        now() - i * interval '1 minute', 'acti-agent-builder', 17, '["sales", "b2b"]',
        now() - i * interval '30 seconds', now(), 1, 3, 3, 0, 3
    FROM generate_series(1, :n) AS i""",
    "INSERT INTO agent_tags (tag, agent_id) SELECT 'sales', id FROM agents",
    "INSERT INTO agent_tags (tag, agent_id) SELECT 'b2b', id FROM agents",
    """INSERT INTO agent_versions (agent_id, version, description, system_prompt, tools, model,
        stratum, tags, created_at)
    SELECT id, 1, description, system_prompt, tools, model, stratum, tags, created_at
    FROM agents""",
    """INSERT INTO agent_version_stats (agent_id, version, runs, successes, errors,
        duration_total, last_executed_at)
    SELECT id, 1, 3, 3, 0, 4.5, now() FROM agents""",
    """INSERT INTO executions (agent_id, agent_name, execution_id, timestamp, task,
        result_summary, success, duration_seconds, tool_calls_count, agent_version)
    SELECT a.id, a.name, md5(a.id::text || '-' || k), now() - k * interval '1 hour',
        'Qualify the lead from Acme Corp', 'HIGH priority', true, 1.5, 2, 1
    FROM agents a CROSS JOIN generate_series(1, 3) AS k""",
]


@dataclass
class Client:
    """A session calling one statement in a loop; each call's start and end (monotonic s)."""

    name: str
    conninfo: str
    statement: str
    params: tuple[object, ...]
    calls: list[tuple[float, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self.stop.is_set():
                    start = time.monotonic()
                    cursor = conn.execute(self.statement, self.params)
                    if cursor.description is not None:
                        cursor.fetchall()
                    self.calls.append((start, time.monotonic()))
                    time.sleep(0.002)
        except BaseException as exc:  # reported by the caller
            self.error = exc

    def longest(self, start: float, end: float) -> tuple[float, int]:
        """The longest call that overlapped ``start``..``end`` (ms), and how many did."""
        overlapping = [b - a for a, b in self.calls if b >= start and a <= end]
        return (max(overlapping) * 1e3 if overlapping else float("nan")), len(overlapping)

    def typical(self, before: float) -> float:
        """The median call (ms) before ``before``."""
        spans = sorted(b - a for a, b in self.calls if b < before)
        return spans[len(spans) // 2] * 1e3 if spans else float("nan")


@dataclass
class LockSampler:
    """Samples ``pg_locks``: each (relation, mode) held in a strong mode by another session,
    with the first and last time it was seen."""

    conninfo: str
    seen: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    samples: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run(self) -> None:
        query = (
            "SELECT coalesce(c.relname, l.relation::text), l.mode FROM pg_locks l "
            "LEFT JOIN pg_class c ON c.oid = l.relation "
            "WHERE l.granted AND l.locktype = 'relation' AND l.mode = ANY(%s) "
            "AND l.pid <> pg_backend_pid() "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                while not self.stop.is_set():
                    now = time.monotonic()
                    for relation, mode in conn.execute(query, (list(STRONG),)).fetchall():
                        span = self.seen.setdefault((relation, mode), [now, now])
                        span[1] = now
                    self.samples += 1
                    time.sleep(0.003)
        except BaseException as exc:
            self.error = exc


def timed_with_clients(conninfo: str, label: str, work: Callable[[], object]) -> list[str]:
    """Run ``work`` while the reader, the writer and the sampler run; describe what they saw."""
    clients = [
        Client(
            "reader",
            conninfo,
            "SELECT id, version FROM agents WHERE name = %s",
            ("agent_0000042",),
        ),
        Client(
            "writer",
            conninfo,
            "UPDATE agents SET execution_count = execution_count + 1 WHERE name = %s",
            ("agent_0000043",),
        ),
    ]
    sampler = LockSampler(conninfo)
    threads = [threading.Thread(target=c.run) for c in clients]
    threads.append(threading.Thread(target=sampler.run))
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    start = time.monotonic()
    work()
    end = time.monotonic()
    time.sleep(1.0)
    for client in clients:
        client.stop.set()
    sampler.stop.set()
    for thread in threads:
        thread.join()
    for error in [c.error for c in clients] + [sampler.error]:
        if error is not None:
            raise RuntimeError(f"{label}: a client failed") from error
    lines = [f"{label}: {end - start:.2f} s"]
    for client in clients:
        longest, count = client.longest(start, end)
        lines.append(
            f"  {client.name:<7} longest call while it ran {longest:8.1f} ms "
            f"({count} calls; typical call before it {client.typical(start):.2f} ms)"
        )
    lines.append(
        f"  pg_locks, sampled {sampler.samples} times: strong locks of the migration "
        "(first seen .. last seen, from its start; a number is a relation it made, not yet "
        "committed)"
    )
    held = sorted(sampler.seen.items(), key=lambda item: (item[1][0], item[0]))
    for (relation, mode), (first, last) in held:
        if relation.startswith("pg_"):
            continue
        lines.append(
            f"    {relation:<34} {mode:<22} {(first - start) * 1e3:8.1f} .. "
            f"{(last - start) * 1e3:8.1f} ms  (held >= {(last - first) * 1e3:.1f} ms)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("ACTI_STORE_TEST_POSTGRES_URL"))
    parser.add_argument("--agents", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not args.url:
        parser.error("give --url (a PostgreSQL server's URL) or ACTI_STORE_TEST_POSTGRES_URL")
    server = sa.make_url(args.url)
    database = f"acti_mig_{uuid.uuid4().hex[:10]}"
    url = server.set(database=database)
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    state = git_state()
    lines = [
        f"benchmarks.tenant_migration, commit {state['commit']}, {args.agents:,} agents, "
        f"load average at start {os.getloadavg()[0]:.1f}",
    ]
    print(lines[0], flush=True)
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{database}"')
    engine = make_engine(url.render_as_string(hide_password=False))
    try:
        upgrade_schema(engine, BEFORE)
        started = time.monotonic()
        with engine.begin() as conn:
            for statement in FILL:
                conn.execute(sa.text(statement), {"n": args.agents})
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
            counts = {
                table: conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar()
                for table in ("agents", "agent_tags", "agent_versions", "executions")
            }
            size = conn.exec_driver_sql(
                "SELECT pg_size_pretty(pg_database_size(current_database()))"
            ).scalar()
        lines.append(
            f"filled at {BEFORE} in {time.monotonic() - started:.1f} s: "
            + ", ".join(f"{t} {n:,}" for t, n in counts.items())
            + f"; database {size}"
        )
        print(lines[-1], flush=True)
        steps = (("upgrade to 0009_tenants", "head"), (f"downgrade to {BEFORE}", BEFORE))
        for label, target in steps:
            block = timed_with_clients(conninfo, label, partial(upgrade_schema, engine, target))
            print("\n".join(block), flush=True)
            lines += block
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.dispose()
    lines.append(f"load average at the end {os.getloadavg()[0]:.1f}")
    print(lines[-1])
    if args.out:
        with args.out.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
