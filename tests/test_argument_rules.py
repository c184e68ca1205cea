"""Every bad argument of the Python API is an ``InvalidInputError``, checked before anything is
read or written (README guarantee 9; the rules are in ``acti_store.validation``).

One row per call that once let a raw exception out (``AttributeError``, ``TypeError``, a
driver's ``OverflowError``), wrote what it should not have (a misspelled ``on_conflict``
replaced agents, ``delete_history="no"`` deleted the history) or read a ``bool`` or a string as
an integer (``get_history(limit=True)``). Each row runs on SQLite and PostgreSQL, through the
sync methods and through their async twins, against one seeded store per engine that must be
exactly as it was after every refused call.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    APIS,
    BACKENDS,
    AsyncDriven,
    FakeClock,
    fresh_store,
    make_config,
)

from acti_store import (
    AgentRepository,
    AgentStoreError,
    ArgumentTypeError,
    ExecutionRecord,
    ImportItem,
    InvalidAgentError,
    InvalidInputError,
    SqlAgentRepository,
    export_json,
    import_json,
    open_repository,
)
from acti_store.interchange import rewrite_documents
from acti_store.models import COUNTER_MAX, INTEGER_MAX
from acti_store.repository import CONFLICT_POLICIES

BIG = 2**63  # one past what a 64-bit column (and SQLite's driver) takes
HUGE = 10**30


@dataclass
class Store:
    """One seeded store of an engine: its URL, the repository, and a folder exported from it."""

    url: str
    repo: SqlAgentRepository
    folder: Path
    #: The stored agent ``base``, changed: what a wrongly honoured "replace" would write.
    changed: ImportItem


def _record(repo: SqlAgentRepository) -> ExecutionRecord:
    return ExecutionRecord(
        timestamp=repo.now(),
        task="Qualify",
        result_summary="done",
        success=True,
        duration_seconds=1.0,
    )


@pytest.fixture(scope="module", params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """A store per engine for the whole module: agent ``base`` at version 2 with a label and a
    run, exported to a folder. Refused calls write nothing, so the rows can share it."""
    tmp = tmp_path_factory.mktemp("arguments")
    with fresh_store(request.param, tmp) as url:
        repo = open_repository(url, clock=FakeClock())
        try:
            repo.create(make_config("base"))
            agent = repo.update("base", {"model": "openai:gpt-4o"})
            repo.set_label("base", "prod", 1)
            repo.record_execution("base", _record(repo))
            export_json(repo, tmp / "folder")
            changed = agent.model_copy(
                update={"description": "Changed by a replace that was wrong"}
            )
            yield Store(url, repo, tmp / "folder", ImportItem("base", agent=changed))
        finally:
            repo.close()


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest, store: Store) -> Iterator[SqlAgentRepository]:
    """The module's store, called through its sync methods or through their async twins."""
    if request.param == "sync":
        yield store.repo
        return
    driven = AsyncDriven(store.repo)
    try:
        yield driven  # type: ignore[misc]  # the same methods, each through its twin
    finally:
        driven.close()


def _state(repo: SqlAgentRepository) -> tuple[Any, ...]:
    """Everything a refused call could have changed."""
    return (
        repo.list_agents(),
        repo.get_history("base", limit=50),
        repo.versions("base"),
        repo.label_history("base"),
        repo.label_weights("base"),
        repo.label_gates("base"),
        repo.archived_history("base"),
    )


class Color(enum.IntEnum):
    RED = 1


TYPE, VALUE, AGENT = ArgumentTypeError, InvalidInputError, InvalidAgentError

