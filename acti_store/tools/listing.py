"""The text of ``list_created_agents``: agents grouped by stratum, bounded at any store size.

Each group shows at most ``LIST_AGENTS_PER_STRATUM`` agents (the first by name) within an equal
share of ``ENTRIES_BUDGET`` characters, then ``... and N more``; the counts stay exact. A store
under those bounds gets the contract's full listing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..models import STRATA, Agent
from . import texts
from .bounds import fitting
from .render import display_time, listed, stratum_label


class Group(NamedTuple):
    """One stratum's group in ``list_created_agents``: its exact count and what is shown."""

    label: str
    total: int
    agents: list[Agent]


def _list_entry(agent: Agent) -> str:
    return texts.AGENT_LIST_ENTRY.format(
        name=agent.name,
        description=agent.description,
        tools=listed(agent.tools),
        created=display_time(agent.metadata.created_at),
    )


def list_groups(
    counts: Mapping[str | None, int], first: Mapping[str | None, Sequence[Agent]]
) -> list[Group]:
    """The groups to list: strata in the contract's order, ``UNCLASSIFIED`` last, none empty.

    ``counts`` are the agents per stratum, ``first`` the first agents by name of each; a group
    shows at most ``LIST_AGENTS_PER_STRATUM`` of them, within an equal share of the budget.
    """
    totals: dict[str, int] = dict.fromkeys((*STRATA, texts.UNCLASSIFIED), 0)
    members: dict[str, list[Agent]] = {label: [] for label in totals}
    for stratum, count in counts.items():
        totals[stratum_label(stratum)] += count
    for stratum, agents in first.items():
        members[stratum_label(stratum)].extend(agents)
    labels = [label for label in totals if totals[label] or members[label]]
    share = texts.ENTRIES_BUDGET // max(1, len(labels))
    groups = []
    for label in labels:
        # By name again: UNCLASSIFIED gathers several stratum values, each in name order.
        agents = sorted(members[label], key=lambda a: a.name)[: texts.LIST_AGENTS_PER_STRATUM]
        shown = len(fitting(map(_list_entry, agents), share))
        groups.append(Group(label, max(totals[label], len(agents)), agents[:shown]))
    return groups


def _group(group: Group, calls: texts.Calls) -> str:
    entries = [_list_entry(a) for a in group.agents]
    more = group.total - len(entries)
    if more:
        line = texts.MORE_IN_STRATUM_LINE if group.label in STRATA else texts.MORE_AGENTS_LINE
        entries.append(line.format(count=more, **calls.fill(stratum=group.label)))
    return texts.AGENT_GROUP.format(
        label=group.label, count=group.total, entries="\n\n".join(entries)
    )


def agent_list(groups: Sequence[Group], calls: texts.Calls = texts.TOOL_CALLS) -> str:
    fragments = calls.fill()
    if not groups:
        return texts.NO_AGENTS.format(**fragments)
    total = sum(g.total for g in groups)
    listing = "\n\n".join(_group(group, calls) for group in groups)
    return texts.AGENT_LIST.format(groups=listing, total=total, **fragments)
