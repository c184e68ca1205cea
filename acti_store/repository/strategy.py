"""``EngineStrategy``: what differs between the database engines the repository runs on.

The repository (``sql``) and its helpers (``transaction``, ``search``, ``paging``, ``bulk``)
never ask which engine they run on: they read this strategy's flags and call its methods. The
defaults here are the portable ones (plain SQL every engine runs); an engine's ``statements``
module (``acti_store/engines/<engine>/``) overrides what it does otherwise, and ``strategy_for``
finds it through the engines' registry (``acti_store.engine_registry``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final, Protocol, TypeAlias, TypeVar

from sqlalchemy import Engine
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import SelectBase

from ..engine_registry import engine_for
from ..models import ExecutionRecord
from ..sqlexec import Cursor, Prepared
from .bulk import BULK_AGENT_BATCH
from .feed import FeedStatements
from .recording import record_run
from .signals import ChangeSignal, counter_signal
from .statements import EXPORT_RECORDS, insert_agents

T = TypeVar("T")

#: The statements that open a transaction, in order (none: the driver opens it).
Begin: TypeAlias = tuple[str, ...]
#: A fixed SQL text and its parameters (``Cursor.raw``).
Statement: TypeAlias = tuple[str, tuple[Any, ...]]


class Write(Protocol):
    """``core.StoreCore.write``: ``work`` in one write transaction, retried; ``then`` checks
    the result of each attempt."""

    def __call__(
        self,
        work: Callable[[Cursor], T],
        *,
        then: Callable[[T], None] | None = ...,
    ) -> T: ...


class Read(Protocol):
    """``core.StoreCore.read``: ``work`` in one read, its errors translated."""

    def __call__(self, work: Callable[[Cursor], T]) -> T: ...


class TextIndex(Protocol):
    """An engine's own text index of the agents' name and description, probed before a search
    (SQLite's FTS5 trigram index, MariaDB's trigram table). The search tests every word with
    ``LIKE`` where there is none.
    """

    #: The shortest word the index serves.
    min_word: int
    #: The agents the index may not hold with their current text: a search tests them itself
    #: (None: the index holds every agent's current text, in the write's own transaction).
    changed_ids: Select[Any] | None
    #: The probe's agents hold every word (else they are candidates, each tested by ``LIKE``).
    exact: bool
    #: The search takes the probe's ids as one JSON array (``json_each``), else one parameter
    #: each.
    ids_as_json: bool

    #: The ids of the agents outside ``changed_ids`` whose indexed text holds every word of the
    #: parameter ``matched`` (``match_value``), all of them: a count's (None: a count probes).
    matches: SelectBase | None

    #: A search walks the sort's order first, every word tested by ``LIKE``, for as long as
    #: the probe would take (``walk``); else it probes first.
    walks_first: bool

    def probe(self, cursor: Cursor, words: Sequence[str]) -> list[int] | None:
        """The ids of the agents outside ``changed_ids`` whose indexed text holds every one of
        ``words`` (with ``exact`` unset: at least those); None when they are too many to be
        worth an id list (common words)."""
        ...

    def match_value(self, words: Sequence[str]) -> str:
        """With ``matches``: the value of its parameter ``matched`` for ``words``."""
        ...

    def walk(
        self, cursor: Cursor, prepared: Prepared, values: Mapping[str, Any]
    ) -> list[Sequence[Any]] | None:
        """With ``walks_first``: the rows of the search ``prepared``, or None when it walked
        as long as a probe takes without filling its page (its words are rare there)."""
        ...


class TenantLogins(Protocol):
    """An engine's database logins bound to one tenant each, which its row-level security holds
    to that tenant whatever the session sets (PostgreSQL's ``agent_tenant_logins``, revision
    0015). Each method runs in the caller's transaction."""

    def bindings(self, cursor: Cursor) -> dict[str, str]:
        """Every binding the session may read, login -> tenant, by login."""
        ...

    def refusal(self, cursor: Cursor, role: str | None = None) -> str | None:
        """Why the session cannot change bindings (it is not the store's owner), or, with
        ``role``, why ``role`` cannot be bound (it does not exist, or row-level security does
        not hold it); None: nothing stands in the way."""
        ...

    def bind(self, cursor: Cursor, role: str, tenant: str) -> None:
        """Bind ``role`` to ``tenant``, in place of its binding if it had one."""
        ...

    def unbind(self, cursor: Cursor, role: str) -> str | None:
        """Take ``role``'s binding away: the tenant it was bound to, None if it was not."""
        ...


