"""acti_store: the persistence layer of the ACTi Agent Builder.

Agent configurations, their lifecycle metadata and a 50-record FIFO execution history per agent, in
SQL tables (SQLite by default, PostgreSQL for shared stores), behind one repository interface.
"""

from .bootstrap import open_repository
from .errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    ArgumentTypeError,
    ExportError,
    InvalidAgentError,
    InvalidCursorError,
    InvalidInputError,
    MissingDriverError,
    NoChangesError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreUnavailableError,
    StoreUrlError,
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
from .repository import (
    AgentRepository,
    ImportItem,
    SearchPage,
    SqlAgentRepository,
    UpdateResult,
)

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentExistsError",
    "AgentMetadata",
    "AgentNotFoundError",
    "AgentRepository",
    "AgentStoreError",
    "AgentUpdate",
    "ArgumentTypeError",
    "ExecutionHistory",
    "ExecutionRecord",
    "ExecutionStats",
    "ExportError",
    "ExportReport",
    "ImportItem",
    "ImportReport",
    "InvalidAgentError",
    "InvalidCursorError",
    "InvalidInputError",
    "JsonMirror",
    "MissingDriverError",
    "NoChangesError",
    "ReadOnlyStoreError",
    "SchemaVersionError",
    "SearchPage",
    "SearchQuery",
    "SqlAgentRepository",
    "StoreUnavailableError",
    "StoreUrlError",
    "UpdateResult",
    "VersionConflictError",
    "export_json",
    "import_json",
    "open_repository",
]
