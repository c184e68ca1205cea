"""Every bad input to the Python API is an ``AgentStoreError`` with a message a person can act on.

URLs and drivers at open, invalid agents (every invalid field listed), the type of ``update``'s
changes, ``get_history``'s limit (the rule of ``HistoryRequest``), version conflicts, and naive
datetimes (records, search bounds, clocks). On SQLite and PostgreSQL where a store is involved.
"""

from __future__ import annotations

import inspect
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FakeClock, make_config
from pydantic import ValidationError

import acti_store
from acti_store import (
    AgentStoreError,
    AgentUpdate,
    ArgumentTypeError,
    ExecutionRecord,
    InvalidAgentError,
    InvalidInputError,
    MissingDriverError,
    SearchQuery,
    SqlAgentRepository,
    StoreUnavailableError,
    StoreUrlError,
    VersionConflictError,
    open_repository,
)
from acti_store.models import HISTORY_MAX_RECORDS, HistoryRequest
from acti_store.tools.builder import BuilderTools

SUPPORTED = "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE"


# --------------------------------------------------------------------------------------------------
# Opening a store
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "the store URL 'not a url' is not a database URL acti_store can use"),
        ("foo://bar", "the store URL 'foo://bar' is not a database URL acti_store can use"),
        ("mssql://x@h/db", "acti_store does not support mssql databases"),
        ("mysql+mysqlconnector://x@h/db", "does not support the mysqlconnector driver for mysql"),
        ("oracle://x@h/db", "acti_store does not support oracle databases"),
        ("postgresql+psycopg2://x@h/db", "does not support the psycopg2 driver for postgresql"),
        ("sqlite+pysqlcipher:///x.db", "does not support the pysqlcipher driver for sqlite"),
    ],
)
def test_a_url_acti_store_cannot_use_is_a_store_url_error_listing_the_forms(
    url: str, says: str
) -> None:
    with pytest.raises(StoreUrlError) as refused:
        open_repository(url)
    assert isinstance(refused.value, AgentStoreError) and isinstance(refused.value, ValueError)
    assert says in str(refused.value)
    assert SUPPORTED in str(refused.value) and "sqlite:///" in str(refused.value)


def test_a_url_with_a_password_is_not_quoted_in_the_error() -> None:
    with pytest.raises(StoreUrlError) as refused:
        open_repository("not a url with password hunter2@somewhere")
    assert "hunter2" not in str(refused.value)
    assert "not shown: it may hold a password" in str(refused.value)


def test_a_missing_postgresql_driver_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the extra were not installed
    with pytest.raises(MissingDriverError) as refused:
        open_repository("postgresql+psycopg://acti@127.0.0.1:1/agents")
    assert isinstance(refused.value, AgentStoreError) and isinstance(refused.value, ImportError)
    assert "the postgresql driver 'psycopg' is not installed" in str(refused.value)
    assert str(refused.value).endswith('Install it with: pip install "acti-store[postgres]"')


def test_a_sqlite_folder_that_cannot_be_created_is_store_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreUnavailableError, match=r"cannot create its folder .*a_file") as raised:
        open_repository(f"sqlite:///{blocker}/store.db")
    assert raised.value.transient is False  # trying again will not help


# --------------------------------------------------------------------------------------------------
# Invalid agents, updates and history requests
# --------------------------------------------------------------------------------------------------


def test_clone_with_invalid_input_lists_every_invalid_field(repo: SqlAgentRepository) -> None:
    repo.create(make_config("a_agent"))
    with pytest.raises(InvalidAgentError) as refused:
        repo.clone("a_agent", "Bad Name", description="short", tags=["Sales", "x", "ok"])
    error = refused.value
    assert isinstance(error, AgentStoreError) and isinstance(error, ValueError)
    assert [field for field, _ in error.problems] == ["new_name", "description", "tags"]
    assert str(error).startswith("invalid clone of 'a_agent' as 'Bad Name': new_name: name must")
    assert "tags: 'Sales', 'x' are not valid tags: tags are 2-32 characters" in str(error)
    assert repo.list_names() == ["a_agent"]


def test_every_bad_tag_and_tool_is_named() -> None:
    with pytest.raises(ValidationError) as refused:
        AgentUpdate(tags=["Sales", "x", "fine", "Sales"], tools=["fax", "crm", "telex"])
    text = str(refused.value)
    assert "'Sales', 'x' are not valid tags" in text
    assert "'fax', 'telex' are not valid tools. Use: voice, websearch" in text
    with pytest.raises(ValidationError, match="'Sales' is not a valid tag: tags are"):
        AgentUpdate(tags=["Sales"])  # one bad tag: the text the tools always printed


def test_update_takes_a_mapping_and_validates_it(repo: SqlAgentRepository) -> None:
    repo.create(make_config("a_agent"))
    updated = repo.update("a_agent", {"description": "A clearer description"}, expected_version=1)
    assert updated.description == "A clearer description" and updated.metadata.version == 2
    with pytest.raises(InvalidAgentError) as refused:
        repo.update("a_agent", {"description": "short", "tags": ["Bad"], "colour": "red"})
    assert str(refused.value).startswith("invalid update of agent 'a_agent': description: ")
    assert [field for field, _ in refused.value.problems] == ["description", "tags", "colour"]
    assert repo.get("a_agent").metadata.version == 2


