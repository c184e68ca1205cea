"""The repository's port: its sync methods, the types they take and give, and nothing else.

Callers get domain models (``acti_store.models``), never rows. The port knows no event loop and
no thread: the async API is a layer on top of it (``interface.AgentRepository``), and
``SqlAgentRepository`` (``acti_store.repository.sql``) implements it. It speaks by role: the
core every store has (``port_core``: agents, search, runs and history) and the parts beyond it
(``port_parts``: interchange, versions and labels, routing, the change feed), gathered here with
what the store itself is (its location, its clock, closing it).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol, Self

from pydantic import ValidationError

from ..errors import InvalidAgentError
from ..models import AgentConfig
from ..validation import refusal, strictly
from .arguments import CONFLICT_POLICIES as CONFLICT_POLICIES
from .arguments import ConflictPolicy as ConflictPolicy
from .items import BulkPutResult as BulkPutResult
from .items import ImportItem as ImportItem
from .items import ImportOutcome as ImportOutcome
from .port_core import AgentsPort, RunsPort, SearchPort
from .port_core import SearchPage as SearchPage
from .port_core import UpdateResult as UpdateResult
from .port_parts import PARTS, ChangesPort, InterchangePort, RoutingPort, missing_methods

Clock = Callable[[], datetime]


class Mirror(Protocol):
    """Keeps files in step with the store after each committed write (see ``interchange``)."""

    def files_for(self, name: str) -> tuple[Path, Path]:
        """The agent file and the history file of ``name``."""
        ...

    def sync(self, repo: RepositoryPort, names: Iterable[str]) -> None:
        """Rewrite (or remove) the files of ``names`` from the store's current state."""
        ...


def checked_config(
    values: dict[str, Any], subject: str, aliases: Mapping[str, str] | None = None
) -> AgentConfig:
    """``values`` as an ``AgentConfig`` by its strict rules (``validation.strictly``), or
    ``InvalidAgentError`` listing every problem."""
    try:
        return strictly(AgentConfig, values)
    except ValidationError as exc:
        raise refusal(exc, subject, InvalidAgentError, aliases=aliases or {}) from None


class RepositoryPort(AgentsPort, SearchPort, RunsPort, InterchangePort, RoutingPort, ChangesPort):
    """Storage of agent configurations, their metadata and execution history: the sync port.

    Every method may raise ``StoreUnavailableError`` (the database cannot be reached, is locked
    for too long or is damaged; ``transient`` says whether trying again can help) and, on a store
    opened with ``read_only=True`` or one this process cannot write, every write raises
    ``ReadOnlyStoreError`` (a lasting ``StoreUnavailableError``); all are ``AgentStoreError``.
    Invalid input is an ``InvalidInputError`` (``InvalidAgentError`` for agent fields), which is
    also a ``ValueError``; an argument of a type a method does not take is an
    ``ArgumentTypeError``, an ``InvalidInputError`` that is also a ``TypeError``. Every method
    checks its arguments before it reads or writes, by the rules of ``acti_store.validation``:
    integers are ``int`` (never ``bool`` or text) within their range (a count or a limit at
    most ``models.INTEGER_MAX``, a version at most ``models.COUNTER_MAX``), flags are ``True``
    or ``False``, ``on_conflict`` is one of ``CONFLICT_POLICIES`` exactly, and a model argument
    (``config``, ``changes``, ``record``, ``query``) is that model or a mapping validated into
    it, every problem listed.
    """

    #: The optional parts of the port this store has (``port_parts.PARTS``: ``interchange``,
    #: ``versions``, ``routing``, ``changes``). A store declares them (``parts =
    #: frozenset({"versions"})``), and its class is refused (``TypeError``) when it leaves a
    #: method of a part it declares unimplemented; a store that declares none has those it
    #: implements every method of. The conformance kit tests the parts a store has.
    parts: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("parts")
        if declared is None:
            cls.parts = frozenset(part for part in PARTS if not missing_methods(cls, part))
            return
        unknown = sorted(set(declared) - set(PARTS))
        if unknown:
            raise TypeError(
                f"{cls.__name__}.parts names no part of the port: {', '.join(unknown)} (the "
                f"parts are {', '.join(PARTS)})"
            )
        for part in sorted(declared):
            if missing := missing_methods(cls, part):
                raise TypeError(
                    f"{cls.__name__} declares the part {part!r} but does not implement "
                    f"{', '.join(missing)}"
                )
        cls.parts = frozenset(declared)

    mirror: Mirror | None = None
    #: Opened with ``read_only=True``: every write raises ``ReadOnlyStoreError``
    #: (``ReadOnlyStoreError.opened_read_only``), and so does a run, before it starts.
    read_only: bool = False

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the records live, fit to show a user (no password)."""

    @abstractmethod
    def now(self) -> datetime:
        """The store's clock: timezone-aware UTC. Pass it (or ``datetime.now(timezone.utc)``)
        as a record's timestamp: naive datetimes are refused."""

    def location_of(self, name: str) -> str:
        """Where the record of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[0])
        return self.location

    def history_location_of(self, name: str) -> str:
        """Where the history of ``name`` lives: its mirror file when there is one."""
        if self.mirror is not None:
            return str(self.mirror.files_for(name)[1])
        return self.location

    def close(self) -> None:
        """Release connections (of a store used from async code, ``aclose`` releases all)."""
        return None

    def __enter__(self) -> Self:
        """``with open_repository(...) as repo:`` closes the store (``close``) at the end."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
