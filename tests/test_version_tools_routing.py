# ruff: noqa: E501 - golden texts are compared whole
"""The version tools of label routing (issue 30) on every engine: a label split by the model,
a protected label's refusal as an ERROR text the model cannot force past, a label's rollback,
and two versions compared; texts (golden), artifacts, and the store after each call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import make_config
from langchain_core.tools import BaseTool

from acti_store import ExecutionRecord, SqlAgentRepository
from acti_store.tools import make_version_tools
from acti_store.tools.agent import VERSION_INTERRUPT_ON

NAME = "lead_qualifier"

COMPARISON_TEXT = """\
Version Comparison: lead_qualifier (v1 vs v2)
==================================================

v1:
  Runs: 10
  Success Rate: 90% (9/10), 95% interval 59.6%-98.2%
  Average Duration: 1.5s

v2:
  Runs: 10
  Success Rate: 100% (10/10), 95% interval 72.2%-100.0%
  Average Duration: 2.5s

Difference (v2 - v1): +10.0 points, 95% interval -18.9 to +40.4 points
==================================================
No clear difference yet: the interval includes 0. Let both versions run more before deciding."""

NO_RUNS_TEXT = """\
Version Comparison: lead_qualifier (v1 vs v2)
==================================================

v1:
  Runs: 0
  Success Rate: no runs yet
  Average Duration: no runs yet

v2:
  Runs: 0
  Success Rate: no runs yet
  Average Duration: no runs yet

