"""Hostile input, property-based: whatever a caller or a model sends, the store stays valid.

Arbitrary strings (any unicode including lone surrogates, NUL bytes, 1 MB strings, ``../`` and
absolute paths, SQL fragments, LIKE wildcards), wrong types and missing arguments:

* the repository raises a pydantic ``ValidationError`` or an ``AgentStoreError`` (never a driver
  error) and a rejected call writes nothing;
* every builder tool answers with text (a rejection is ``ERROR: ...`` naming the field) and never
  raises; nothing is written outside the export folder;
* the importer reports bad files instead of raising, and imports nothing from a folder that has one;
* afterwards the database is valid (SQLite ``integrity_check``) and its counters agree.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import make_config
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from pydantic import ValidationError
from workers import checks

from acti_store import (
    Agent,
    AgentConfig,
    AgentNotFoundError,
    AgentStoreError,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ImportReport,
    SearchQuery,
    SqlAgentRepository,
    import_json,
    open_repository,
)
from acti_store.documents import agent_document, dumps, history_document
from acti_store.execution.catalog import McpCatalog
from acti_store.models import UPDATABLE_FIELDS, is_valid_name
from acti_store.testing import ScriptedChatModel
from acti_store.tools import make_builder_tools

#: Examples per property: enough to hit every kind of hostile value, small enough for seconds.
EXAMPLES = 60
hostile_settings = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

MEGABYTE = 1_000_000
NASTY_STRINGS = [
    "",
    " ",
    "\x00",
    "lead\x00qualifier",
    "\ud800",  # a lone surrogate: not encodable as UTF-8
    "lead_qualifier\ud83d",
    "../",
    "../../etc/passwd",
    "..\\..\\windows\\system32",
    "/etc/passwd",
    "/tmp/acti_store_hostile",
    "C:\\Windows\\system.ini",
    "lead_qualifier/../../outside",
    "~/.ssh/id_rsa",
    "'; DROP TABLE agents; --",
    "Robert'); DELETE FROM executions; --",
    '" OR 1=1 --',
    "%",
    "_",
    "%_%",
    "\\",
    "\\%",
    "lead%",
    "_ead_qualifier",
    "NULL",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ünïcode 日本語 🚀",
    "\u202eevil\u202c",
    "a" * 64,
    "a" * 65,
    "x" * MEGABYTE,
    "é" * MEGABYTE,
    "lead_qualifier",  # an existing agent: hostile calls must not hurt it either
]

EDGE_NUMBERS = [-1, 0, 2**31 - 1, 2**31, 2**63, 2**70, -(2**70), 1e308, float("inf"), float("nan")]
EDGE_TIMES = [
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(9999, 12, 31, 23, tzinfo=timezone(-timedelta(hours=14))),
    "0001-01-01",
    "9999-12-31",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-14:00",
]

any_unicode = st.text(st.characters(exclude_categories=()), max_size=80)
hostile_text = st.one_of(
    st.sampled_from(NASTY_STRINGS),
    any_unicode,
    st.builds(str.__add__, st.sampled_from(NASTY_STRINGS), any_unicode),
)
hostile_value = st.one_of(
    hostile_text,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(hostile_text, max_size=4),
    st.dictionaries(st.text(max_size=5), hostile_text, max_size=2),
    st.binary(max_size=20),
)


def maybe_hostile(valid: Any) -> st.SearchStrategy[Any]:
    """A field value: usually hostile, sometimes the valid one, sometimes missing."""
    return st.one_of(st.just(valid), hostile_value)


VALID = make_config().model_dump()
config_fields = st.fixed_dictionaries(
    {},
    optional={
        field: maybe_hostile(value) for field, value in (VALID | {"name": "hostile_agent"}).items()
    },
)
update_fields = st.fixed_dictionaries(
    {}, optional={field: maybe_hostile(VALID[field]) for field in UPDATABLE_FIELDS}
)
record_fields = st.fixed_dictionaries(
    {},
    optional={
        "execution_id": hostile_value,
        "timestamp": st.one_of(st.datetimes(timezones=st.timezones()), hostile_value),
        "task": hostile_value,
        "result_summary": hostile_value,
        "success": hostile_value,
        "duration_seconds": hostile_value,
        "tool_calls_count": hostile_value,
        "error_type": hostile_value,
    },
)
search_fields = st.fixed_dictionaries(
    {},
    optional={
        "query": hostile_value,
        "stratum": hostile_value,
        "tools": hostile_value,
        "tags": hostile_value,
        "created_after": hostile_value,
        "created_before": hostile_value,
        "min_executions": hostile_value,
        "sort_by": hostile_value,
        "limit": hostile_value,
    },
)

EXPECTED = (ValidationError, AgentStoreError)


def dump(repo: SqlAgentRepository) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, to compare before and after a rejected call."""
    with repo.engine.connect() as conn:
        return {
            table: sorted(
                tuple(map(repr, row))
                for row in conn.execute(sa.select(sa.text("*")).select_from(sa.table(table)))
            )
            for table in ("agents", "agent_tags", "executions")
        }


