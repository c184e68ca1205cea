"""acti_store: the persistence layer of the ACTi Agent Builder.

Agent configurations, their lifecycle metadata and a 50-record FIFO execution history per agent, in
SQL tables (SQLite by default; PostgreSQL or MariaDB/MySQL for shared stores), behind one
repository interface.

Every public name loads on first use (PEP 562): ``import acti_store`` costs a short-lived
process (a CLI call, an MCP stdio server) only this module, and ``from acti_store import X``
loads what ``X`` needs and no more. Type checkers and IDEs read the imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
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
        GateRefusedError,
        IncompleteExportError,
        InvalidAgentError,
        InvalidCursorError,
        InvalidInputError,
        LabelNotFoundError,
        LoginBindingError,
        LoginNotBoundError,
        MissingDriverError,
        NoChangesError,
        ProtectedImportError,
        ReadOnlyStoreError,
        SchemaVersionError,
        StoreUnavailableError,
        StoreUrlError,
        TenantExistsError,
        TenantLimitError,
        TenantNotFoundError,
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
    from .versioning import (
        AgentVersion,
        ConfigDiff,
        FieldChange,
        GateCheck,
        LabelGate,
        LabelMove,
        VersionComparison,
        VersionFigures,
    )

#: Each public name and the module (under ``acti_store``) that defines it.
_EXPORTS: Final = {
    "Agent": "models",
    "AgentConfig": "models",
    "AgentExistsError": "errors",
    "AgentMetadata": "models",
    "AgentNotFoundError": "errors",
    "AgentRepository": "repository",
    "AgentStoreError": "errors",
    "AgentUpdate": "models",
    "AgentVersion": "versioning",
    "ArgumentTypeError": "errors",
    "Change": "changes",
    "ChangesExpiredError": "errors",
    "ConfigCache": "cache",
    "ConfigDiff": "versioning",
    "ExecutionHistory": "models",
    "ExecutionRecord": "models",
    "ExecutionStats": "models",
    "ExportError": "errors",
    "ExportReport": "interchange",
    "FieldChange": "versioning",
    "GateCheck": "versioning",
    "GateRefusedError": "errors",
    "ImportItem": "repository",
    "ImportReport": "interchange",
    "IncompleteExportError": "errors",
    "InvalidAgentError": "errors",
    "InvalidCursorError": "errors",
    "InvalidInputError": "errors",
    "JsonMirror": "interchange",
    "LabelGate": "versioning",
    "LabelMove": "versioning",
    "LabelNotFoundError": "errors",
    "LoginBindingError": "errors",
    "LoginNotBoundError": "errors",
    "MissingDriverError": "errors",
    "NoChangesError": "errors",
    "ProtectedImportError": "errors",
    "ReadOnlyStoreError": "errors",
    "SchemaVersionError": "errors",
    "SearchPage": "repository",
    "SearchQuery": "models",
    "SqlAgentRepository": "repository",
    "StoreUnavailableError": "errors",
    "StoreUrlError": "errors",
    "TenantExistsError": "errors",
    "TenantLimitError": "errors",
    "TenantNotFoundError": "errors",
    "UpdateResult": "repository",
    "VersionComparison": "versioning",
    "VersionConflictError": "errors",
    "VersionFigures": "versioning",
    "VersionNotFoundError": "errors",
    "export_json": "interchange",
    "import_json": "interchange",
    "open_repository": "bootstrap",
}

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
    "GateCheck",
    "GateRefusedError",
    "ImportItem",
    "ImportReport",
    "IncompleteExportError",
    "InvalidAgentError",
    "InvalidCursorError",
    "InvalidInputError",
    "JsonMirror",
    "LabelGate",
    "LabelMove",
    "LabelNotFoundError",
    "LoginBindingError",
    "LoginNotBoundError",
    "MissingDriverError",
    "NoChangesError",
    "ProtectedImportError",
    "ReadOnlyStoreError",
    "SchemaVersionError",
    "SearchPage",
    "SearchQuery",
    "SqlAgentRepository",
    "StoreUnavailableError",
    "StoreUrlError",
    "TenantExistsError",
    "TenantLimitError",
    "TenantNotFoundError",
    "UpdateResult",
    "VersionComparison",
    "VersionConflictError",
    "VersionFigures",
    "VersionNotFoundError",
    "export_json",
    "import_json",
    "open_repository",
]


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use, and keep it here for the next."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
