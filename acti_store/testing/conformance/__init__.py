"""The repository contract as a pytest suite any adapter runs: ``RepositoryConformance``.

Subclass it in a test module, name the subclass ``Test...``, and define ``make_repository``::

    from acti_store.testing.conformance import RepositoryConformance

    class TestMyStore(RepositoryConformance):
        def make_repository(self):
            return MyRepository(...)  # a fresh, empty store on every call

pytest then runs every behaviour the contract guarantees against it, each failure naming the
rule it checks ("FIFO: a store keeps the newest 50 execution records per agent, ..."): create,
update, clone and delete, metadata and version increments, the 50-record FIFO and lifetime
totals, search filters, sorts, limits and tags, paging, errors by type, versions, labels and
their log, export and import. It uses only the public ``AgentRepository`` API and the store's
own clock (``repo.now()``), never SQL and never a sleep.

The groups of the port's optional parts run for the parts the store has
(``RepositoryPort.parts``: ``versions``, ``interchange``, ``changes``, ``routing``), and switch on
with class attributes too (``supports_versions``, ``supports_interchange``, ``supports_changes``,
``supports_routing``); ``supports_async`` (on by default: every ``AgentRepository`` has its
coroutine twins) and ``supports_processes`` (several handles on one store; define
``open_again(repo)`` too) are the kit's own. A test of a group that is off is skipped, saying
so.

The kit needs pytest: ``pip install "acti-store[dev]"`` or ``pip install pytest``. Importing
``acti_store`` never imports it; importing this module does.
"""

from __future__ import annotations

from .agents import CloneRules, CreateRules, DeleteRules, ErrorTypes, UpdateRules
from .base import ConformanceBase, make_config, refused, run
from .history import HistoryRules
from .interchange import InterchangeRules
from .optional import AsyncRules, ChangeFeedRules, ProcessRules
from .routing import RoutingRules
from .search import PagingRules, SearchRules
from .versions import LabelRules, VersionRules


class RepositoryConformance(
    CreateRules,
    UpdateRules,
    CloneRules,
    DeleteRules,
    ErrorTypes,
    HistoryRules,
    SearchRules,
    PagingRules,
    VersionRules,
    LabelRules,
    InterchangeRules,
    AsyncRules,
    ProcessRules,
    ChangeFeedRules,
    RoutingRules,
):
    """Every rule of the repository contract, as pytest tests. Define ``make_repository``."""


#: The groups of the kit, by the rule they check: required ones first, then optional ones.
GROUPS: tuple[type[ConformanceBase], ...] = RepositoryConformance.__bases__


__all__ = ["GROUPS", "RepositoryConformance", "make_config", "refused", "run"]
