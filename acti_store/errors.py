"""The one exception tree of acti_store.

Everything the library raises on purpose derives from :class:`AgentStoreError`. Driver errors are
translated into this tree in one place (``acti_store.dberrors``); only the tools turn these into
the contract's ``ERROR: ...`` texts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .versioning import GateCheck, LabelGate


class AgentStoreError(Exception):
    """Base class of every error acti_store raises on purpose."""

    #: Whether the same call can succeed if tried again later (see ``StoreUnavailableError``).
    transient: bool = False


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


class TenantNotFoundError(AgentStoreError, LookupError):
    """No tenant of this name is registered in the store: a strict store refuses to write for
    it (``tenants create`` registers it), and an operator's call on it finds nothing."""

    def __init__(self, tenant: str, *, writing: bool = False) -> None:
        why = (
            "; this store refuses to write for a tenant it does not list (strict tenants): "
            f"register it first (acti-store tenants create {tenant})"
            if writing
            else ""
        )
        super().__init__(f"Tenant {tenant!r} is not registered{why}")
        self.tenant = tenant
        self.writing = writing

    def __reduce__(self) -> tuple[object, ...]:
        return (_tenant_not_found, (self.tenant, self.writing))


def _tenant_not_found(tenant: str, writing: bool) -> TenantNotFoundError:
    return TenantNotFoundError(tenant, writing=writing)


class TenantExistsError(AgentStoreError):
    """A tenant of this name is registered already."""

    def __init__(self, tenant: str) -> None:
        super().__init__(f"Tenant {tenant!r} already exists")
        self.tenant = tenant

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.tenant,))


class TenantLimitError(AgentStoreError):
    """A write would give a tenant more agents than its limit (``max_agents``)."""

    def __init__(self, tenant: str, limit: int, count: int) -> None:
        super().__init__(
            f"Tenant {tenant!r} may hold at most {limit} agent{'' if limit == 1 else 's'} "
            f"(max_agents); this write would make it {count}. Nothing was written: delete "
            f"agents, or raise the limit (acti-store tenants set {tenant} --max-agents N)"
        )
        self.tenant = tenant
        self.limit = limit
        self.count = count

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.tenant, self.limit, self.count))


class VersionConflictError(AgentStoreError):
    """The agent changed since the caller read it (optimistic concurrency)."""

    def __init__(
        self,
        name: str,
        expected: int | Mapping[int, int],
        actual: int | Mapping[int, int] | None,
        *,
        label: str | None = None,
    ) -> None:
        if label is None:
            message = (
                f"Agent {name!r}: expected version {expected}, the store has {actual}. It "
                "changed since it was read, or the version given is wrong: read it again and "
                "apply the change to that version"
            )
        else:  # a label move's check: ``actual`` is where the label points now (None: nowhere)
            now = "is not set" if actual is None else f"points at {_target(actual)}"
            message = (
                f"Agent {name!r}: label {label!r} was expected at {_target(expected)}, but it "
                f"{now}. Someone moved it since it was read: read the labels again"
            )
        super().__init__(message)
        self.name = name
        self.expected = expected
        self.actual = actual
        self.label = label

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt with its fields across processes
        return (
            _rebuild_conflict,
            (self.name, self.expected, self.actual, self.label),
        )


def _rebuild_conflict(
    name: str,
    expected: int | Mapping[int, int],
    actual: int | Mapping[int, int] | None,
    label: str | None,
) -> VersionConflictError:
    return VersionConflictError(name, expected, actual, label=label)


def _target(target: int | Mapping[int, int]) -> str:
    """``version 3``, or ``the split 3: 90 %, 4: 10 %``."""
    if isinstance(target, int):
        return f"version {target}"
    if len(target) == 1:
        return f"version {next(iter(target))}"
    return "the split " + ", ".join(f"{v}: {w} %" for v, w in target.items())


class VersionNotFoundError(AgentStoreError, LookupError):
    """The agent has no snapshot of this version (never made, or pruned)."""

    def __init__(self, name: str, version: int, available: str = "") -> None:
        detail = f" ({available})" if available else ""
        super().__init__(f"Agent {name!r} has no version {version}{detail}")
        self.name = name
        self.version = version


