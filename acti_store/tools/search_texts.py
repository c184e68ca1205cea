"""The texts of ``search_agents``: its results, and its answer when nothing matches. Pure
functions, as ``render``'s (whose helpers they use); every template comes from ``texts``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from ..models import SORT_DESCRIPTIONS, Agent, SearchQuery
from . import texts
from .bounds import fitting
from .render import display_time, listed, percent, stratum_label


def _filter_value(value: object) -> str:
    if isinstance(value, list):
        return f"[{', '.join(map(str, value))}]"
    if isinstance(value, datetime):
        return display_time(value)
    return str(value)


def _search_header(query: SearchQuery, found: int, *, sorted_results: bool) -> str:
    lines = [texts.SEARCH_HEADER, ""]
    if query.query:
        lines.append(texts.SEARCH_QUERY_LINE.format(query=query.query))
    filters = query.filters()
    if filters:
        shown = ", ".join(f"{k}={_filter_value(v)}" for k, v in filters.items())
        lines.append(texts.SEARCH_FILTERS_LINE.format(filters=shown))
    if sorted_results:
        direction = SORT_DESCRIPTIONS[query.sort_by]
        lines.append(texts.SEARCH_SORT_LINE.format(field=query.sort_by, direction=direction))
    lines.append(texts.SEARCH_FOUND_LINE.format(count=found))
    return "\n".join(lines)


def _executions(agent: Agent) -> str:
    meta = agent.metadata
    if not meta.execution_count:
        return "0"
    rate = percent(meta.success_count, meta.execution_count)
    return texts.EXECUTIONS_WITH_RATE.format(count=meta.execution_count, rate=rate)


def search_results(
    query: SearchQuery, agents: Sequence[Agent], calls: texts.Calls = texts.TOOL_CALLS
) -> str:
    """The results, as many as fit the budget (the rest summarised in one line)."""
    entries = fitting(
        (
            texts.SEARCH_RESULT.format(
                rank=rank,
                name=a.name,
                description=a.description,
                stratum=a.stratum or texts.NONE,
                tools=listed(a.tools),
                tags=listed(a.tags),
                executions=_executions(a),
                created=display_time(a.metadata.created_at),
                updated=display_time(a.metadata.updated_at),
            )
            for rank, a in enumerate(agents, 1)
        ),
        texts.ENTRIES_BUDGET,
    )
    if len(entries) < len(agents):
        more = len(agents) - len(entries)
        entries.append(texts.SEARCH_MORE_LINE.format(count=more, shown=len(entries)))
    header = _search_header(query, len(agents), sorted_results=True)
    body = "\n\n".join(entries)
    footer = texts.SEARCH_RESULTS_FOOTER.format(**calls.fill())
    return f"{header}\n\n{texts.THIN_RULE}\n{body}\n\n{footer}"


def no_search_results(
    query: SearchQuery, counts: Mapping[str | None, int], calls: texts.Calls = texts.TOOL_CALLS
) -> str:
    lines = "\n".join(
        texts.STRATUM_COUNT_LINE.format(label=stratum_label(stratum), count=count)
        for stratum, count in counts.items()
    )
    header = _search_header(query, 0, sorted_results=False)
    return f"{header}\n\n{texts.SEARCH_NO_RESULTS.format(counts=lines, **calls.fill())}"
