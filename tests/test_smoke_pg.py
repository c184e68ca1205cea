from acti_store import ExecutionRecord, SearchQuery
from conftest import make_config


def test_create_record_search(repo):
    repo.create(make_config())
    for i in range(53):
        repo.record_execution(
            "lead_qualifier",
            ExecutionRecord(timestamp=repo.now(), task=f"t{i}", result_summary="ok",
                            success=True, duration_seconds=1.0),
        )
    history = repo.get_history("lead_qualifier", limit=50)
    assert len(history.executions) == 50 and history.total_executions == 53
    assert history.executions[0].task == "t52"
    assert [a.name for a in repo.search(SearchQuery(query="lead", tools=["crm"]))] == ["lead_qualifier"]
