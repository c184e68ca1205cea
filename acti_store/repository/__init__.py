"""The repository: the interface every layer above talks to, and its SQLAlchemy implementation.

One concern per module: ``interface`` (the ABC and the types of bulk import), ``sql``
(``SqlAgentRepository``), ``statements`` (its statements and the row <-> model mapping),
``search`` (the search query), ``paging`` (the export's one-snapshot stream, ``iter_agents``,
``search_page``), ``cursor`` (the cursor of ``search_page``), ``bulk`` (bulk import). Driver
errors become the library's exceptions in ``acti_store.dberrors``.
"""

from .arguments import store_options
from .interface import (
    CONFLICT_POLICIES,
    AgentRepository,
    BulkPutResult,
    Clock,
    ConflictPolicy,
    ImportItem,
    ImportOutcome,
    Mirror,
    SearchPage,
    UpdateResult,
)
from .sql import SqlAgentRepository

__all__ = [
    "CONFLICT_POLICIES",
    "AgentRepository",
    "BulkPutResult",
    "Clock",
    "ConflictPolicy",
    "ImportItem",
    "ImportOutcome",
    "Mirror",
    "SearchPage",
    "SqlAgentRepository",
    "UpdateResult",
    "store_options",
]