def attempt(repo: SqlAgentRepository, call: Callable[[], Any]) -> Any:
    """Run ``call``; if it raises, it must be one of ours (or pydantic's) and write nothing.

    Returns the call's result, or the exception it raised.
    """
    before = dump(repo)
    try:
        return call()
    except EXPECTED as exc:
        assert dump(repo) == before, f"{type(exc).__name__} but the store changed"
        return exc


def store_problems(repo: SqlAgentRepository) -> list[str]:
    """The store is valid and every agent's counters agree with its history."""
    problems = checks.sqlite_integrity_problems(repo.engine)
    for agent in repo.list_agents():
        meta = agent.metadata
        history = repo.get_history(agent.name, limit=50)
        if meta.success_count + meta.error_count != meta.execution_count:
            problems.append(f"{agent.name}: counters {meta}")
        if len(history.executions) != min(meta.execution_count, 50):
            problems.append(f"{agent.name}: {len(history.executions)} records kept")
    return problems


@pytest.fixture
def seeded(repo: SqlAgentRepository) -> SqlAgentRepository:
    repo.create(make_config())
    repo.record_execution("lead_qualifier", record())
    return repo


def record(**fields: Any) -> ExecutionRecord:
    values: dict[str, Any] = {
        "timestamp": "2025-01-10T09:20:45+00:00",
        "task": "Qualify this lead",
        "result_summary": "ok",
        "success": True,
        "duration_seconds": 1.5,
    }
    return ExecutionRecord.model_validate(values | fields)


# -- the repository: every nasty string in every text argument ------------------------------------

#: Repository calls taking one text argument, by name. ``lookup`` calls name an agent: for a name
#: that is not an agent's they must raise AgentNotFoundError (or answer "no such agent").
LOOKUPS: dict[str, Callable[[SqlAgentRepository, str], Any]] = {
    "get": lambda repo, s: repo.get(s),
    "get_history": lambda repo, s: repo.get_history(s, limit=50, errors_only=True),
    "execution_stats": lambda repo, s: repo.execution_stats(s),
    "update": lambda repo, s: repo.update(s, AgentUpdate(model="openai:gpt-4o"), 999),
    "delete": lambda repo, s: repo.delete(s) if s != "lead_qualifier" else repo.get(s),
    "record_execution": lambda repo, s: repo.record_execution(s, record(execution_id="e")),
    "clone_source": lambda repo, s: repo.clone(s, "hostile_clone"),
}
WRITES: dict[str, Callable[[SqlAgentRepository, str], Any]] = {
    "clone_name": lambda repo, s: repo.clone("lead_qualifier", s),
    "clone_description": lambda repo, s: repo.clone("lead_qualifier", "hostile_c", description=s),
    "clone_tags": lambda repo, s: repo.clone("lead_qualifier", "hostile_t", tags=[s, "ok"]),
    **{
        f"create_{field}": lambda repo, s, field=field: repo.create(
            AgentConfig.model_validate(VALID | {"name": "hostile_new", field: s})
        )
        for field in ("name", "description", "system_prompt", "model", "stratum")
    },
    **{
        f"create_{field}_item": lambda repo, s, field=field: repo.create(
            AgentConfig.model_validate(VALID | {"name": "hostile_new", field: [s]})
        )
        for field in ("tools", "tags")
    },
    **{
        f"update_{field}": lambda repo, s, field=field: repo.update(
            "lead_qualifier", AgentUpdate.model_validate({field: s})
        )
        for field in ("description", "system_prompt", "model", "stratum")
    },
    **{
        f"record_{field}": lambda repo, s, field=field: repo.record_execution(
            "lead_qualifier", record(**{field: s})
        )
        for field in ("execution_id", "task", "result_summary", "error_type")
    },
    **{
        f"search_{field}": lambda repo, s, field=field: repo.search(
            SearchQuery.model_validate({field: s})
        )
        for field in ("query", "stratum", "created_after", "created_before", "sort_by")
    },
    **{
        f"search_{field}_item": lambda repo, s, field=field: repo.search(
            SearchQuery.model_validate({field: [s]})
        )
        for field in ("tools", "tags")
    },
}

