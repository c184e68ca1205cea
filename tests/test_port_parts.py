"""The port's optional parts (``RepositoryPort.parts``): a store has the parts it declares, and a
class that declares one without implementing it is refused where it is defined; a store that
declares none has the parts it implements every method of. The conformance kit runs the groups
of the parts a store has (``tests/test_conformance.py`` runs it on every store)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acti_store import AgentRepository, SqlAgentRepository
from acti_store.repository.port_parts import PARTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
from memory_adapter import InMemoryRepository


def test_the_sql_store_has_every_part_and_the_example_the_ones_it_implements() -> None:
    assert SqlAgentRepository.parts == frozenset(PARTS)
    assert InMemoryRepository.parts == {"interchange", "versions"}


def test_a_declared_part_left_unimplemented_is_refused_where_the_class_is_defined() -> None:
    with pytest.raises(TypeError, match=r"declares the part 'routing' but does not implement "):

        class Declared(InMemoryRepository):
            parts = frozenset({"versions", "routing"})

    with pytest.raises(TypeError, match=r"names no part of the port: rollouts"):

        class Unknown(InMemoryRepository):
            parts = frozenset({"rollouts"})


def test_a_store_without_a_part_says_so_when_it_is_called() -> None:
    class Core(InMemoryRepository):
        parts = frozenset()

    core = Core()
    assert Core.parts == frozenset()  # declared: the kit runs no group of the parts
    with pytest.raises(NotImplementedError, match="Core does not route by label"):
        core.resolve("lead_qualifier", "production")

    class Narrow(AgentRepository):  # an adapter of the core only: versions are not required
        pass

    assert Narrow.parts == frozenset()
    assert "versions" not in Narrow.__abstractmethods__
    with pytest.raises(NotImplementedError, match="Core keeps no configuration versions"):
        AgentRepository.versions(core, "lead_qualifier")


def test_the_version_tools_need_a_store_with_versions() -> None:
    from acti_store.tools import make_version_tools

    class Core(InMemoryRepository):
        parts = frozenset({"interchange"})

    with pytest.raises(TypeError, match="Core keeps no configuration versions"):
        make_version_tools(Core())
    assert len(make_version_tools(InMemoryRepository())) == 6
