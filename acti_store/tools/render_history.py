"""``get_agent_history``'s text: statistics and the recent runs (the helpers are ``render``'s).

Split from ``render`` by concern, as pure as it: domain models in, the contract's text out.
"""

from __future__ import annotations

from ..models import ExecutionHistory, ExecutionRecord, ExecutionStats
from . import texts
from .bounds import fitting
from .render import display_time, one_line, percent, record_time, seconds


def _calls(count: int) -> str:
    return f"{count} call" if count == 1 else f"{count} calls"


def _history_entry(rank: int, record: ExecutionRecord) -> str:
    fields = {
        "rank": rank,
        "timestamp": record_time(record.timestamp),
        "duration": seconds(record.duration_seconds),
        "task": one_line(record.task),
        "calls": _calls(record.tool_calls_count),
    }
    if record.success:
        return texts.HISTORY_SUCCESS_ENTRY.format(result=one_line(record.result_summary), **fields)
    summary = one_line(record.result_summary)
    error = f"{record.error_type} - {summary}" if record.error_type else summary
    return texts.HISTORY_ERROR_ENTRY.format(error=error, **fields)


def history(
    history: ExecutionHistory,
    stats: ExecutionStats,
    location: str,
    *,
    errors_only: bool,
    calls: texts.Calls = texts.TOOL_CALLS,
) -> str:
    header = texts.HISTORY_HEADER.format(name=history.agent_name)
    if not stats.total_executions and not history.executions:
        never_run = texts.NO_HISTORY.format(**calls.fill(history.agent_name))
        return f"{header}\n\n{never_run}"
    average = stats.average_duration_seconds
    statistics = texts.HISTORY_STATISTICS.format(
        total=stats.total_executions,
        rate=percent(stats.success_count, stats.total_executions) if stats.total_executions else 0,
        successes=stats.success_count,
        average=texts.NONE if average is None else seconds(average),
        last_executed=display_time(stats.last_executed_at),
    )
    records = history.executions
    if errors_only and not records:
        body = texts.HISTORY_NO_ERRORS
    else:
        recent = texts.HISTORY_RECENT_ERRORS if errors_only else texts.HISTORY_RECENT
        total = stats.error_count if errors_only else stats.total_executions
        entries = fitting(
            (_history_entry(rank, r) for rank, r in enumerate(records, 1)), texts.ENTRIES_BUDGET
        )
        heading = recent.format(shown=len(entries), total=total)
        if len(entries) < len(records):
            more = len(records) - len(entries)
            entries.append(texts.HISTORY_MORE_LINE.format(count=more, shown=len(entries)))
        body = f"{heading}\n{texts.THIN_RULE}\n\n" + "\n\n".join(entries)
    footer = texts.HISTORY_FOOTER.format(location=location)
    return f"{header}\n\n{statistics}\n\n{body}\n\n{footer}"
