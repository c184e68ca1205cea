"""``completion/complete``: what a client may offer while a person types an argument.

An agent's name in the resource templates (``acti://agents/{name}``, ``.../history``) completes
to the stored names that begin with what was typed, from the store: a text search on the typed
prefix (every name that begins with it contains it), sorted by name, at most
``PAGES_READ`` pages of it, so that one keystroke reads a bounded part of a large store. The
``build_agent`` prompt's ``stratum`` completes to the strata. Anything else completes to nothing.
"""

from __future__ import annotations

from typing import Final

from mcp import types

from ..models import STRATA, SearchQuery, is_valid_name
from ..repository import AgentRepository
from ..tools.builder import BuilderTools
from . import texts

#: Most values one answer holds (the MCP specification's limit).
MAX_VALUES: Final = 100
#: Pages of a name search (``MAX_VALUES`` agents each) one completion reads at most.
PAGES_READ: Final = 5
#: The resource templates whose ``name`` is an agent's.
NAME_TEMPLATES: Final = frozenset({texts.AGENT_URI, texts.HISTORY_URI})


def _completion(values: list[str], total: int | None = None) -> types.Completion:
    total = len(values) if total is None else total
    return types.Completion(
        values=values[:MAX_VALUES], total=total, hasMore=total > min(len(values), MAX_VALUES)
    )


class Completions:
    """The completions of one store's names, read through the store's async API (``acall``)."""

    def __init__(self, builder: BuilderTools) -> None:
        self._builder = builder

    @staticmethod
    def _names(repo: AgentRepository, prefix: str) -> types.Completion:
        if not prefix:
            page = repo.search_page(SearchQuery(sort_by="name", limit=MAX_VALUES))
            return _completion([a.name for a in page.agents], page.total)
        if not is_valid_name(prefix):  # no name begins so (an upper case letter, a space...)
            return _completion([])
        query = SearchQuery(query=prefix, sort_by="name", limit=MAX_VALUES)
        names: list[str] = []
        cursor: str | None = None
        for _ in range(PAGES_READ):
            page = repo.search_page(query, cursor)
            names += [a.name for a in page.agents if a.name.startswith(prefix)]
            cursor = page.next_cursor
            if cursor is None or len(names) > MAX_VALUES:
                break
        values = sorted(names)
        return types.Completion(
            values=values[:MAX_VALUES],
            total=len(values) if cursor is None else None,
            hasMore=cursor is not None or len(values) > MAX_VALUES,
        )

    async def complete(
        self, ref: types.ResourceTemplateReference | types.PromptReference, name: str, value: str
    ) -> types.Completion:
        """The values that complete argument ``name`` of ``ref``, typed so far as ``value``."""
        if isinstance(ref, types.ResourceTemplateReference):
            if ref.uri in NAME_TEMPLATES and name == "name":
                repo = await self._builder.arepo()
                return await repo.acall(lambda r: self._names(r, value))
        elif ref.name == texts.BUILD_AGENT and name == "stratum":
            typed = value.upper()
            return _completion([s for s in STRATA if s.startswith(typed)])
        return _completion([])