#: Repository calls taking one number or time, by name, and the edge values they get.
EDGES: dict[str, tuple[Callable[[SqlAgentRepository, Any], Any], list[Any]]] = {
    "record_tool_calls_count": (
        lambda repo, v: repo.record_execution("lead_qualifier", record(tool_calls_count=v)),
        EDGE_NUMBERS,
    ),
    "record_duration_seconds": (
        lambda repo, v: repo.record_execution("lead_qualifier", record(duration_seconds=v)),
        EDGE_NUMBERS,
    ),
    "record_timestamp": (
        lambda repo, v: repo.record_execution("lead_qualifier", record(timestamp=v)),
        EDGE_TIMES,
    ),
    "search_min_executions": (
        lambda repo, v: repo.search(SearchQuery.model_validate({"min_executions": v})),
        EDGE_NUMBERS,
    ),
    "search_limit": (
        lambda repo, v: repo.search(SearchQuery.model_validate({"limit": v})),
        EDGE_NUMBERS,
    ),
    "search_created_after": (
        lambda repo, v: repo.search(SearchQuery.model_validate({"created_after": v})),
        EDGE_TIMES,
    ),
    "search_created_before": (
        lambda repo, v: repo.search(SearchQuery.model_validate({"created_before": v})),
        EDGE_TIMES,
    ),
    "history_limit": (lambda repo, v: repo.get_history("lead_qualifier", limit=v), EDGE_NUMBERS),
    "update_expected_version": (
        lambda repo, v: repo.update("lead_qualifier", AgentUpdate(model="a:b"), v),
        EDGE_NUMBERS,
    ),
}


def clean_up(repo: SqlAgentRepository) -> None:
    """Delete what a successful hostile call created, so the next one starts alike."""
    for name in set(repo.list_names()) - {"lead_qualifier"}:
        repo.delete(name)


def sweep(
    repo: SqlAgentRepository, call: Callable[[SqlAgentRepository, Any], Any], values: list[Any]
) -> list[Any]:
    """``call(repo, value)`` for each value, like :func:`attempt` with one dump per call: a
    rejected call must leave the store as it was, an accepted one must read back as returned.
    Returns each call's result or exception."""
    outcomes = []
    before = dump(repo)
    for value in values:
        try:
            outcome = call(repo, value)
        except EXPECTED as exc:
            assert dump(repo) == before, (repr(value)[:40], f"{exc!r} but the store changed")
            outcome = exc
        else:
            if isinstance(outcome, Agent):
                assert repo.get(outcome.name) == outcome, repr(value)[:40]
            clean_up(repo)
            before = dump(repo)
        outcomes.append(outcome)
    return outcomes


def test_every_nasty_name_is_an_agent_or_not_found(seeded: SqlAgentRepository) -> None:
    for operation, call in LOOKUPS.items():
        outcomes = sweep(seeded, call, NASTY_STRINGS)
        for text, outcome in zip(NASTY_STRINGS, outcomes, strict=True):
            context = (operation, text[:20], outcome)
            if text == "lead_qualifier":
                assert not isinstance(outcome, AgentNotFoundError), context
            else:
                assert isinstance(outcome, AgentNotFoundError), context
    for text in NASTY_STRINGS:
        assert seeded.exists(text) is (text == "lead_qualifier")
        assert seeded.archived_history(text).executions == []
    assert store_problems(seeded) == []