#: ``(call, what it raises)``: the call is Python run with ``r`` (the store, through the sync
#: methods or the async twins), ``folder`` (an export of it), ``changed`` (an ``ImportItem`` of
#: ``base`` changed: what a wrong "replace" writes), ``url`` (the store's) and ``run`` (a record).
ROWS: list[tuple[str, type[InvalidInputError]]] = [
    # 1. a misspelled on_conflict wrote: import_json replaced, bulk_put "replaced"
    *((f"import_json(r, folder, on_conflict={p!r})", VALUE) for p in ("Skip", "SKIP", " skip", "")),
    ("import_json(r, folder, on_conflict=None)", TYPE),
    ("import_json(r, folder, on_conflict='Skip', dry_run=True)", VALUE),
    *((f"r.bulk_put([changed], on_conflict={p!r})", VALUE) for p in ("explode", "REPLACE", "Fail")),
    ("r.bulk_put([changed], on_conflict=None)", TYPE),
    ("r.bulk_put_stream(lambda: [changed], on_conflict='explode')", VALUE),
    # 2. a truthy string is not True: a flag is True or False
    *((f"r.delete('base', delete_history={v!r})", TYPE) for v in ("no", "yes", 0, 1, None)),
    ("r.get_history('base', errors_only='no')", TYPE),
    ("import_json(r, folder, on_conflict='replace', dry_run='no')", TYPE),
    ("import_json(r, folder, all_or_nothing=1)", TYPE),
    ("import_json(r, folder, on_conflict='replace', allow_incomplete='no')", TYPE),
    ("export_json(r, folder, prune='no')", TYPE),
    ("export_json(r, folder, durable=1)", TYPE),
    ("export_json(r, folder, versions='yes')", TYPE),
    ("rewrite_documents(folder, dry_run='no')", TYPE),
    ("open_repository(url, read_only='no')", TYPE),
    ("open_repository(url, migrate='no')", TYPE),
    # 3. raw exceptions got out: AttributeError, TypeError, a driver's OverflowError
    ("r.create(None)", TYPE),
    ("r.create({})", AGENT),
    ("r.create('base')", TYPE),
    ("r.create({'name': 'base2'})", AGENT),
    ("r.record_execution('base', {})", VALUE),
    ("r.record_execution('base', None)", TYPE),
    ("r.search(None)", TYPE),
    ("r.search('lead')", TYPE),
    ("r.search({'limit': 0})", VALUE),
    ("r.search({'sort_by': 'size'})", VALUE),
    ("r.count(None)", TYPE),
    ("r.search_page(None)", TYPE),
    ("r.bulk_put('x')", TYPE),
    ("r.bulk_put([None])", TYPE),
    ("r.bulk_put([changed, 'x'])", TYPE),
    ("r.bulk_put_stream(lambda: [changed, None], on_conflict='replace')", TYPE),
    ("r.clone('base', 5)", AGENT),
    ("r.clone(5, 'copy')", TYPE),
    ("r.get(None)", TYPE),
    ("r.exists(5)", TYPE),
    ("r.labels(None)", TYPE),
    ("r.label_history(None)", TYPE),
    ("r.label_weights(None)", TYPE),
    ("r.label_gates(5)", TYPE),
    ("r.version_stats(5)", TYPE),
    ("r.version_log(None)", TYPE),
    ("r.get_with_history(None)", TYPE),
    ("r.execution_stats(5)", TYPE),
    ("r.archived_history(5)", TYPE),
    ("r.get_version(None)", TYPE),
    ("list(r.iter_agents(page_size='x'))", TYPE),
    ("list(r.iter_agents(page_size=True))", TYPE),
    ("list(r.iter_agents(page_size=10**30))", VALUE),
    ("list(r.iter_agents(page_size=0))", VALUE),
    ("list(r.iter_export(page_size='x'))", TYPE),
    ("list(r.iter_export(page_size=10**30))", VALUE),
    ("list(r.iter_export_versions(page_size='x'))", TYPE),
    ("list(r.iter_export_versions(page_size=0))", VALUE),
    ("r.versions('base', limit=2**63)", VALUE),
    ("r.versions('base', limit=0)", VALUE),
    ("r.versions('base', limit=True)", TYPE),
    ("r.versions('base', limit='5')", TYPE),
    ("r.first_by_stratum(2**63)", VALUE),
    ("r.first_by_stratum(0)", VALUE),
    ("r.first_by_stratum(True)", TYPE),
    ("r.first_by_stratum('5')", TYPE),
    ("r.prune_versions('base', keep=2**63)", VALUE),
    ("r.prune_versions('base', keep=-1)", VALUE),
    ("r.prune_versions('base', keep=True)", TYPE),
    ("r.prune_versions('base', keep='1')", TYPE),
    ("open_repository(url, keep_versions=10**30)", VALUE),
    ("open_repository(url, keep_versions=True)", TYPE),
    ("open_repository(url, keep_versions='3')", TYPE),
    *((f"open_repository(url, lock_timeout={v})", VALUE) for v in ("float('inf')", "float('nan')")),
    *((f"open_repository(url, lock_timeout={v!r})", VALUE) for v in (0, -1.0, 1e12)),
    ("open_repository(url, lock_timeout=True)", TYPE),
    ("open_repository(url, lock_timeout='5')", TYPE),
    ("open_repository(url, engine_options=[1])", TYPE),
    ("open_repository(url, schema=5)", TYPE),
    ("open_repository(url, clock=5)", TYPE),
    ("open_repository(url, mirror=5)", TYPE),
    ("open_repository(url, export_dir=5)", TYPE),
    ("export_json(r, None)", TYPE),
    ("export_json(r, folder, progress=5)", TYPE),
    ("import_json(r, folder, progress=5)", TYPE),
    # ... and every other integer, version numbers too, by the same rule
    ("r.update('base', {'model': 'openai:gpt-5'}, expected_version=True)", TYPE),
    ("r.update('base', {'model': 'openai:gpt-5'}, expected_version='2')", TYPE),
    ("r.update('base', {'model': 'openai:gpt-5'}, message=5)", TYPE),
    ("r.update('base', ['model'])", TYPE),
    ("r.update_returning_previous('base', {'model': 'openai:gpt-5'}, expected_version=True)", TYPE),
    ("r.rollback('base', 1, expected_version=True)", TYPE),
    ("r.rollback('base', True)", TYPE),
    ("r.get_version('base', True)", TYPE),
    ("r.get_version('base', 2**63)", VALUE),
    ("r.diff('base', True, 2)", TYPE),
    ("r.set_label('base', 'prod', True)", TYPE),
    ("r.set_label('base', 5, 1)", TYPE),
    ("r.set_label('base', 'prod', 2, note=b'x')", TYPE),
    ("r.remove_label('base', 'prod', note=5)", TYPE),
    # 4b. routing by label: splits, keys, gates, forced moves and rollbacks
    ("r.set_label('base', 'prod', {1: 50, 2: 40})", VALUE),
    ("r.set_label('base', 'prod', {1: 50, 2: '50'})", TYPE),
    ("r.set_label('base', 'prod', {1: 101})", VALUE),
    ("r.set_label('base', 'prod', {})", VALUE),
    ("r.set_label('base', 'prod', [1, 2])", TYPE),
    ("r.set_label('base', 'prod', {1: 10} | {i: 9 for i in range(2, 12)})", VALUE),
    ("r.set_label('base', 'prod', 2, expected_version={1: 60, 2: 60})", VALUE),
    ("r.set_label('base', 'prod', 2, force=True)", VALUE),
    ("r.set_label('base', 'prod', 2, force='yes', note='why')", TYPE),
    ("r.rollback_label('base', 'prod', force=True)", VALUE),
    ("r.rollback_label('base', 5)", TYPE),
    ("r.rollback_label('base', 'prod', note=5)", TYPE),
    ("r.resolve('base', 'prod', key=5)", TYPE),
    ("r.resolve('base', 'prod', key='')", VALUE),
    ("r.resolve('base', 'prod', key='k' * 201)", VALUE),
    ("r.resolve('base', 'Prod')", VALUE),
    ("r.compare_versions('base', 1, 1)", VALUE),
    ("r.compare_versions('base', True, 2)", TYPE),
    ("r.compare_versions('base', 1, 0)", VALUE),
    ("r.protect_label('base', 'prod', min_runs=-1)", VALUE),
    ("r.protect_label('base', 'prod', min_runs=True)", TYPE),
    ("r.protect_label('base', 'prod', min_success_rate=1.5)", VALUE),
    ("r.protect_label('base', 'prod', min_success_rate='0.9')", TYPE),
    ("r.protect_label('base', 'prod', max_mean_duration=0)", VALUE),
    ("r.protect_label('base', 'prod', max_mean_duration='3')", TYPE),
    ("r.protect_label('base', 'Prod')", VALUE),
    ("r.unprotect_label('base', 5)", TYPE),
    ("r.record_execution('base', run, version=True)", TYPE),
    ("r.record_execution('base', run, version='1')", TYPE),
    ("r.record_execution('base', run, version=0)", VALUE),
    # 4. one rule for integers: get_history read True as 1 and "5" as 5
    *((f"r.get_history('base', limit={v!r})", TYPE) for v in (True, False, "5", 5.0)),
    ("r.get_history('base', limit=2**63)", VALUE),
    ("r.get_history('base', limit=0)", VALUE),
    # 5. the change feed: positions, limits, times, consumer names and waits
    *((f"r.changes(after={v!r})", TYPE) for v in (True, "3", 1.0)),
    ("r.changes(after=-1)", VALUE),
    ("r.changes(after=2**63)", VALUE),
    ("r.changes(limit=0)", VALUE),
    ("r.changes(limit=10_001)", VALUE),
    ("r.prune_changes('2026-01-01')", TYPE),
    ("r.prune_changes(r.now().replace(tzinfo=None))", VALUE),
    ("r.checkpoint(5)", TYPE),
    ("r.checkpoint('Not A Name')", VALUE),
    ("r.save_checkpoint('relay', -1)", VALUE),
    ("r.save_checkpoint('relay', True)", TYPE),
    ("r.save_checkpoint('bad name', 1)", VALUE),
    ("list(r.watch(timeout=-1))", VALUE),
    ("list(r.watch(timeout='1'))", TYPE),
    ("list(r.watch(after=True))", TYPE),
    # 6. a mapping for a model is checked by its strict rules: a wrong type is refused, never
    #    converted (search({"limit": True}) found 1 agent; a bytes name was created)
    *((f"r.search({{'limit': {v!r}}})", VALUE) for v in (True, "2", 2.0)),
    ("r.search_page({'limit': '2'})", VALUE),
    ("r.count({'min_executions': True})", VALUE),
    ("r.count({'min_executions': '1'})", VALUE),
    *((f"r.record_execution('base', dict(run, success={v!r}))", VALUE) for v in ("false", 1)),
    ("r.record_execution('base', dict(run, tool_calls_count='3'))", VALUE),
    ("r.record_execution('base', dict(run, timestamp=1736499600))", VALUE),
    ("r.record_execution('base', dict(run, timestamp=b'2025-01-10'))", VALUE),
    ("r.create(dict(r.get('base').config, name=b'bytes_name'))", AGENT),
    ("r.clone('base', b'bytes_name')", AGENT),
    ("r.clone('base', 'copy', description=b'A description given as bytes')", AGENT),
    ("r.update('base', {'description': b'A description given as bytes'})", AGENT),
]


