"""acti_store: the persistence layer of the ACTi Agent Builder.

Agent configurations, their lifecycle metadata and a 50-record FIFO execution history per agent, in
SQL tables (SQLite by default, PostgreSQL for shared stores), behind one repository interface.
"""

from .bootstrap import open_repository
from .errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    InvalidCursorError,
    NoChangesError,
    SchemaVersionError,
    StoreUnavailableError,
    VersionConflictError,
)
from .interchange import ExportReport, ImportReport, JsonMirror, export_json, import_json
from .models import (
    Agent,
    AgentConfig,
    AgentMetadata,
    AgentUpdate,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    SearchQuery,
)
from .repository import AgentRepository, ImportItem, SearchPage, SqlAgentRepository

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentExistsError",
    "AgentMetadata",
    "AgentNotFoundError",
    "AgentRepository",
    "AgentStoreError",
    "AgentUpdate",
    "ExecutionHistory",
    "ExecutionRecord",
    "ExecutionStats",
    "ExportReport",
    "ImportItem",
    "ImportReport",
    "InvalidCursorError",
    "JsonMirror",
    "NoChangesError",
    "SchemaVersionError",
    "SearchPage",
    "SearchQuery",
    "SqlAgentRepository",
    "StoreUnavailableError",
    "VersionConflictError",
    "export_json",
    "import_json",
    "open_repository",
]