def test_every_nasty_value_is_stored_intact_or_rejected_cleanly(
    seeded: SqlAgentRepository,
) -> None:
    for call in WRITES.values():
        sweep(seeded, call, NASTY_STRINGS)
    for call, values in EDGES.values():
        sweep(seeded, call, values)
    assert store_problems(seeded) == []


# -- the repository: random structured input ------------------------------------------------------


@hostile_settings
@given(fields=config_fields)
def test_create_accepts_valid_configs_and_rejects_the_rest_cleanly(
    seeded: SqlAgentRepository, fields: dict[str, Any]
) -> None:
    outcome = attempt(seeded, lambda: seeded.create(AgentConfig.model_validate(fields)))
    if not isinstance(outcome, Exception):
        assert seeded.get(outcome.name) == outcome
        seeded.delete(outcome.name)


@hostile_settings
@given(name=hostile_text)
def test_lookups_by_any_name_find_the_agent_or_report_it_missing(
    seeded: SqlAgentRepository, name: str
) -> None:
    exists = name == "lead_qualifier"
    before = dump(seeded)
    for operation, call in LOOKUPS.items():
        try:
            call(seeded, name)
        except AgentNotFoundError:
            assert not exists, operation
        except EXPECTED:
            assert exists, operation  # e.g. the version conflict of an existing agent
        else:
            assert exists, operation
    if exists:
        clean_up(seeded)
    else:
        assert dump(seeded) == before


@hostile_settings
@given(fields=update_fields, expected_version=st.one_of(st.none(), st.integers()))
def test_update_with_hostile_fields_applies_whole_or_not_at_all(
    seeded: SqlAgentRepository, fields: dict[str, Any], expected_version: int | None
) -> None:
    before = seeded.get("lead_qualifier")

    outcome = attempt(
        seeded,
        lambda: seeded.update(
            "lead_qualifier", AgentUpdate.model_validate(fields), expected_version=expected_version
        ),
    )

    after = seeded.get("lead_qualifier")
    if isinstance(outcome, Exception):
        assert after == before
    else:
        assert after == outcome and after.metadata.version == before.metadata.version + 1
        changes = AgentUpdate.model_validate(fields).changes()
        assert {field: getattr(after, field) for field in changes} == changes


@hostile_settings
@given(fields=record_fields)
def test_record_execution_with_hostile_fields_records_once_or_not_at_all(
    seeded: SqlAgentRepository, fields: dict[str, Any]
) -> None:
    count = seeded.get("lead_qualifier").metadata.execution_count

    outcome = attempt(
        seeded,
        lambda: seeded.record_execution("lead_qualifier", ExecutionRecord.model_validate(fields)),
    )

    after = seeded.get("lead_qualifier").metadata.execution_count
    if isinstance(outcome, Exception):
        assert after == count
    else:
        assert after == count + 1
        newest = seeded.get_history("lead_qualifier", limit=1).executions[0]
        assert newest == ExecutionRecord.model_validate(fields)
    assert store_problems(seeded) == []


@hostile_settings
@given(fields=search_fields)
def test_search_with_hostile_filters_returns_results_or_rejects(
    seeded: SqlAgentRepository, fields: dict[str, Any]
) -> None:
    outcome = attempt(seeded, lambda: seeded.search(SearchQuery.model_validate(fields)))
    assert isinstance(outcome, list | ValidationError), outcome


@hostile_settings
@given(
    words=st.lists(
        st.text(st.sampled_from("%_\\'\"aelq "), min_size=1, max_size=6), min_size=1, max_size=3
    )
)
def test_search_text_is_literal(seeded: SqlAgentRepository, words: list[str]) -> None:
    """LIKE wildcards and quotes in a query are plain text: the result is exactly the agents
    whose name or description contains every word."""
    seeded.create(make_config("wild_100_percent", description="Matches 100% of leads_ok"))
    try:
        query = " ".join(words)
        found = {a.name for a in seeded.search(SearchQuery(query=query, limit=100))}
        expected = {
            a.name
            for a in seeded.list_agents()
            if all(w in a.name.lower() or w in a.description.lower() for w in query.split())
        }
        assert found == expected
    finally:
        seeded.delete("wild_100_percent")