@pytest.mark.parametrize(("call", "refused"), [pytest.param(*row, id=row[0]) for row in ROWS])
def test_a_bad_argument_is_refused_before_anything_is_written(
    api: SqlAgentRepository, store: Store, call: str, refused: type[InvalidInputError]
) -> None:
    names = {
        "r": api, "folder": store.folder, "changed": store.changed, "url": store.url,
        "run": _record(store.repo), "import_json": import_json, "export_json": export_json,
        "rewrite_documents": rewrite_documents, "open_repository": open_repository,
    }  # fmt: skip
    before = _state(store.repo)
    with pytest.raises(AgentStoreError) as raised:
        eval(call, names)  # the row's call, as written in the table
    error = raised.value
    assert type(error) is refused, f"{type(error).__name__}: {error}"
    assert isinstance(error, InvalidInputError) and isinstance(error, ValueError)
    assert isinstance(error, TypeError) == (refused is ArgumentTypeError)
    assert error.problems and str(error).startswith("invalid ")
    assert _state(store.repo) == before


#: Public methods of the port that take arguments but need no row: no I/O, or the async
#: plumbing every twin goes through (the rows run through the twins too).
NOT_ARGUMENT_CHECKED = frozenset(
    {"location_of", "history_location_of", "acall", "acall_in_thread", "aiterate"}
)


