"""The contract's validation rules, as the models enforce them for every layer above."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from conftest import make_config
from pydantic import ValidationError

from acti_store import AgentConfig, AgentUpdate, ExecutionHistory, ExecutionRecord, SearchQuery
from acti_store.models import DEFAULT_MODEL, NAME_RULE, TAG_MAX_LENGTH


def error_fields(exc: ValidationError) -> dict[str, str]:
    return {".".join(map(str, e["loc"])): e["msg"] for e in exc.errors()}


def test_config_defaults_and_normalisation() -> None:
    config = make_config(tools=["crm", "crm", "voice"], stratum=" rai ", tags=None)
    assert config.model == DEFAULT_MODEL
    assert config.tools == ["crm", "voice"]  # duplicates dropped, order kept
    assert config.stratum == "RAI"
    assert config.tags == []


@pytest.mark.parametrize(
    "name", ["Lead", "1agent", "_x", "a-b", "a b", "../x", "x/y", "", "é", "a" * 65]
)
def test_invalid_names_are_rejected(name: str) -> None:
    with pytest.raises(ValidationError) as info:
        make_config(name=name)
    assert list(error_fields(info.value)) == ["name"]


def test_every_invalid_field_is_reported_at_once() -> None:
    with pytest.raises(ValidationError) as info:
        AgentConfig.model_validate(
            {
                "name": "Bad-Name",
                "description": "short",
                "system_prompt": "too short",
                "tools": ["crm", "fax"],
                "model": "no-provider",
                "stratum": "XYZ",
                "tags": ["ok-tag", "B"],
            }
        )
    fields = error_fields(info.value)
    assert fields["name"] == NAME_RULE
    assert fields["description"] == "String should have at least 10 characters"
    assert fields["system_prompt"] == "String should have at least 50 characters"
    assert fields["tools"].startswith("'fax' is not a valid tool. Use: voice, websearch")
    assert fields["stratum"] == "'XYZ' is not a valid stratum. Use: RTI, RAI, ZACS, EEI, IGE"
    assert "model" in fields and "tags" in fields


def test_tag_rules() -> None:
    assert make_config(tags=["ab", "a" * TAG_MAX_LENGTH, "b2b-sales"]).tags[0] == "ab"
    for bad in (["a"], ["a" * (TAG_MAX_LENGTH + 1)], ["Sales"], ["1st"], ["a_b"]):
        with pytest.raises(ValidationError):
            make_config(tags=bad)
    with pytest.raises(ValidationError, match="at most 10 tags"):
        make_config(tags=[f"tag{i}" for i in range(11)])


def test_nul_characters_are_rejected_in_config_text() -> None:
    with pytest.raises(ValidationError) as info:
        make_config(description="has a \x00 nul byte in it")
    assert "NUL" in error_fields(info.value)["description"]


def test_update_is_partial_and_empty_list_clears() -> None:
    assert AgentUpdate().changes() == {}
    update = AgentUpdate(tags=[], description="A brand new description")
    assert update.changes() == {"description": "A brand new description", "tags": []}
    with pytest.raises(ValidationError):
        AgentUpdate(description="short")


def test_execution_record_truncates_long_text_and_sanitises_nul() -> None:
    record = ExecutionRecord(
        timestamp=datetime(2025, 1, 10, tzinfo=UTC),
        task="t" * 600,
        result_summary="r\x00" * 150,
        success=True,
        duration_seconds=1.5,
    )
    assert len(record.task) == 500 and record.task.endswith("...")
    assert len(record.result_summary) == 200 and "\x00" not in record.result_summary
    assert len(record.execution_id) == 36


def test_execution_record_replaces_nul_and_lone_surrogates_in_any_text() -> None:
    record = ExecutionRecord(
        timestamp=datetime(2025, 1, 10, tzinfo=UTC),
        task="a\x00b \ud800 é",
        result_summary="plain \x00 ascii",
        success=False,
        duration_seconds=1.5,
        error_type="E\udfff" + "r" * 200,
    )
    assert record.task == "a\ufffdb \ufffd é"
    assert record.result_summary == "plain \ufffd ascii"
    assert record.error_type == "E\ufffd" + "r" * 95 + "..."


def test_a_model_holding_nul_is_refused_for_the_nul() -> None:
    with pytest.raises(ValidationError) as info:
        make_config(model="anthropic:claude\x00")
    assert "NUL" in error_fields(info.value)["model"]
    with pytest.raises(ValidationError) as info:
        make_config(model="no colon")
    assert "provider:model" in error_fields(info.value)["model"]


def test_naive_datetime_objects_are_refused_and_text_without_offset_is_utc() -> None:
    fields = {"task": "t", "result_summary": "r", "success": True, "duration_seconds": 0}
    with pytest.raises(ValidationError, match=r"repo\.now\(\) or datetime\.now\(timezone\.utc\)"):
        ExecutionRecord(timestamp=datetime(2025, 1, 10, 9, 0), **fields)
    text = ExecutionRecord.model_validate({"timestamp": "2025-01-10T09:00:00", **fields})
    assert text.timestamp == datetime(2025, 1, 10, 9, 0, tzinfo=UTC)
    offset = ExecutionRecord(
        timestamp=datetime(2025, 1, 10, 11, 0, tzinfo=timezone(timedelta(hours=2))), **fields
    )
    assert offset.timestamp == datetime(2025, 1, 10, 9, 0, tzinfo=UTC)


def test_history_holds_at_most_fifty_records() -> None:
    record = ExecutionRecord(
        timestamp=datetime(2025, 1, 10, tzinfo=UTC),
        task="t",
        result_summary="r",
        success=True,
        duration_seconds=0,
    )
    with pytest.raises(ValidationError):
        ExecutionHistory(agent_name="a", executions=[record] * 51, total_executions=51)


def test_search_query_dates_and_errors() -> None:
    query = SearchQuery(created_after="2025-01-01", created_before="2025-01-10")
    assert query.created_after == datetime(2025, 1, 1, tzinfo=UTC)
    # A bare end date covers that whole day.
    assert query.created_before == datetime(2025, 1, 10, 23, 59, 59, 999999, tzinfo=UTC)
    assert SearchQuery(created_after="2025-01-01T10:00:00Z").created_after == datetime(
        2025, 1, 1, 10, tzinfo=UTC
    )
    with pytest.raises(ValidationError) as info:
        SearchQuery(
            stratum="INVALID",
            tools=["invalid_tool"],
            created_after="yesterday",
            limit=101,
            sort_by="popularity",
        )
    fields = error_fields(info.value)
    assert fields["created_after"] == (
        "Invalid date format. Use ISO 8601: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS"
    )
    assert set(fields) == {"stratum", "tools", "created_after", "limit", "sort_by"}


def test_trusted_construction_equals_validation() -> None:
    from acti_store.models import Agent, AgentMetadata, trusted

    now = datetime(2025, 1, 9, tzinfo=UTC)
    meta = AgentMetadata(created_at=now, updated_at=now)
    validated = Agent.model_validate(dict(make_config()) | {"metadata": meta})
    built = trusted(Agent, **dict(make_config()), metadata=trusted(AgentMetadata, **dict(meta)))
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.model_fields_set == validated.model_fields_set
    assert built.config == make_config()


def test_errors_quoting_lone_surrogates_stay_printable() -> None:
    with pytest.raises(ValidationError) as info:
        make_config(stratum="\ud800", tools=["\udfff"], tags=["\ud801x"])
    fields = error_fields(info.value)  # .errors() must not raise UnicodeEncodeError
    assert set(fields) == {"stratum", "tools", "tags"}
    assert "\ufffd" in fields["stratum"]