# -- the builder tools ----------------------------------------------------------------------------

#: A valid value of each tool argument, so that hostile values meet otherwise valid calls.
VALID_ARGUMENTS: dict[str, Any] = VALID | {
    "confirm": True,
    "delete_history": False,
    "query": "lead",
    "created_after": "2025-01-01",
    "created_before": "2030-12-31",
    "min_executions": 0,
    "sort_by": "execution_count",
    "limit": 5,
    "task": "Say hello",
    "timeout": 5,
    "skip_unavailable_tools": False,
    "include_errors_only": True,
}
#: Names an argument may validly take: the seeded agent, or a new one.
agent_names = st.one_of(
    st.just("lead_qualifier"), st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)
)
NAME_ARGUMENTS = ("name", "source_name", "new_name", "agent_name")


@st.composite
def tool_arguments(draw: st.DrawFn, tool: BaseTool) -> dict[str, Any]:
    """Arguments for ``tool``: valid, except up to two hostile and up to one missing, and
    sometimes an unknown argument besides."""
    names = sorted(tool.args)
    arguments = {
        arg: draw(agent_names) if arg in NAME_ARGUMENTS else VALID_ARGUMENTS[arg] for arg in names
    }
    if names:
        for arg in draw(st.sets(st.sampled_from(names), max_size=2)):
            arguments[arg] = draw(hostile_value)
        for arg in draw(st.sets(st.sampled_from(names), max_size=1)):
            del arguments[arg]
    if draw(st.booleans()):
        arguments["unexpected"] = draw(hostile_value)
    return arguments


def rejection_problems(tool: BaseTool, text: str, artifact: dict[str, Any] | None) -> list[str]:
    """An ``ERROR:`` that rejects arguments must name them; other errors are store outcomes."""
    if artifact is None:  # refused by the arguments schema (a required argument missing)
        named = [arg for arg in tool.args if f"  - {arg}:" in text]
        return [] if named else [f"{tool.name}: rejection names no argument: {text[:200]}"]
    error = artifact.get("error")
    if error == "validation":
        fields = [e["field"] for e in artifact["errors"]]
        return [
            f"{tool.name}: field {field!r} not named in {text[:200]}"
            for field in fields
            if field not in text or field.split("[")[0].split(".")[0] not in tool.args
        ]
    if error == "invalid_name":
        parameter = artifact["parameter"]
        return [] if parameter in text else [f"{tool.name}: {parameter} not named: {text[:200]}"]
    if error == "store_error":  # hostile input must never reach the store as a surprise
        return [f"{tool.name}: store error: {text[:300]}"]
    return []