def test_every_public_method_with_arguments_has_a_row() -> None:
    """The audit of the port: a new method with arguments gets its refusals in ``ROWS``."""
    called = {re.match(r"(?:list\()?r\.(\w+)\(", call) for call, _ in ROWS}
    covered = {match.group(1) for match in called if match}
    methods = {
        name
        for name, member in inspect.getmembers(AgentRepository, inspect.isfunction)
        if not name.startswith("_")
        and not (name.startswith("a") and hasattr(AgentRepository, name[1:]))  # a twin
        and len(inspect.signature(member).parameters) > 1  # more than self
    }
    assert sorted(methods - covered - NOT_ARGUMENT_CHECKED) == []


def test_an_unknown_policy_names_the_valid_ones(store: Store) -> None:
    with pytest.raises(InvalidInputError) as refused:
        import_json(store.repo, store.folder, on_conflict="Skip")
    assert CONFLICT_POLICIES == ("skip", "replace", "fail")
    assert str(refused.value) == (
        "invalid argument: on_conflict: must be one of 'skip', 'replace', 'fail', not 'Skip'"
    )


def test_an_integer_refusal_says_the_range(store: Store) -> None:
    with pytest.raises(
        InvalidInputError, match=f"limit: must be an integer from 1 to {INTEGER_MAX}, not {BIG}"
    ):
        store.repo.versions("base", limit=BIG)
    with pytest.raises(
        ArgumentTypeError, match="limit: must be an integer from 1 to 50, not bool True"
    ):
        store.repo.get_history("base", limit=True)
    with pytest.raises(
        InvalidInputError, match=f"version: must be an integer from 1 to {COUNTER_MAX}"
    ):
        store.repo.get_version("base", 0)


