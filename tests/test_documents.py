"""The JSON documents: parsing, the v1 -> v2 upgrade, validation errors, canonical rendering."""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acti_store.documents import (
    DocumentError,
    agent_document,
    agent_from_document,
    dumps,
    history_document,
    history_from_document,
    is_history_document,
    is_v1_document,
    loads,
    migrate_v1_metadata,
)
from acti_store.models import HISTORY_MAX_RECORDS, NAME_RULE

V1_DIR = Path(__file__).parent / "data" / "v1_agents"

#: The contract's "Output File Format" example (with a prompt long enough to be valid).
V2_AGENT: dict[str, Any] = {
    "name": "lead_qualifier",
    "description": "Qualifies inbound leads by assessing BANT criteria",
    "system_prompt": "You are a professional lead qualification specialist. Assess every lead.",
    "tools": ["communication", "crm"],
    "model": "anthropic:claude-opus-4-5-20251101",
    "stratum": "RAI",
    "tags": ["sales", "qualification", "b2b"],
    "_metadata": {
        "created_at": "2025-01-09T14:30:22.123456+00:00",
        "updated_at": "2025-01-10T09:15:00.000000+00:00",
        "last_executed_at": "2025-01-10T09:20:45.123456+00:00",
        "version": 3,
        "builder": "acti-agent-builder",
        "execution_count": 47,
        "success_count": 45,
        "error_count": 2,
    },
}


def v1_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((V1_DIR / "lead_qualifier.json").read_text())
    return document


def history_example() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((V1_DIR / "lead_qualifier_history.json").read_text())
    return document


def record(execution_id: str, minute: int = 0) -> dict[str, Any]:
    return {
        "execution_id": execution_id,
        "timestamp": f"2025-01-10T09:{minute:02d}:00.000000+00:00",
        "task": "Qualify a lead",
        "result_summary": "Qualified",
        "success": True,
        "duration_seconds": 1.0,
        "tool_calls_count": 0,
        "error_type": None,
    }


# -- the v1 -> v2 upgrade --------------------------------------------------------------------------


def test_migrate_v1_metadata_follows_the_contract_rules() -> None:
    v1 = {"created_at": "2025-01-09T14:30:22.123456+00:00", "version": "1.0.0", "builder": "b"}
    original = dict(v1)
    assert migrate_v1_metadata(v1) == {
        "created_at": "2025-01-09T14:30:22.123456+00:00",
        "version": 1,
        "builder": "b",
        "updated_at": "2025-01-09T14:30:22.123456+00:00",
        "last_executed_at": None,
        "execution_count": 0,
        "success_count": 0,
        "error_count": 0,
    }
    assert v1 == original  # the caller's dict is left alone


def test_migrate_v1_metadata_leaves_v2_metadata_exactly_as_it_is() -> None:
    assert migrate_v1_metadata(V2_AGENT["_metadata"]) == V2_AGENT["_metadata"]


def test_a_v1_document_is_upgraded_to_v2() -> None:
    document = v1_document()
    assert is_v1_document(document)
    agent = agent_from_document(document)
    meta = agent.metadata
    assert agent.tags == []
    assert meta.version == 1
    assert meta.created_at == meta.updated_at == datetime(2025, 1, 9, 14, 30, 22, 123456, UTC)
    assert meta.last_executed_at is None
    assert (meta.execution_count, meta.success_count, meta.error_count) == (0, 0, 0)
    assert list(agent_document(agent)) == list(V2_AGENT)
    assert list(agent_document(agent)["_metadata"]) == list(V2_AGENT["_metadata"])


def test_a_v2_document_keeps_every_value_and_renders_back_identically() -> None:
    assert not is_v1_document(V2_AGENT)
    agent = agent_from_document(copy.deepcopy(V2_AGENT))
    assert agent.metadata.version == 3 and agent.metadata.execution_count == 47
    assert dumps(agent_document(agent)) == json.dumps(V2_AGENT, indent=2, ensure_ascii=False) + "\n"


def test_naive_v1_timestamps_are_taken_as_utc() -> None:
    document = v1_document()
    document["_metadata"]["created_at"] = "2025-01-09T14:30:22"
    agent = agent_from_document(document)
    assert agent_document(agent)["_metadata"]["updated_at"] == "2025-01-09T14:30:22.000000+00:00"


# -- histories -------------------------------------------------------------------------------------


def test_the_contract_history_example_round_trips() -> None:
    history = history_from_document(history_example())
    assert history.total_executions == 47
    assert [r.execution_id[-1] for r in history.executions] == ["1", "0"]
    text = (V1_DIR / "lead_qualifier_history.json").read_text()
    assert json.loads(dumps(history_document(history))) == json.loads(text)


def test_a_history_keeps_its_newest_records_only() -> None:
    count = HISTORY_MAX_RECORDS + 5
    records = [record(f"id-{i}", count - 1 - i) for i in range(count)]  # newest first
    history = history_from_document(
        {"agent_name": "lead_qualifier", "executions": records, "total_executions": 80}
    )
    assert len(history.executions) == HISTORY_MAX_RECORDS
    assert history.executions[0].execution_id == "id-0"
    assert history.executions[-1].execution_id == f"id-{HISTORY_MAX_RECORDS - 1}"
    assert history.total_executions == 80