def files_outside(root: Path, allowed: Iterable[Path]) -> list[str]:
    """Files under ``root`` that are not under one of ``allowed``."""
    allowed = [path.resolve() for path in allowed]
    return sorted(
        str(path)
        for path in root.rglob("*")
        if not path.is_dir() and not any(path.resolve().is_relative_to(a) for a in allowed)
    )


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory: anything a tool writes by a relative path lands here."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_tools_answer_every_hostile_call_with_text(
    store_url: str, tmp_path: Path, sandbox: Path
) -> None:
    export = tmp_path / "export"
    repo = open_repository(store_url, export_dir=export)
    tools = make_builder_tools(
        repo,
        model=ScriptedChatModel(script=[AIMessage("Done.")], loop=True),
        mcp_catalog=McpCatalog({}),
    )
    by_name = {tool.name: tool for tool in tools}
    store_files = [tmp_path / f"store.db{suffix}" for suffix in ("", "-wal", "-shm", "-journal")]
    neighbours = sorted(p.name for p in tmp_path.parent.iterdir())
    calls = st.sampled_from(sorted(by_name)).flatmap(
        lambda name: st.tuples(st.just(name), tool_arguments(by_name[name]))
    )

    @settings(hostile_settings, max_examples=2 * EXAMPLES)
    @given(call=calls)
    def call_tool(call: tuple[str, dict[str, Any]]) -> None:
        name, arguments = call
        if not repo.exists("lead_qualifier"):
            repo.create(make_config(tools=[]))
        tool = by_name[name]
        message = tool.invoke({"type": "tool_call", "name": name, "args": arguments, "id": "1"})
        assert isinstance(message.content, str) and message.content
        outcome = (message.artifact or {}).get("error", message.status)
        event(f"{name}: {'ERROR ' if message.content.startswith('ERROR') else ''}{outcome}")
        if message.content.startswith("ERROR"):
            assert rejection_problems(tool, message.content, message.artifact) == []
        assert files_outside(tmp_path, [export, *store_files]) == []
        assert [f for f in export.glob("*") if not is_valid_name(f.name.split(".")[0])] == []

    try:
        call_tool()
        assert store_problems(repo) == []
    finally:
        repo.close()
    assert sorted(p.name for p in tmp_path.parent.iterdir()) == neighbours
    assert not any(Path("/tmp").glob("acti_store_hostile*"))


# -- the importer -------------------------------------------------------------------------------

AGENT_DOCUMENT = json.loads(
    dumps(
        agent_document(
            Agent.model_validate(
                VALID
                | {
                    "name": "imported_agent",
                    "metadata": {
                        "created_at": "2025-01-09T14:30:22.123456+00:00",
                        "updated_at": "2025-01-10T09:00:00+00:00",
                        "last_executed_at": "2025-01-10T09:20:45+00:00",
                        "version": 3,
                        "execution_count": 2,
                        "success_count": 1,
                        "error_count": 1,
                    },
                }
            )
        )
    )
)
HISTORY_DOCUMENT = json.loads(
    dumps(
        history_document(
            ExecutionHistory(
                agent_name="imported_agent",
                executions=[record(execution_id="b", success=False), record(execution_id="a")],
                total_executions=2,
            )
        )
    )
)
#: JSON values a hostile document may hold anywhere: big and negative numbers, deep nesting.
json_values = st.one_of(
    hostile_value.filter(lambda v: not isinstance(v, bytes)),
    st.sampled_from([2**31, 2**63, 2**70, -1, 1e308, -0.0]),
    st.just([[[[[[["deep"]]]]]]]),
)