def test_the_largest_integers_in_range_are_taken(api: SqlAgentRepository, store: Store) -> None:
    assert api.versions("base", limit=INTEGER_MAX)[0].version == 2
    assert [a.name for a in api.iter_agents(page_size=INTEGER_MAX)] == ["base"]
    assert list(api.first_by_stratum(INTEGER_MAX)) == ["RAI"]
    assert api.prune_versions("base", keep=INTEGER_MAX) == 0
    assert len(api.get_history("base", limit=Color.RED).executions) == 1  # an int subclass


def test_mappings_are_validated_into_the_models(api: SqlAgentRepository, store: Store) -> None:
    """A model argument may be a mapping of its fields: ``update`` always took one."""
    assert [a.name for a in api.search({})] == ["base"]
    assert api.count({"stratum": "rai"}) == 1
    assert api.search_page({"limit": 1}).total == 1
    fields = dict(make_config("mapped"))
    try:
        assert api.create(fields).name == "mapped"
        api.record_execution(
            "mapped",
            {
                "timestamp": "2025-01-10T09:00:00Z",
                "task": "t",
                "result_summary": "r",
                "success": False,
                "duration_seconds": 0.5,
            },
        )
        assert api.get("mapped").metadata.error_count == 1
    finally:
        api.delete("mapped")


def test_a_mapping_keeps_iso_timestamps_and_tuples(api: SqlAgentRepository, store: Store) -> None:
    """The strict rules of a mapping still read an ISO 8601 timestamp from text (as the search's
    date filters do) and take a tuple for a list: only a wrong type is refused."""
    fields = dict(make_config("tupled")) | {"tools": ("crm",), "tags": ("sales", "beta")}
    try:
        assert api.create(fields).tags == ["sales", "beta"]
        assert api.update("tupled", {"tools": ("crm", "voice")}).tools == ["crm", "voice"]
        clone = api.clone("tupled", "tupled_copy", tags=("copied",))
        assert clone.tags == ["copied"]
        api.delete("tupled_copy")
        for timestamp in ("2025-01-10T09:00:00", "2025-01-10T10:00:00+01:00"):
            run = dict(_record(store.repo), timestamp=timestamp, execution_id=timestamp)
            api.record_execution("tupled", run)
        history = api.get_history("tupled").executions
        assert [r.timestamp.isoformat() for r in history] == ["2025-01-10T09:00:00+00:00"] * 2
        query = {"tags": ("beta",), "tools": ("voice",), "created_after": "2000-01-01"}
        assert [a.name for a in api.search(query)] == ["tupled"]
    finally:
        api.delete("tupled")


def test_create_lists_every_missing_field(store: Store) -> None:
    with pytest.raises(InvalidAgentError) as refused:
        store.repo.create({})
    assert [field for field, _ in refused.value.problems] == [
        "name",
        "description",
        "system_prompt",
    ]
    assert str(refused.value).startswith("invalid agent: name: Field required")
