"""The one exception tree of acti_store.

Everything the library raises on purpose derives from :class:`AgentStoreError`. Driver errors are
translated into this tree in one place (``acti_store.dberrors``); only the tools turn these into
the contract's ``ERROR: ...`` texts.
"""

from __future__ import annotations


class AgentStoreError(Exception):
    """Base class of every error acti_store raises on purpose."""


class AgentNotFoundError(AgentStoreError, LookupError):
    """No agent with this name exists in the store."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Agent {name!r} not found")
        self.name = name


class AgentExistsError(AgentStoreError):
    """An agent with this name already exists."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Agent {name!r} already exists")
        self.name = name


class VersionConflictError(AgentStoreError):
    """The agent changed since the caller read it (optimistic concurrency)."""

    def __init__(self, name: str, expected: int, actual: int) -> None:
        super().__init__(
            f"Agent {name!r} is at version {actual}, not {expected}: it was modified concurrently"
        )
        self.name = name
        self.expected = expected
        self.actual = actual


class NoChangesError(AgentStoreError, ValueError):
    """An update named no field to change."""

    def __init__(self, name: str) -> None:
        super().__init__(f"No changes specified for agent {name!r}")
        self.name = name


class SchemaVersionError(AgentStoreError):
    """The database schema is at a revision this version of acti_store does not know."""


class StoreUnavailableError(AgentStoreError):
    """The database could not be reached or answered with an operational error."""


class InvalidCursorError(AgentStoreError, ValueError):
    """A ``search_page`` cursor that is not the ``next_cursor`` of a page of the same query."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Invalid search cursor: {reason}. Pass the next_cursor of the previous page of the "
            "same query, or None for the first page."
        )
        self.reason = reason