class LabelNotFoundError(AgentStoreError, LookupError):
    """No label of this name is set on the agent."""

    def __init__(self, name: str, label: str, labels: Sequence[str] = ()) -> None:
        known = f"; its labels: {', '.join(labels)}" if labels else "; it has no labels"
        super().__init__(f"Agent {name!r} has no label {label!r}{known}")
        self.name = name
        self.label = label


class NoChangesError(AgentStoreError, ValueError):
    """An update named no field to change."""

    def __init__(self, name: str) -> None:
        super().__init__(f"No changes specified for agent {name!r}")
        self.name = name


class SchemaVersionError(AgentStoreError):
    """The database schema is at a revision this version of acti_store does not know."""


class StoreUnavailableError(AgentStoreError):
    """The database could not be reached or answered with an operational error.

    ``transient`` says whether trying again can help: True for a passing condition (a lock held
    by another writer, a lost connection, a serialization failure, a server restarting), False
    for a lasting one (a corrupt or read-only file, a full disk, no permission, an unknown
    schema). ``acti_store.dberrors`` decides it from the driver's error code.
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient

    def __reduce__(self) -> tuple[object, ...]:  # keeps ``transient`` across processes
        return (type(self), (str(self),), {"transient": self.transient})


class InvalidInputError(AgentStoreError, ValueError):
    """An argument given to the Python API breaks a rule of ``acti_store.models``.

    ``problems`` holds every ``(field, message)`` found, not only the first.
    """

    def __init__(self, subject: str, problems: Sequence[tuple[str, str]]) -> None:
        self.subject = subject
        self.problems = [(str(field), str(message)) for field, message in problems]
        listed = "; ".join(f"{field}: {message}" for field, message in self.problems)
        super().__init__(f"invalid {subject}: {listed}")

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt with its problems across processes
        return (type(self), (self.subject, self.problems))


class InvalidAgentError(InvalidInputError):
    """An agent configuration, update or clone breaks the rules of ``acti_store.models``."""


class ArgumentTypeError(InvalidInputError, TypeError):
    """An argument of the Python API is of a type it does not take; the message says which.

    An ``InvalidInputError`` like every other input problem (so also a ``ValueError``), and a
    ``TypeError`` as Python's own argument checks raise.
    """


class StoreUrlError(AgentStoreError, ValueError):
    """The database URL cannot name a store: not a URL, a database acti_store does not use, or
    a SQLite file or PostgreSQL schema that holds another application's tables of acti_store's
    names (refused before anything in it changes; the message says where to put the store)."""


class MissingDriverError(AgentStoreError, ImportError):
    """The database driver the URL needs is not installed; the message says what to install."""


#: Why a store opened with ``read_only=True`` refuses a write, and what to do.
OPENED_READ_ONLY: Final = (
    "nothing can be written to it (open it without read_only=True to change it)"
)


class MissingExtraError(AgentStoreError, ImportError):
    """A feature's extra (``acti-store[agents]``) is not installed; the message says what to
    install."""


class ReadOnlyStoreError(StoreUnavailableError):
    """A write to a store that is open for reading only (or that this process cannot write).

    Lasting: ``transient`` is always False, since trying the same write again cannot succeed.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)

    @classmethod
    def opened_read_only(cls, location: str) -> ReadOnlyStoreError:
        """What a write (or a run, which writes its record) raises on the store at ``location``
        opened with ``read_only=True``."""
        return cls(f"the store at {location} is open read-only: {OPENED_READ_ONLY}")


class ExportError(AgentStoreError, OSError):
    """The export folder cannot be written; the message names it and says why.

    Every file already in the folder is whole: each is replaced atomically or left as it was.
    """

    def __init__(self, directory: str, reason: str) -> None:
        super().__init__(f"cannot export to {directory}: {reason}")
        self.directory = directory
        self.reason = reason


#: Why a folder whose export did not finish is not imported, and what to do.
INCOMPLETE_EXPORT: Final = (
    "an export into it did not finish (it was stopped part way), so it may hold only some of "
    "the agents; export again, or import it anyway with allow_incomplete=True "
    "(acti-store import --allow-incomplete)"
)


