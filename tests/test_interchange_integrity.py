"""The interchange folder tells the truth (issue 25), on both engines: an export that did not
finish is refused by import unless forced, a versions file comes from its agent file's snapshot,
and a history file's newest records are kept whatever their order in the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import make_config

from acti_store import SqlAgentRepository, export_json, import_json
from acti_store.documents import agent_document, dumps
from acti_store.models import HISTORY_MAX_RECORDS


def write(path: Path, document: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))


def record(execution_id: str, minute: int) -> dict[str, Any]:
    return {
        "execution_id": execution_id,
        "timestamp": f"2025-01-10T09:{minute:02d}:00.000000+00:00",
        "task": f"Qualify lead at minute {minute}",
        "result_summary": "Qualified",
        "success": True,
        "duration_seconds": 1.0,
        "tool_calls_count": 0,
        "error_type": None,
    }


# -- a history file's order ------------------------------------------------------------------------


def test_an_oldest_first_history_file_imports_its_newest_50(
    repo: SqlAgentRepository, tmp_path: Path
) -> None:
    """60 records listed oldest first: the store keeps the newest 50 by timestamp, newest
    first, and exports them newest first."""
    folder = tmp_path / "in"
    agent = repo.create(make_config("lead_qualifier"))
    repo.delete("lead_qualifier")
    write(folder / "lead_qualifier.json", agent_document(agent))
    records = [record(f"run-{minute:02d}", minute) for minute in range(60)]  # oldest first
    history = {"agent_name": "lead_qualifier", "executions": records, "total_executions": 60}
    write(folder / "lead_qualifier_history.json", history)

    report = import_json(repo, folder)

    assert report.ok and report.imported == ["lead_qualifier"]
    newest = [f"run-{minute:02d}" for minute in range(59, 59 - HISTORY_MAX_RECORDS, -1)]
    stored = repo.get_history("lead_qualifier", limit=HISTORY_MAX_RECORDS)
    assert [r.execution_id for r in stored.executions] == newest
    assert stored.total_executions == 60
    export_json(repo, tmp_path / "out")
    exported = json.loads((tmp_path / "out" / "lead_qualifier_history.json").read_text())
    assert [r["execution_id"] for r in exported["executions"]] == newest
    assert dumps(exported) == (tmp_path / "out" / "lead_qualifier_history.json").read_text()
