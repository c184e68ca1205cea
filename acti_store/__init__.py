"""acti_store: the persistence layer of the ACTi Agent Builder.

Agent configurations, their lifecycle metadata and a 50-record FIFO execution history per agent, in
SQL tables (SQLite by default, PostgreSQL for shared stores), behind one repository interface.
"""

from .bootstrap import open_repository
from .cache import ConfigCache
from .changes import Change
from .errors import (
    AgentExistsError,
    AgentNotFoundError,
    AgentStoreError,
    ArgumentTypeError,
    ChangesExpiredError,
    ExportError,
    IncompleteExportError,
    InvalidAgentError,
    InvalidCursorError,
    InvalidInputError,
    LabelNotFoundError,
    MissingDriverError,
    NoChangesError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreUnavailableError,
    StoreUrlError,
    VersionConflictError,
    VersionNotFoundError,
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
from .versioning import AgentVersion, ConfigDiff, FieldChange, LabelMove

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentExistsError",
    "AgentMetadata",
    "AgentNotFoundError",
    "AgentRepository",
    "AgentStoreError",
    "AgentUpdate",
    "AgentVersion",
    "ArgumentTypeError",
    "Change",
    "ChangesExpiredError",
    "ConfigCache",
    "ConfigDiff",
    "ExecutionHistory",
    "ExecutionRecord",
    "ExecutionStats",
    "ExportError",
    "ExportReport",
    "FieldChange",
    "ImportItem",
    "ImportReport",
    "IncompleteExportError",
    "InvalidAgentError",
    "InvalidCursorError",
    "InvalidInputError",
    "JsonMirror",
    "LabelMove",
    "LabelNotFoundError",
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
    "VersionNotFoundError",
    "export_json",
    "import_json",
    "open_repository",
]
