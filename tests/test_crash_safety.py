"""A process killed with SIGKILL mid-write leaves a valid store; re-running the work finishes it.

Each cycle starts a child that loops on one operation, kills it at a random moment, and checks the
store: SQLite's ``integrity_check``, then the invariants the operation must keep whatever point it
was interrupted at (see ``workers.checks``). The next cycle's child re-runs the interrupted work
on the store the killed one left behind. The scenarios live in ``workers.scenarios``;
``benchmarks/stress.py --kill-cycles`` runs more cycles.
"""

from __future__ import annotations

from workers import scenarios

#: Kill cycles per operation.
CYCLES = 20
#: Agents in each import or export: enough files that a kill usually lands mid-operation.
FILES = 60


def test_killed_record_execution_loses_or_half_writes_nothing(store_url: str) -> None:
    assert scenarios.killed_records(store_url, cycles=CYCLES) == []


def test_killed_update_leaves_one_whole_version(store_url: str) -> None:
    assert scenarios.killed_updates(store_url, cycles=CYCLES) == []


def test_killed_import_imports_every_agent_or_none(store_url: str) -> None:
    assert scenarios.killed_imports(store_url, cycles=CYCLES, files=FILES) == []


def test_killed_export_leaves_whole_files(store_url: str) -> None:
    assert scenarios.killed_exports(store_url, cycles=CYCLES, files=FILES) == []