def test_update_with_something_else_says_what_to_pass(repo: SqlAgentRepository) -> None:
    repo.create(make_config("a_agent"))
    with pytest.raises(ArgumentTypeError) as refused:
        repo.update("a_agent", ["description", "new"])  # type: ignore[arg-type]
    assert isinstance(refused.value, TypeError) and isinstance(refused.value, AgentStoreError)
    assert isinstance(refused.value, InvalidInputError)  # every input problem is one
    assert str(refused.value) == (
        "invalid argument: changes: must be AgentUpdate or a mapping of its fields "
        "(description, system_prompt, tools, model, stratum, tags), not list "
        "['description', 'new']"
    )


@pytest.mark.parametrize("limit", [0, -1, HISTORY_MAX_RECORDS + 1, 500])
def test_get_history_refuses_a_limit_the_tool_refuses(repo: SqlAgentRepository, limit: int) -> None:
    repo.create(make_config("a_agent"))
    with pytest.raises(ValidationError):  # the rule lives in the model
        HistoryRequest(limit=limit)
    with pytest.raises(InvalidInputError) as refused:
        repo.get_history("a_agent", limit=limit)
    assert isinstance(refused.value, ValueError)
    assert (
        str(refused.value)
        == f"invalid argument: limit: must be an integer from 1 to 50, not {limit}"
    )
    text, artifact = BuilderTools(lambda: repo).get_agent_history(name="a_agent", limit=limit)
    assert artifact["status"] == "error" and "limit" in text


@pytest.mark.parametrize("limit", [1, HISTORY_MAX_RECORDS])
def test_get_history_takes_every_limit_in_range(repo: SqlAgentRepository, limit: int) -> None:
    repo.create(make_config("a_agent"))
    for i in range(HISTORY_MAX_RECORDS + 2):
        repo.record_execution("a_agent", record(repo.now(), f"task {i}"))
    assert len(repo.get_history("a_agent", limit=limit).executions) == limit


def test_a_version_conflict_says_which_version_was_expected(repo: SqlAgentRepository) -> None:
    repo.create(make_config("a_agent"))
    with pytest.raises(VersionConflictError) as refused:
        repo.update("a_agent", AgentUpdate(model="openai:gpt-4o"), expected_version=7)
    assert str(refused.value).startswith("Agent 'a_agent': expected version 7, the store has 1.")
    assert "concurrently" not in str(refused.value)


# --------------------------------------------------------------------------------------------------
# Naive datetimes
# --------------------------------------------------------------------------------------------------


def record(timestamp: object, task: str = "Qualify John") -> ExecutionRecord:
    return ExecutionRecord.model_validate(
        {
            "timestamp": timestamp,
            "task": task,
            "result_summary": "done",
            "success": True,
            "duration_seconds": 1.0,
        }
    )


def test_a_naive_datetime_is_refused_naming_what_to_pass() -> None:
    for build in (
        lambda: record(datetime.now()),
        lambda: SearchQuery(created_after=datetime(2025, 1, 10)),
        lambda: SearchQuery(created_before=datetime(2025, 1, 10, 12, 0)),
    ):
        with pytest.raises(ValidationError) as refused:
            build()
        assert "repo.now() or datetime.now(timezone.utc)" in str(refused.value)


def test_text_without_an_offset_is_utc() -> None:
    assert record("2025-01-10T09:00:00").timestamp == datetime(2025, 1, 10, 9, tzinfo=UTC)
    query = SearchQuery(created_after="2025-01-10T09:00:00", created_before="2025-01-11")
    assert query.created_after == datetime(2025, 1, 10, 9, tzinfo=UTC)


def test_a_naive_local_time_is_never_stored_hours_off(
    repo: SqlAgentRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    repo.create(make_config("a_agent"))
    with pytest.raises(ValidationError, match=r"datetime\.now"):
        repo.record_execution("a_agent", record(datetime.now()))
    assert repo.get("a_agent").metadata.execution_count == 0


def test_a_clock_returning_naive_datetimes_is_refused(store_url: str) -> None:
    naive = FakeClock(datetime(2025, 1, 10, 9, 0))
    repo = open_repository(store_url, clock=naive)
    try:
        with pytest.raises(InvalidInputError, match=r"clock: .*datetime\.now\(timezone\.utc\)"):
            repo.create(make_config("a_agent"))
        assert repo.list_names() == []
    finally:
        repo.close()


# --------------------------------------------------------------------------------------------------
# The public surface says what it raises
# --------------------------------------------------------------------------------------------------


def test_the_new_error_types_are_exported() -> None:
    for name in (
        "ArgumentTypeError",
        "ExportError",
        "InvalidAgentError",
        "InvalidInputError",
        "MissingDriverError",
        "ReadOnlyStoreError",
        "StoreUrlError",
    ):
        assert name in acti_store.__all__
        assert issubclass(getattr(acti_store, name), AgentStoreError)


@pytest.mark.parametrize(
    ("function", "names"),
    [
        (open_repository, ["StoreUrlError", "MissingDriverError", "ReadOnlyStoreError"]),
        (acti_store.export_json, ["ExportError"]),
        (SqlAgentRepository.update, ["InvalidAgentError", "ArgumentTypeError"]),
        (SqlAgentRepository.clone, ["InvalidAgentError", "AgentExistsError"]),
        (SqlAgentRepository.get_history, ["InvalidInputError"]),
    ],
)
def test_docstrings_say_what_is_raised(function: object, names: list[str]) -> None:
    doc = inspect.getdoc(function) or ""
    assert [name for name in names if name not in doc] == []