class IncompleteExportError(InvalidInputError):
    """``import_json`` of a folder an export was writing when it stopped (killed, or stopped by
    an error): the folder may hold only some of the agents. Nothing is imported."""

    def __init__(self, directory: str) -> None:
        super().__init__("import folder", [(directory, INCOMPLETE_EXPORT)])
        self.directory = directory


class InvalidCursorError(InvalidInputError):
    """A ``search_page`` cursor that is not the ``next_cursor`` of a page of the same query."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            "search cursor",
            [
                (
                    "cursor",
                    f"{reason}; pass the next_cursor of the previous page of the same query, "
                    "or None for the first page",
                )
            ],
        )
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt from its reason across processes
        return (type(self), (self.reason,))


class ChangesExpiredError(AgentStoreError, LookupError):
    """A feed consumer's position is no longer in the change feed: changes after it were pruned
    (``prune_changes``, ``keep_changes``), or it is beyond the newest change (the store was
    replaced). The consumer must read the store again (resync) and follow from
    ``last_change()``; the feed never skips changes silently."""

    def __init__(self, after: int, oldest: int, newest: int) -> None:
        if after > newest:
            reason = f"the newest change is {newest}: this store is not the one it followed"
        else:
            reason = f"changes up to {oldest - 1} were pruned"
        super().__init__(
            f"Changes after {after} are no longer in the feed ({reason}); read the store again "
            "and follow from its last change"
        )
        self.after = after
        self.oldest = oldest
        self.newest = newest

    def __reduce__(self) -> tuple[object, ...]:  # rebuilt from its figures across processes
        return (type(self), (self.after, self.oldest, self.newest))


class GateRefusedError(AgentStoreError):
    """A protected label's gate refused a move: a version it would send a share to has not
    shown the runs, success rate or speed the gate asks for. Nothing moved; ``set_label`` /
    ``rollback_label`` with ``force=True`` and a note override it."""

    def __init__(self, name: str, label: str, gate: LabelGate, checks: Sequence[GateCheck]) -> None:
        failing = [check for check in checks if check.failures]
        reasons = "; ".join(
            f"version {check.version} has {', '.join(check.failures)}" for check in failing
        )
        super().__init__(
            f"Agent {name!r}: label {label!r} is protected (it needs {gate}): {reasons}. "
            "Nothing was moved; to move it anyway, pass force=True with a note saying why"
        )
        self.name = name
        self.label = label
        self.gate = gate
        self.checks = list(failing)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.name, self.label, self.gate, self.checks))


class ProtectedImportError(AgentStoreError):
    """An import replacing an agent would move one of its protected labels or drop or loosen
    a gate (``what``, in words): nothing was imported; ``import_json(..., force=True,
    note=...)`` (CLI ``import --force --note``) overrides, and logs each move forced."""

    def __init__(self, name: str, label: str, gate: LabelGate, what: str) -> None:
        super().__init__(
            f"Agent {name!r}: label {label!r} is protected (it needs {gate}); the import would "
            f"{what}. Nothing was imported; to import anyway, pass force=True with a note "
            "saying why (acti-store import --force --note TEXT)"
        )
        self.name = name
        self.label = label
        self.gate = gate
        self.what = what

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.name, self.label, self.gate, self.what))


class LoginBindingError(AgentStoreError):
    """Tenant-bound logins cannot be read or changed here (``bind_login``, ``unbind_login``,
    ``login_bindings``): the store's engine has no logins its row-level security could hold
    (only PostgreSQL has), or the session is not the store's owner, or ``role`` does not exist
    or is one that row-level security does not hold; ``reason`` says which."""

    def __init__(self, reason: str, role: str | None = None) -> None:
        prefix = "" if role is None else f"Login {role!r} cannot be bound to a tenant: "
        super().__init__(prefix + reason)
        self.reason = reason
        self.role = role

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.reason, self.role))


class LoginNotBoundError(AgentStoreError, LookupError):
    """``unbind_login`` of a login no binding names."""

    def __init__(self, role: str) -> None:
        super().__init__(
            f"Login {role!r} is not bound to a tenant (acti-store tenants logins lists them)"
        )
        self.role = role

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.role,))