Difference (v2 - v1): not known until both versions have runs
==================================================
Let both versions run first, e.g. split a label between them: set_agent_label('lead_qualifier', '<label>', split=[{'version': 1, 'weight': 90}, {'version': 2, 'weight': 10}])"""


@pytest.fixture
def tools(repo: SqlAgentRepository) -> dict[str, BaseTool]:
    repo.create(make_config())
    repo.update(
        NAME,
        {
            "system_prompt": "You are a lead qualification specialist.\nAssess budget first, then authority."
        },
    )
    return {tool.name: tool for tool in make_version_tools(repo)}


def _call(tool: BaseTool, **args: Any) -> tuple[str, dict[str, Any]]:
    message = tool.invoke({"type": "tool_call", "id": "1", "name": tool.name, "args": args})
    return message.content, message.artifact


def _runs(
    repo: SqlAgentRepository, version: int, runs: int, successes: int, duration: float
) -> None:
    for index in range(runs):
        record = ExecutionRecord(
            timestamp=repo.now(),
            task=f"Qualify lead {index}",
            result_summary="done",
            success=index < successes,
            duration_seconds=duration,
            error_type=None if index < successes else "ExecutionError",
        )
        repo.record_execution(NAME, record, version=version)


def test_six_tools_and_none_can_force_a_gate(tools: dict[str, BaseTool]) -> None:
    assert list(tools) == [
        "list_agent_versions", "diff_agent_versions", "rollback_agent_config",
        "set_agent_label", "rollback_agent_label", "compare_agent_versions",
    ]  # fmt: skip
    for tool in tools.values():
        assert "force" not in tool.tool_call_schema.model_json_schema()["properties"]
    split = tools["set_agent_label"].tool_call_schema.model_json_schema()["properties"]["split"]
    shares = next(s for s in split["anyOf"] if s.get("type") == "array")
    assert shares["items"]["required"] == ["version", "weight"]
    assert '[{"version": 3, "weight": 90}' in split["description"]


def test_the_model_splits_a_label_then_moves_it_whole(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    split = [{"version": 1, "weight": 90}, {"version": 2, "weight": 10}]
    text, artifact = _call(tools["set_agent_label"], name=NAME, label="production", split=split)
    assert text == (
        "SUCCESS: Label 'production' of agent 'lead_qualifier' set on v1 90 % / v2 10 % (it "
        "was not set).\n\nLabels now: production -> v1 90 % / v2 10 %"
    )
    assert repo.label_weights(NAME) == {"production": {1: 90, 2: 10}}
    assert artifact["to_weights"] == split and artifact["splits"] == {"production": split}
    assert artifact["labels"] == {"production": 1}  # the split's main version

    # A JSON list in a string (some models write it so) is the same split.
    text, _ = _call(
        tools["set_agent_label"],
        name=NAME,
        label="staging",
        split='[{"version": 1, "weight": 50}, {"version": 2, "weight": 50}]',
    )
    assert text.startswith(
        "SUCCESS: Label 'staging' of agent 'lead_qualifier' set on v1 50 % / v2 50 %"
    )

    text, artifact = _call(tools["set_agent_label"], name=NAME, label="production", version=2)
    assert text.startswith(
        "SUCCESS: Label 'production' of agent 'lead_qualifier' moved from v1 90 % / v2 10 % to v2."
    )
    assert repo.label_weights(NAME)["production"] == {2: 100}
    assert artifact["from_weights"] == split and artifact["to_weights"] == [
        {"version": 2, "weight": 100}
    ]

    text, _ = _call(tools["list_agent_versions"], name=NAME)
    assert "\nLabels: production -> v2, staging -> v1 50 % / v2 50 %\n" in text


@pytest.mark.parametrize(
    ("args", "start"),
    [
        ({"version": 2, "split": [{"version": 1, "weight": 50}, {"version": 2, "weight": 50}]},
         "ERROR: Give either version (one version gets all of the label) or split (several versions share it): not both."),
        ({}, "ERROR: Give either version (one version gets all of the label) or split (several versions share it): neither was given."),
        ({"split": [{"version": 1, "weight": 90}, {"version": 2, "weight": 5}]},
         "ERROR: Invalid label parameter."),
        ({"split": [{"version": 1, "weight": 100}]}, "ERROR: Invalid label parameter."),
        ({"split": [{"version": 1, "weight": 50}, {"version": 9, "weight": 50}]},
         "ERROR: Agent 'lead_qualifier' has no version 9"),
    ],
    ids=["both", "neither", "sum-95", "one-share", "no-version-9"],
)  # fmt: skip
def test_a_wrong_split_is_an_error_text_and_moves_nothing(
    repo: SqlAgentRepository, tools: dict[str, BaseTool], args: dict[str, Any], start: str
) -> None:
    repo.set_label(NAME, "production", 1)
    text, artifact = _call(tools["set_agent_label"], name=NAME, label="production", **args)
    assert text.startswith(start), text
    assert artifact["status"] == "error"
    assert repo.label_weights(NAME) == {"production": {1: 100}}


def test_a_protected_label_refuses_the_model_and_names_the_way_past_it(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.set_label(NAME, "production", 1)
    repo.protect_label(NAME, "production", min_runs=3, min_success_rate=0.9)
    _runs(repo, 2, runs=2, successes=1, duration=2.0)
    args = {"name": NAME, "label": "production"}
    # A model that passes force=True anyway: the tool has no such argument, the gate holds.
    text, artifact = _call(tools["set_agent_label"], **args, version=2, force=True, note="ship")
    assert text == (
        "ERROR: Label 'production' of agent 'lead_qualifier' is protected: a version gets a "
        "share of it only with at least 3 runs, a success rate of at least 90.0%. Nothing was "
        "moved; the gate refused:\n"
        "  - v2 (2 runs, success rate 50% (1/2), average duration 2.0s): 2 runs (at least 3 "
        "wanted), a success rate of 50.0% (at least 90.0% wanted)\n\n"
        "Only a person can move it past the gate (acti-store label lead_qualifier production 2 "
        "--force --note WHY): ask the user; do not retry this call. Compare the versions with "
        "compare_agent_versions('lead_qualifier', 1, 2), or let v2 run more first."
    )
    assert artifact["error"] == "gate_refused"
    assert [check["version"] for check in artifact["checks"]] == [2]
    assert artifact["gate"]["min_runs"] == 3
    assert repo.label_weights(NAME) == {"production": {1: 100}}
    assert all(not move.forced for move in repo.label_history(NAME))

    # A split that sends v2 even 10 % is refused the same way.
    split = [{"version": 1, "weight": 90}, {"version": 2, "weight": 10}]
    text, artifact = _call(tools["set_agent_label"], **args, split=split)
    assert (
        artifact["error"] == "gate_refused"
        and "acti-store label lead_qualifier production 1=90 2=10 --force" in text
    )

    text, _ = _call(tools["list_agent_versions"], name=NAME)
    assert (
        "\nProtected: production (needs at least 3 runs, a success rate of at least 90.0%)\n"
        in text
    )


def test_the_model_rolls_a_label_back_one_move_at_a_time(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    repo.set_label(NAME, "production", 1)
    repo.set_label(NAME, "production", {1: 80, 2: 20})
    repo.set_label(NAME, "production", 2)
    args = {"name": NAME, "label": "production"}
    text, artifact = _call(tools["rollback_agent_label"], **args)
    assert text == (
        "SUCCESS: Label 'production' of agent 'lead_qualifier' rolled back from v2 to v1 80 % / "
        "v2 20 %.\n\nLabels now: production -> v1 80 % / v2 20 %"
    )
    assert artifact["to_weights"] == [{"version": 1, "weight": 80}, {"version": 2, "weight": 20}]
    assert repo.label_weights(NAME) == {"production": {1: 80, 2: 20}}
    text, _ = _call(tools["rollback_agent_label"], **args)
    assert repo.label_weights(NAME) == {"production": {1: 100}}
    assert repo.label_history(NAME)[0].rollback

    text, artifact = _call(tools["rollback_agent_label"], name=NAME, label="staging")
    assert text.startswith("ERROR: ") and artifact["status"] == "error"
    assert repo.label_weights(NAME) == {"production": {1: 100}}


def test_compare_two_versions(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    text, artifact = _call(tools["compare_agent_versions"], name=NAME, a=1, b=2)
    assert text == NO_RUNS_TEXT
    _runs(repo, 1, runs=10, successes=9, duration=1.5)
    _runs(repo, 2, runs=10, successes=10, duration=2.5)
    text, artifact = _call(tools["compare_agent_versions"], name=NAME, a=1, b=2)
    assert text == COMPARISON_TEXT
    assert artifact["comparison"]["b"]["successes"] == 10
    assert artifact["comparison"]["difference"] == pytest.approx(0.1)

    text, artifact = _call(tools["compare_agent_versions"], name=NAME, a=1, b=7)
    assert text.startswith("ERROR: Agent 'lead_qualifier' has no version 7")
    text, artifact = _call(tools["compare_agent_versions"], name=NAME, a=2, b=2)
    assert text.startswith("ERROR: ") and artifact["status"] == "error"
    text, artifact = _call(tools["compare_agent_versions"], name="ghost", a=1, b=2)
    assert text.startswith("ERROR: Agent 'ghost' not found.")


def test_a_clear_difference_says_which_version_is_better(
    repo: SqlAgentRepository, tools: dict[str, BaseTool]
) -> None:
    _runs(repo, 1, runs=20, successes=19, duration=1.0)
    _runs(repo, 2, runs=20, successes=2, duration=1.0)
    text, _ = _call(tools["compare_agent_versions"], name=NAME, a=1, b=2)
    assert "Difference (v2 - v1): -85.0 points, 95% interval -93.3 to -57.6 points" in text
    assert text.endswith("v2 succeeds less often than v1: the whole interval is below 0.")
    text, _ = _call(tools["compare_agent_versions"], name=NAME, a=2, b=1)
    assert text.endswith("v1 succeeds more often than v2: the whole interval is above 0.")


def test_the_tools_on_an_event_loop(repo: SqlAgentRepository, tools: dict[str, BaseTool]) -> None:
    async def main() -> tuple[str, str]:
        split = [{"version": 1, "weight": 70}, {"version": 2, "weight": 30}]
        moved = await tools["set_agent_label"].ainvoke(
            {"name": NAME, "label": "canary", "split": split}
        )
        compared = await tools["compare_agent_versions"].ainvoke({"name": NAME, "a": 1, "b": 2})
        return moved, compared

    moved, compared = asyncio.run(main())
    assert moved.startswith("SUCCESS: Label 'canary'") and compared.startswith("Version Comparison")
    assert repo.label_weights(NAME) == {"canary": {1: 70, 2: 30}}


def test_a_person_approves_moving_or_rolling_back_production() -> None:
    class Request:
        def __init__(self, **args: Any) -> None:
            self.tool_call = {"args": args}

    for tool in ("set_agent_label", "rollback_agent_label"):
        when = VERSION_INTERRUPT_ON[tool]["when"]
        assert when(Request(label="production")) and not when(Request(label="canary"))
    describe = VERSION_INTERRUPT_ON["set_agent_label"]["description"]
    split = [{"version": 3, "weight": 90}, {"version": 4, "weight": 10}]
    question = describe({"args": {"name": NAME, "label": "production", "split": split}}, None, None)
    assert question == (
        "Move label 'production' of agent 'lead_qualifier' to the split v3 90 % / v4 10 %. "
        "Approve or reject."
    )
