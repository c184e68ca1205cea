"""The conformance kit (``acti_store.testing.conformance``) run on our engines and on the docs'
in-memory adapter (``docs/examples/memory_adapter.py``), and shown to fail broken adapters, each
failure naming the rule it broke."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import fresh_store

from acti_store import AgentRepository, open_repository
from acti_store.models import HISTORY_MAX_RECORDS
from acti_store.repository import UpdateResult
from acti_store.testing.conformance import GROUPS, RepositoryConformance

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "memory_adapter.py"


def _load_example() -> Any:
    """The docs' example module, loaded from its file (it is not a package of ours)."""
    spec = importlib.util.spec_from_file_location("memory_adapter", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


memory_adapter = _load_example()
InMemoryRepository = memory_adapter.InMemoryRepository


class TestSqlConformance(RepositoryConformance):
    """The kit on each engine of conftest's ``BACKENDS`` (through ``store_url``): the first
    store of a test is ``store_url``'s, a further one (the round trip's second store) a new
    one on the same engine (``conftest.fresh_store``)."""

    supports_processes = True
    supports_changes = True
    supports_routing = True

    @pytest.fixture(autouse=True)
    def _stores(
        self, request: pytest.FixtureRequest, store_url: str, tmp_path: Path
    ) -> Iterator[None]:
        self._backend = request.node.callspec.params["store_url"]
        self._given: str | None = store_url
        self._tmp = tmp_path
        self._urls: dict[int, str] = {}
        with ExitStack() as self._more:
            yield

    def make_repository(self) -> AgentRepository:
        url, self._given = self._given or self._fresh_url(), None
        repository = open_repository(url)
        self._urls[id(repository)] = url
        return repository

    def open_again(self, repo: AgentRepository) -> AgentRepository:
        return open_repository(self._urls[id(repo)])

    def _fresh_url(self) -> str:
        folder = self._tmp / f"store_{len(self._urls)}"
        folder.mkdir()
        return self._more.enter_context(fresh_store(self._backend, folder))


class TestInMemoryConformance(RepositoryConformance):
    """The docs' example adapter passes the kit (so the page's claim stays true)."""

    def make_repository(self) -> AgentRepository:
        return InMemoryRepository()  # type: ignore[no-any-return]


# -- broken adapters: the kit must fail each, naming the rule it broke --------------------------


class KeepsFiftyOne(InMemoryRepository):  # type: ignore[misc,valid-type]
    """Keeps one record more than the FIFO allows."""

    def record_execution(self, name: str, record: Any, *, version: int | None = None) -> None:
        with self._lock:
            dropped = self._entry(name).runs[HISTORY_MAX_RECORDS - 1 : HISTORY_MAX_RECORDS]
            super().record_execution(name, record, version=version)
            self._entry(name).runs += dropped


class IgnoresTagFilter(InMemoryRepository):  # type: ignore[misc,valid-type]
    """Searches as if no tag were asked for."""

    def _matches(self, query: Any) -> Any:
        return super()._matches(query.model_copy(update={"tags": None}))


class KeepsTheVersion(InMemoryRepository):  # type: ignore[misc,valid-type]
    """Applies an update but leaves the version number where it was."""

    def _write_version(self, entry: Any, *args: Any) -> UpdateResult:
        result: UpdateResult = super()._write_version(entry, *args)
        meta = result.agent.metadata.model_copy(
            update={"version": result.previous.metadata.version}
        )
        entry.agent = result.agent.model_copy(update={"metadata": meta})
        return UpdateResult(result.previous, entry.agent)


BROKEN = [
    pytest.param(
        "KeepsFiftyOne",
        "fifo",
        "FIFO: a store keeps the newest 50 execution records per agent, this one kept 51",
        id="keeps-51-records",
    ),
    pytest.param(
        "IgnoresTagFilter",
        "tag_filter",
        "TAGS: a search by tags returns only the agents that have ALL of them: *",
        id="ignores-the-tag-filter",
    ),
    pytest.param(
        "KeepsTheVersion",
        "bumps_the_version",
        "VERSION: every update bumps the version by one: expected 2, got 1",
        id="no-version-bump",
    ),
]


def run_kit(pytester: pytest.Pytester, adapter: str, *args: str) -> pytest.RunResult:
    """The kit run by pytest (in this process) on ``adapter``, a class of this module."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_broken=f"""
        from {__name__} import {adapter}
        from acti_store.testing.conformance import RepositoryConformance

        class TestBroken(RepositoryConformance):
            def make_repository(self):
                return {adapter}()
        """
    )
    return pytester.runpytest("-p", "no:cacheprovider", *args)


@pytest.mark.parametrize(("adapter", "selection", "message"), BROKEN)
def test_the_kit_fails_a_broken_adapter_naming_the_rule(
    pytester: pytest.Pytester, adapter: str, selection: str, message: str
) -> None:
    result = run_kit(pytester, adapter, "-k", selection)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert result.parseoutcomes().get("failed", 0) >= 1
    result.stdout.fnmatch_lines([f"*{message}*"])


def test_the_whole_kit_on_a_broken_adapter_fails_only_where_it_breaks_a_rule(
    pytester: pytest.Pytester,
) -> None:
    """The adapter that ignores tags fails the tests that search by tags, and no other."""
    result = run_kit(pytester, "IgnoresTagFilter", "-rf")
    failed = {line.split("::")[-1].split(" ")[0] for line in result.outlines if "FAILED" in line}
    assert failed == {
        "test_tag_filter_keeps_agents_with_every_tag",
        "test_every_tag_an_agent_can_have",
        "test_search_follows_every_write",
        "test_bad_queries_are_refused",  # more tags than an agent can have: refused
    }, result.stdout.str()


def test_every_group_has_tests_and_the_kit_has_them_all() -> None:
    names = {name for name in dir(RepositoryConformance) if name.startswith("test_")}
    for group in GROUPS:
        own = {name for name in vars(group) if name.startswith("test_")}
        assert own, f"{group.__name__} has no test"
        assert own <= names, f"{group.__name__} is not part of RepositoryConformance"