class EngineStrategy:
    """One database engine, as the repository runs on it. Subclasses: one per engine
    (``engines.sqlite``, ``engines.postgresql``), chosen by ``engines.strategy_for``."""

    #: The SQLAlchemy dialect name (``Dialect.name``) of the engine.
    name: ClassVar[str]

    # -- transactions ------------------------------------------------------------------------------

    #: The first statements of a read transaction that must see one snapshot, in a transaction
    #: the driver opened (the export's) or with ``reads_in_autocommit`` unset.
    begin_snapshot: ClassVar[Begin] = ()
    #: The same, ending in the statement that opens the transaction (reads in autocommit).
    begin_snapshot_statement: ClassVar[Begin] = ()
    #: The first statements of a write transaction (none: the driver's own BEGIN).
    begin_write: ClassVar[Begin] = ()
    #: Reads run with the driver in autocommit: a read of one statement is one round trip.
    reads_in_autocommit: ClassVar[bool] = False
    #: The lock wait is the connection's (not the transaction's): set it before BEGIN and put it
    #: back after, and discard the connection when that fails.
    lock_wait_per_connection: ClassVar[bool] = False
    #: A transaction with no ``begin`` of ours is still one to commit (the driver opened it).
    driver_begins: ClassVar[bool] = True
    #: A write transaction holds the store's only write lock from its first statement (SQLite's
    #: ``BEGIN IMMEDIATE``): no row lock is needed to order two writers, and none is taken
    #: (``tenant_admin.admit``).
    writes_one_at_a_time: ClassVar[bool] = False

    def read_begin(self, snapshot: bool) -> Begin:
        """The first statements of a read (``snapshot``: of several statements)."""
        if not snapshot:
            return ()
        return self.begin_snapshot_statement if self.reads_in_autocommit else self.begin_snapshot

    def lock_wait_sql(self, seconds: float) -> str:
        """The statement after which a lock wait gives up after ``seconds``."""
        raise NotImplementedError

    def tenant_sql(self, tenant: str) -> Statement | None:
        """The statement that keeps ``tenant`` (a checked name) in the session, for an engine
        that enforces tenants in the database too; None: the statements' own condition
        (``tenancy.scoped``) is all, or the transaction keeps it (``transaction_sql``)."""
        return None

    def transaction_sql(self, tenant: str, lock_wait: float | None) -> Statement | None:
        """The statement that makes the store's settings for one transaction, after its first
        statements (a store reached through a transaction pooler, whose sessions keep nothing
        between transactions: ``for_engine``), with ``lock_wait`` (seconds) as its lock wait
        when given; None: the session keeps them (and ``lock_wait_sql`` sets a lock wait)."""
        return None

    #: The engine's tenant-bound logins (None: it has no logins row-level security holds).
    tenant_logins: ClassVar[TenantLogins | None] = None
    #: The server's write position right after a commit, read in the commit's round trip by a
    #: store with read replicas; and a replica's replay position (``replicas``). None: the
    #: engine has no replicas the store reads from.
    commit_position: ClassVar[Prepared | None] = None
    replay_position: ClassVar[Prepared | None] = None

    def for_engine(self, engine: Engine) -> EngineStrategy:
        """The strategy for the store on ``engine``: this one, or a variant for how its
        server is reached (PostgreSQL behind a transaction pooler)."""
        return self

    def first_lock_wait(self, lock_timeout: float) -> float | None:
        """A write's first lock wait (``lock_wait_sql``), or None: the session's own, which
        already ends within ``lock_timeout``."""
        return None

    def driver_connection(self, connection: Any) -> Any:
        """The DBAPI connection of a fast-path ``connection`` (``connections.Connections``), whose
        autocommit and pipeline mode a transaction sets."""
        return connection.dbapi_connection

    def pipeline_connection(self, connection: Any) -> Any | None:
        """The connection a write on the fast-path ``connection`` runs in its driver's pipeline
        mode on (its ``pipeline()`` and ``cursor()``), or None: this driver has none."""
        return None

    def cursor(self, raw_cursor: Any, dialect: Dialect, connection: Any) -> Cursor:
        """The fast path's ``Cursor`` on ``raw_cursor`` of ``connection``, with the engine's
        bulk loading (none by default: row by row) and the driver's connection, which the fast
        path tunes per statement (psycopg's prepare threshold)."""
        return Cursor(raw_cursor, dialect, driver=connection.driver_connection)

    # -- search ------------------------------------------------------------------------------------

    #: The engine's text index probed before a search (None: every word is tested by ``LIKE``).
    text_index: ClassVar[TextIndex | None] = None
    #: Run for each agent of a deleted tenant (``:agent_id``), after its row is deleted, in the
    #: same transaction (``tenant_admin.delete_tenant``): what takes its text out of the text
    #: index at once where the index keeps it for a while (SQLite's log); none where it goes
    #: with the row.
    erase_text: ClassVar[tuple[Prepared, ...]] = ()

    def filter_column(self, col: ColumnElement[Any]) -> ColumnElement[Any]:
        """``col`` as a search filter that walks the sort's index reads it."""
        return col

    # -- runs --------------------------------------------------------------------------------------

    #: One run of a version counted (``version_statements.count_run`` built on the engine's
    #: ``insert``), of parameters ``agent_id`` and ``version``: ``recording.record_run``.
    count_run: ClassVar[Prepared | None] = None

    def record_execution(
        self, write: Write, read: Read, name: str, record: ExecutionRecord, version: int | None
    ) -> None:
        """Record a run of agent ``name`` (of ``version``, else its current one): counters,
        record, the version's counters, the FIFO trim; raises ``AgentNotFoundError`` or
        ``VersionNotFoundError`` with nothing written."""
        count_run = self.count_run
        if count_run is None:
            raise NotImplementedError(f"{self.name}: no statement counts a version's runs")
        write(lambda cursor: record_run(cursor, name, record, version, count_run))

    # -- the change feed ---------------------------------------------------------------------------

    #: A tenant's change counter moved by ``count`` changes (``feed.count_changes`` built on the
    #: engine's upsert) and a named consumer's position stored (``feed.save_checkpoint``).
    count_changes: ClassVar[Prepared | None] = None
    save_checkpoint: ClassVar[Prepared | None] = None
    #: Sent after a write's changes, to wake the engine's watchers (None: they poll).
    notify_changes: ClassVar[Prepared | None] = None

    def feed_statements(self) -> FeedStatements:
        """The statements that append a write's changes (``feed.append_changes``), read the
        feed and prune it."""
        if self.count_changes is None:
            raise NotImplementedError(f"{self.name}: no statement counts the changes")
        return FeedStatements(self.count_changes, self.notify_changes)

    def change_signal(
        self, engine: Engine, tenant: str, last_seq: Callable[[], object]
    ) -> ChangeSignal:
        """What tells a watcher of ``tenant``'s feed that a change may have committed: by
        default its counter, read every ``signals.POLL_INTERVAL`` on a connection of its own
        (``last_seq`` reads it as the store reads, each time in a transaction of its own)."""
        return counter_signal(engine, tenant)

    # -- export and bulk loading -------------------------------------------------------------------

    #: Agents an import stages per batch: its names asked at once (``taken_names``), its rows
    #: inserted at once (``insert_agents``).
    bulk_batch: ClassVar[int] = BULK_AGENT_BATCH

    def export_records(
        self, cursor: Cursor, ids: list[int], page: dict[str, Any]
    ) -> list[Sequence[Any]]:
        """The history records of an export page (agents ``ids``, read by ``page``'s bounds),
        by agent id, newest first (``statements.export_page``)."""
        return cursor.all(EXPORT_RECORDS, page)

    def taken_names(self, cursor: Cursor, names: list[str]) -> dict[str, Sequence[Any]] | None:
        """The id rows of ``names`` (distinct) already taken, asked at once; None: the import
        asks per item (as cheaply, on an engine without round trips)."""
        return None

    def insert_agents(self, cursor: Cursor, rows: list[dict[str, Any]]) -> dict[str, int]:
        """An import's new agent rows (``statements.config_values`` and ``metadata_values``)
        inserted with their tags, in the import's transaction; their ids by name."""
        return insert_agents(cursor, rows)

    def after_growth(self, engine: Engine, written: int) -> None:
        """After committed writes that added or replaced ``written`` agents (an import, or
        ``core.GROWTH_CHECK_EVERY`` creates): the engine's statistics, where it keeps them."""


#: The strategies made so far (one per dialect and process).
_STRATEGIES: Final[dict[str, EngineStrategy]] = {}


def strategy_for(dialect_name: str) -> EngineStrategy:
    """The strategy of the dialect ``dialect_name`` (its engine's ``statements`` part gives it,
    in ``STRATEGIES``, imported when first asked: a SQLite store never loads SQLAlchemy's
    PostgreSQL or MySQL dialect); ``StoreUrlError`` for a database acti_store does not run on
    (``engine_registry.engine_for``)."""
    strategy = _STRATEGIES.get(dialect_name)
    if strategy is None:
        made: EngineStrategy = (
            engine_for(dialect_name).part("statements").STRATEGIES[dialect_name]()
        )
        strategy = _STRATEGIES.setdefault(dialect_name, made)
    return strategy
