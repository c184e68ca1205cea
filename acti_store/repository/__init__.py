"""The repository: the port every layer above talks to, its async API, and its SQLAlchemy
implementation.

``port`` (``RepositoryPort``: the sync methods and the types they take and give), ``interface``
(``AgentRepository``: the port with its async API on top: ``twins``, ``asynchronous``), ``sql``
(``SqlAgentRepository``, assembled from the ``roles`` on one ``core``), ``engines`` (what differs
between engines). Statements live beside their role: ``statements`` (agents, and the row <->
model mapping), ``recording`` (runs), ``version_statements`` (versions), ``search`` and
``paging`` (search, pages and the export's one-snapshot stream), ``bulk`` (import). Driver
errors become the library's exceptions in ``acti_store.dberrors``.
"""

from .arguments import retention, store_options
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
from .port import RepositoryPort
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
    "RepositoryPort",
    "SearchPage",
    "SqlAgentRepository",
    "UpdateResult",
    "retention",
    "store_options",
]