@st.composite
def hostile_document(draw: st.DrawFn, document: dict[str, Any]) -> Any:
    """``document`` with up to three leaves (or keys) replaced, removed or added."""
    document = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = document
        path = draw(st.sampled_from(sorted(_paths(document), key=str)))
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "remove" and isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(NASTY_STRINGS[:20]))] = copy.deepcopy(draw(json_values))
        else:
            parent[path[-1]] = copy.deepcopy(draw(json_values))
    return document


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a leaf or container inside a JSON document."""
    children = value.items() if isinstance(value, dict) else enumerate(value)
    paths = []
    for key, child in children:
        paths.append((*prefix, key))
        if isinstance(child, dict | list) and child:
            paths += _paths(child, (*prefix, key))
    return paths


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def check_import(repo: SqlAgentRepository, folder: Path, **options: Any) -> ImportReport:
    """Import ``folder``; the import reads only, and either every valid file is imported and
    reads back as its document, or (a bad file in an all-or-nothing import) nothing is."""
    before, files = dump(repo), folder_bytes(folder)
    report = import_json(repo, folder, **options)
    assert folder_bytes(folder) == files
    for file, reason in report.invalid.items():
        assert isinstance(reason, str) and reason, file
    if report.aborted or not (report.imported or report.replaced):
        assert dump(repo) == before
    for name in report.imported + report.replaced:
        file = folder / f"{name}.json"
        if file.exists():  # else only the history of an agent in the store was imported
            document, stored = json.loads(file.read_text()), repo.get(name)
            texts = ("name", "description", "system_prompt")
            assert {key: getattr(stored, key) for key in texts} == {k: document[k] for k in texts}
    # Imported counters are the files' own, so only the store's validity is checked here.
    assert checks.sqlite_integrity_problems(repo.engine) == []
    for agent in repo.list_agents():
        repo.get_history(agent.name, limit=50)
    return report


@hostile_settings
@given(
    agent=st.one_of(st.none(), hostile_document(AGENT_DOCUMENT)),
    history=st.one_of(st.none(), hostile_document(HISTORY_DOCUMENT)),
    all_or_nothing=st.booleans(),
)
def test_import_of_hostile_documents_reports_them_and_keeps_the_store_valid(
    seeded: SqlAgentRepository,
    tmp_path_factory: pytest.TempPathFactory,
    agent: Any,
    history: Any,
    all_or_nothing: bool,
) -> None:
    folder = tmp_path_factory.mktemp("import")
    (folder / "valid_one.json").write_text(
        json.dumps(AGENT_DOCUMENT | {"name": "valid_one"}), encoding="utf-8"
    )
    for file, document in (
        ("imported_agent.json", agent),
        ("imported_agent_history.json", history),
    ):
        if document is not None:
            (folder / file).write_text(json.dumps(document), encoding="utf-8")

    report = check_import(seeded, folder, all_or_nothing=all_or_nothing, on_conflict="replace")

    if all_or_nothing and report.invalid:
        assert report.aborted and not seeded.exists("valid_one")
    else:
        assert "valid_one" in report.imported + report.replaced
    clean_up(seeded)


def test_import_reports_hostile_files_and_reads_nothing_outside(
    seeded: SqlAgentRepository, tmp_path: Path
) -> None:
    folder, outside = tmp_path / "import", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    secret = outside / "secret_agent.json"
    secret.write_text(json.dumps(AGENT_DOCUMENT | {"name": "secret_agent"}))
    (folder / "secret_agent.json").symlink_to(secret)
    (folder / "passwd.json").symlink_to("/etc/passwd")
    (folder / "loop.json").symlink_to(folder / "loop.json")
    (folder / "sub.json").mkdir()
    files = {
        "..json": b"{}",
        "../escape.json": None,  # not a possible file name: the import sees the plain names
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "huge.json": b'{"name": "' + b"x" * (9 * 1024 * 1024) + b'"}',
        "binary.json": bytes(range(256)),
        "nul.json": json.dumps(AGENT_DOCUMENT | {"description": "nul \x00 in text"}).encode(),
        "nul_builder.json": json.dumps(
            AGENT_DOCUMENT
            | {"name": "nul_builder"}
            | {"_metadata": AGENT_DOCUMENT["_metadata"] | {"builder": "\x00"}}
        ).encode(),
        "surrogate.json": json.dumps(
            AGENT_DOCUMENT | {"name": "surrogate", "description": "\ud800"}
        ).encode(),
        "imported_agent.json": json.dumps(AGENT_DOCUMENT | {"name": "../../etc/passwd"}).encode(),
        "Über.json": json.dumps(AGENT_DOCUMENT | {"name": "Über"}).encode(),
        "big_numbers.json": json.dumps(
            AGENT_DOCUMENT
            | {"name": "big_numbers"}
            | {"_metadata": AGENT_DOCUMENT["_metadata"] | {"execution_count": 2**70}}
        ).encode(),
        "lead_qualifier_history.json": json.dumps(
            HISTORY_DOCUMENT | {"agent_name": "lead_qualifier", "total_executions": 2**63}
        ).encode(),
        "fine_agent.json": json.dumps(AGENT_DOCUMENT | {"name": "fine_agent"}).encode(),
    }
    for name, data in files.items():
        if data is not None:
            (folder / name).write_bytes(data)

    report = check_import(seeded, folder, all_or_nothing=False)

    assert report.imported == ["fine_agent"]
    expected_invalid = {name for name, data in files.items() if data is not None} - {
        "fine_agent.json"
    }
    assert set(report.invalid) >= expected_invalid | {"secret_agent.json", "passwd.json"}
    assert not seeded.exists("secret_agent")
    assert check_import(seeded, folder).aborted  # all or nothing: one bad file, nothing written
