"""What every group of the conformance kit shares: the fixture that makes a store, the switches
of the optional groups, and small helpers (a valid configuration, a run, a snapshot of a store).

The kit needs pytest (``pip install "acti-store[dev]"``, or ``pip install pytest``); it is
imported only with ``acti_store.testing.conformance``, never with ``acti_store``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, TypeVar

import pytest

from ...models import AgentConfig, ExecutionRecord
from ...repository import AgentRepository
from ...repository.port_parts import PARTS

E = TypeVar("E", bound=BaseException)


class Refusal(Generic[E]):
    """What ``refused`` caught: ``value`` is the exception, once the block has raised it."""

    value: E


@contextmanager
def refused(kind: type[E], rule: str) -> Iterator[Refusal[E]]:
    """The block must raise ``kind``: otherwise the test fails with ``rule`` and what happened
    (``pytest.raises`` says only "DID NOT RAISE", not which rule was broken)."""
    refusal: Refusal[E] = Refusal()
    try:
        yield refusal
    except kind as exc:
        refusal.value = exc
        return
    except Exception as exc:
        pytest.fail(f"{rule}: expected {kind.__name__}, got {type(exc).__name__}: {exc}")
    pytest.fail(f"{rule}: expected {kind.__name__}, nothing was raised")


#: The configuration of the contract's example (``make_config`` overrides any field).
EXAMPLE: dict[str, Any] = {
    "name": "lead_qualifier",
    "description": "Qualifies inbound leads by assessing BANT criteria",
    "system_prompt": "You are a professional lead qualification specialist. "
    "Assess budget, authority, need and timeline for every lead.",
    "tools": ["communication", "crm"],
    "stratum": "RAI",
    "tags": ["sales", "qualification"],
}


def make_config(name: str = "lead_qualifier", **overrides: Any) -> AgentConfig:
    """A valid configuration (the contract's example) called ``name``, any field overridden."""
    return AgentConfig.model_validate(EXAMPLE | {"name": name} | overrides)


def run(
    repo: AgentRepository,
    name: str,
    task: str = "task",
    *,
    success: bool = True,
    duration: float = 2.0,
    version: int | None = None,
) -> ExecutionRecord:
    """Record one run of ``name``, stamped with the store's clock; returns the record."""
    record = ExecutionRecord(
        timestamp=repo.now(),
        task=task,
        result_summary=f"done: {task}",
        success=success,
        duration_seconds=duration,
        tool_calls_count=1,
        error_type=None if success else "ExecutionError",
    )
    repo.record_execution(name, record, version=version)
    return record


def snapshot(repo: AgentRepository) -> list[tuple[str, str]]:
    """Every agent and its history, as text: what a refused write must leave unchanged."""
    return [
        (agent.model_dump_json(), repo.get_history(agent.name, 50).model_dump_json())
        for agent in repo.list_agents()
    ]


class ConformanceBase(ABC):
    """The fixture and switches of ``RepositoryConformance``.

    Subclass ``RepositoryConformance`` (not this), name the subclass ``Test...`` so pytest
    collects it, and define ``make_repository``. The groups of the port's optional parts run
    for the parts the store has (``RepositoryPort.parts``: the ones it declares, else the ones
    it implements every method of); the class attributes below switch groups on too.
    """

    #: The async twins (``aget``, ``acreate``, ...). ``AgentRepository`` gives every adapter
    #: them (its sync methods run on the store's threads), so the group is on by default.
    supports_async: ClassVar[bool] = True
    #: Several handles on one store, as several processes would hold it: define
    #: ``open_again`` too. Off by default (an in-memory store has one handle only).
    supports_processes: ClassVar[bool] = False
    #: The change feed (``changes``, ``prune_changes``, checkpoints). Off by default: a port
    #: without one raises ``NotImplementedError``.
    supports_changes: ClassVar[bool] = False
    #: Labels that route and protect (splits, ``resolve``, gates, ``rollback_label``). Off by
    #: default: a port without them raises ``NotImplementedError``.
    supports_routing: ClassVar[bool] = False
    #: Configuration versions and labels; on for a store that has the ``versions`` part.
    supports_versions: ClassVar[bool] = False
    #: The export's streams and the bulk put; on for a store with the ``interchange`` part.
    supports_interchange: ClassVar[bool] = False
    #: The parts of the store under test (set by the ``repo`` fixture).
    parts: frozenset[str] = frozenset()

    @abstractmethod
    def make_repository(self) -> AgentRepository:
        """A fresh repository on an empty store: every call a store of its own."""

    def open_again(self, repo: AgentRepository) -> AgentRepository:
        """Another repository on ``repo``'s store, as another process would open it (for the
        ``supports_processes`` group). The kit closes it."""
        raise NotImplementedError("set supports_processes = True and define open_again")

    @pytest.fixture
    def repo(self) -> Iterator[AgentRepository]:
        """A fresh, empty store from ``make_repository``, closed after the test."""
        repository = self.make_repository()
        self.parts = type(repository).parts
        try:
            yield repository
        finally:
            repository.close()

    def requires(self, switch: str) -> None:
        """Skip the test unless the class attribute ``switch`` is true, or (for a switch of
        one of the port's optional parts, ``supports_<part>``) the store has that part."""
        part = switch.removeprefix("supports_")
        if getattr(self, switch) or part in self.parts:
            return
        has = f" and the store has no part {part!r}" if part in PARTS else ""
        pytest.skip(f"{type(self).__name__}.{switch} is False{has}: this optional group is off")