@pytest.mark.parametrize("order", ["oldest first", "shuffled"])
def test_a_history_keeps_the_newest_records_by_time_whatever_the_file_order(order: str) -> None:
    """60 records listed oldest first (or in no order): the newest 50 by timestamp are kept,
    newest first, not the first 50 of the file."""
    records = [record(f"id-{minute:02d}", minute) for minute in range(60)]  # oldest first
    if order == "shuffled":
        random.Random(25).shuffle(records)
    history = history_from_document(
        {"agent_name": "lead_qualifier", "executions": records, "total_executions": 60}
    )
    assert [r.execution_id for r in history.executions] == [
        f"id-{minute:02d}" for minute in range(59, 9, -1)
    ]


def test_records_of_one_time_keep_the_file_order() -> None:
    records = [record("b", 5), record("a", 5), record("c", 7)]
    history = history_from_document(
        {"agent_name": "lead_qualifier", "executions": records, "total_executions": 3}
    )
    assert [r.execution_id for r in history.executions] == ["c", "b", "a"]


def test_a_record_past_the_newest_50_must_be_valid_too() -> None:
    """Every record is read to find the newest: one that cannot be read fails the file."""
    records = [record(f"id-{i}", i) for i in range(HISTORY_MAX_RECORDS + 1)]
    records[0]["timestamp"] = "yesterday"
    with pytest.raises(DocumentError, match=r"executions\[0\]\.timestamp"):
        history_from_document({"agent_name": "x", "executions": records, "total_executions": 51})


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        (
            {"agent_name": "x", "executions": [record("a"), record("a", 1)], "total_executions": 2},
            "duplicate execution_id 'a'",
        ),
        (
            {"agent_name": "x", "executions": [record("a"), record("b")], "total_executions": 1},
            "total_executions: 1 is less than the 2 records",
        ),
        ({"agent_name": "../x", "executions": []}, NAME_RULE),
        ({"agent_name": "x", "executions": {}}, "executions: Input should be a valid list"),
        (
            {"agent_name": "x", "executions": [record("a") | {"timestamp": "yesterday"}]},
            "executions[0].timestamp:",
        ),
    ],
)
def test_an_invalid_history_says_why(document: dict[str, Any], reason: str) -> None:
    with pytest.raises(DocumentError) as caught:
        history_from_document(document)
    assert reason in str(caught.value)


def test_documents_are_told_apart_by_their_keys() -> None:
    assert is_history_document(history_example())
    assert not is_history_document(V2_AGENT)
    assert not is_history_document([])


# -- invalid agent documents -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"name": "../x"}, f"name: {NAME_RULE}"),
        ({"name": "LeadQualifier"}, f"name: {NAME_RULE}"),
        ({"tools": ["fax"]}, "tools: 'fax' is not a valid tool"),
        ({"stratum": "XYZ"}, "stratum: 'XYZ' is not a valid stratum"),
        ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
        ({"metadata": {}}, "metadata: unknown key"),
        ({"_metadata": None}, "_metadata: Field required"),
        ({"_metadata": []}, "expected '_metadata' (a JSON object), found an array"),
        ({"_metadata": {"version": 2}}, "_metadata.created_at: Field required"),
        (
            {"_metadata": V2_AGENT["_metadata"] | {"execution_count": -1}},
            "_metadata.execution_count: Input should be greater than or equal to 0",
        ),
    ],
)
def test_an_invalid_agent_document_names_the_field(change: dict[str, Any], reason: str) -> None:
    document = copy.deepcopy(V2_AGENT) | change
    with pytest.raises(DocumentError) as caught:
        agent_from_document(document)
    assert reason in str(caught.value)


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(
        DocumentError, match=r"expected an agent document \(a JSON object\), found an array"
    ):
        agent_from_document([V2_AGENT])


def test_many_errors_are_summarised() -> None:
    document = {"name": 1, "description": 2, "system_prompt": 3, "tools": 4, "model": 5}
    with pytest.raises(DocumentError, match=r"\(\+\d+ more\)"):
        agent_from_document(document | {"_metadata": {}})


# -- text ------------------------------------------------------------------------------------------


def test_syntax_errors_give_line_and_column() -> None:
    with pytest.raises(
        DocumentError, match=r"invalid JSON: Expecting ',' delimiter \(line 3, column 3\)"
    ):
        loads('{\n  "a": 1\n  "b": 2\n}')


def test_text_must_be_utf8_and_a_bom_is_accepted() -> None:
    assert loads("\ufeff{}".encode()) == {}
    with pytest.raises(DocumentError, match="not UTF-8"):
        loads(b'{"a": "\xff"}')


def test_non_ascii_text_is_written_as_is() -> None:
    agent = agent_from_document(
        copy.deepcopy(V2_AGENT) | {"description": "Qualifie les leads — été ✓"}
    )
    assert "Qualifie les leads — été ✓" in dumps(agent_document(agent))
