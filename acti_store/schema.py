"""The tables, as SQLAlchemy 2 typed ORM classes: the one set of table definitions.

The repository runs Core statements against ``Model.__table__`` (fast, explicit SQL); Alembic
compares its revisions with ``Base.metadata`` (``alembic check``). The schema changes only through a
revision in ``migrations/``, and only the revisions create tables: MariaDB/MySQL's table options
(``column_types.TABLE_OPTIONS``: InnoDB, ``utf8mb4_bin``) are theirs, not named here, where
they would load SQLAlchemy's MySQL dialect into every process (Alembic compares no table
options).

How the fields are stored, so that every search filter runs in SQL with an index:

* ``tools`` is kept twice on the agent row, written by the same statement: a JSON list (the
  user's order, for display) and ``tools_mask``, one bit per category. "Has ALL of these tools"
  becomes ``tools_mask IN (<every mask that contains them>)``: at most 32 values, index-served.
* ``tags`` is a JSON list on the agent row (for display) and one row per tag in ``agent_tags``
  (primary key ``(tag, agent_id)``), so "has ALL these tags" is an indexed lookup per tag (past
  four, one count of the agent's tags among the rest: ``repository.search_filters._has_tags``).
* The history lives in ``executions``; ``id`` orders records (newest = highest), the index
  ``(agent_id, id)`` makes the FIFO trim and "newest N" reads flat as history grows. A history kept
  after its agent is deleted has ``agent_id`` NULL and keeps ``agent_name`` (an archive).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator, TypeEngine

from .column_types import DOUBLE_FLOAT, LONG_TEXT, TIMESTAMP, engine_types, naive_timestamps
from .models import BUILDER, NAME_MAX_LENGTH, UPDATABLE_FIELDS
from .routing import WEIGHTS_MAX_LENGTH
from .tenancy import DEFAULT_TENANT, TENANT_TABLES
from .versioning import LABEL_MAX_LENGTH

NAMING_CONVENTION: Final = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def naive(value: datetime) -> ValueError:
    """The error of a naive ``value`` given for a timestamp."""
    return ValueError(f"naive datetime {value!r}: timestamps must be timezone-aware")


class UtcDateTime(TypeDecorator[datetime]):
    """A timestamp that is timezone-aware UTC on the way in and on the way out.

    SQLite keeps no offset and hands back naive datetimes; PostgreSQL returns them in the
    session's time zone. Both come back as UTC here, and naive input is refused.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        return dialect.type_descriptor(TIMESTAMP)

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.utcoffset() is None:
            raise naive(value)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if naive_timestamps(dialect) else value

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        types = engine_types(dialect)
        fast = None if types is None else types.timestamp_bind()
        return fast or super().bind_processor(dialect)

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        types = engine_types(dialect)

        def general(value: Any) -> datetime | None:
            return self.process_result_value(value, dialect)

        fast = None if types is None else types.timestamp_result(general)
        return fast or super().result_processor(dialect, coltype)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # raw SQLite text, e.g. from a hand-written query
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


#: A version or lifetime counter, and the id of a history record (one per run ever recorded):
#: 64-bit. SQLite's INTEGER already is (and an ``INTEGER PRIMARY KEY`` must be spelled so to be
#: the rowid), so the type is BIGINT on PostgreSQL only; revision 0005 widened the columns.
Counter = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class TenantColumn:
    """The tenant a row belongs to (``acti_store.tenancy``), in every table that holds a
    tenant's data; rows stored before tenants (revision 0009) are the default tenant's."""

    tenant: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH), server_default=DEFAULT_TENANT)


class ConfigColumns:
    """The columns of an agent's configuration but its name (the fields of ``AgentConfig``), in
    every table that holds one: ``agents``, ``agent_versions`` and ``agent_versions_archive``.
    A new field of ``AgentConfig`` is a column here, and a revision in ``migrations/`` (checked
    at import: ``_config_columns``)."""

    description: Mapped[str] = mapped_column(LONG_TEXT)
    system_prompt: Mapped[str] = mapped_column(LONG_TEXT)
    tools: Mapped[list[str]] = mapped_column(JSON)
    model: Mapped[str] = mapped_column(String(200))
    stratum: Mapped[str | None] = mapped_column(String(8))
    tags: Mapped[list[str]] = mapped_column(JSON)


#: The agents' columns indexed after their tenant.
TENANT_INDEXED: Final = ("stratum", "tools_mask", "created_at", "updated_at", "execution_count")


class AgentRow(ConfigColumns, TenantColumn, Base):
    __tablename__ = "agents"
    __table_args__ = (
        #: Names are unique per tenant: ``acme`` and ``globex`` may both have ``lead_qualifier``.
        UniqueConstraint("tenant", "name", name="uq_agents_tenant_name"),
        # Each search filter and sort within the tenant (revision 0009): a tenant's page sorted
        # by creation walks its own range, whatever other tenants hold.
        *(Index(f"ix_agents_tenant_{c}", "tenant", c) for c in TENANT_INDEXED),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH))
    tools_mask: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_executed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    version: Mapped[int] = mapped_column(Counter)
    builder: Mapped[str] = mapped_column(String(200), default=BUILDER)
    execution_count: Mapped[int] = mapped_column(Counter)
    success_count: Mapped[int] = mapped_column(Counter)
    error_count: Mapped[int] = mapped_column(Counter)
    #: Lifetime total of the history file format; equals execution_count for agents run here,
    #: and keeps an imported file's own figure exactly.
    total_executions: Mapped[int] = mapped_column(Counter)


class AgentTagRow(TenantColumn, Base):
    __tablename__ = "agent_tags"

    tag: Mapped[str] = mapped_column(String(32), primary_key=True)
    agent_id: Mapped[int] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class ExecutionRow(TenantColumn, Base):
    __tablename__ = "executions"
    __table_args__ = (
        Index("ix_executions_agent_id_id", "agent_id", "id"),
        Index("ix_executions_agent_name_id", "agent_name", "id"),
    )

    id: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=True)
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    agent_name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH))
    execution_id: Mapped[str] = mapped_column(String(64))
    timestamp: Mapped[datetime] = mapped_column(UtcDateTime)
    task: Mapped[str] = mapped_column(LONG_TEXT)
    result_summary: Mapped[str] = mapped_column(LONG_TEXT)
    success: Mapped[bool] = mapped_column(Boolean)
    duration_seconds: Mapped[float] = mapped_column(DOUBLE_FLOAT)
    tool_calls_count: Mapped[int] = mapped_column(Integer)
    error_type: Mapped[str | None] = mapped_column(String(100))
    #: The agent version that ran (NULL: recorded before revision 0006, or imported).
    agent_version: Mapped[int | None] = mapped_column(Counter)


class AgentVersionRow(ConfigColumns, TenantColumn, Base):
    """An immutable snapshot of an agent's configuration at one version (revision 0006).

    Keyed by ``(agent_id, version)``; on SQLite a ``WITHOUT ROWID`` table, so that the row is
    stored in its key's B-tree: a snapshot costs a write of one B-tree, not of a table and an
    index, and an agent's newest versions are read from one range of it."""

    __tablename__ = "agent_versions"
    __table_args__ = ({"sqlite_with_rowid": False},)

    agent_id: Mapped[int] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    message: Mapped[str | None] = mapped_column(LONG_TEXT)


class ArchivedVersionRow(ConfigColumns, TenantColumn, Base):
    """The snapshots of agents deleted with ``delete_history=False``, kept by name beside
    their archived history."""

    __tablename__ = "agent_versions_archive"
    __table_args__ = (Index("ix_agent_versions_archive_agent_name_id", "agent_name", "id"),)

    id: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=True)
    agent_name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH))
    version: Mapped[int] = mapped_column(Counter)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    message: Mapped[str | None] = mapped_column(LONG_TEXT)


class AgentLabelRow(TenantColumn, Base):
    """Where each label of an agent points now."""

    __tablename__ = "agent_labels"

    agent_id: Mapped[int] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    label: Mapped[str] = mapped_column(String(LABEL_MAX_LENGTH), primary_key=True)
    version: Mapped[int] = mapped_column(Counter)


class LabelMoveRow(TenantColumn, Base):
    """The label log: every set, move and removal; archived like the versions."""

    __tablename__ = "agent_label_moves"
    __table_args__ = (
        Index("ix_agent_label_moves_agent_id_id", "agent_id", "id"),
        Index("ix_agent_label_moves_agent_name_id", "agent_name", "id"),
    )

    id: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=True)
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    agent_name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH))
    label: Mapped[str] = mapped_column(String(LABEL_MAX_LENGTH))
    from_version: Mapped[int | None] = mapped_column(Counter)
    to_version: Mapped[int | None] = mapped_column(Counter)
    moved_at: Mapped[datetime] = mapped_column(UtcDateTime)
    note: Mapped[str | None] = mapped_column(LONG_TEXT)
    #: A split's whole target, spelled ``3=90 4=10`` (``routing.spelled``); None for one version.
    from_weights: Mapped[str | None] = mapped_column(String(WEIGHTS_MAX_LENGTH))
    to_weights: Mapped[str | None] = mapped_column(String(WEIGHTS_MAX_LENGTH))
    rollback: Mapped[bool] = mapped_column(Boolean, server_default=false())
    forced: Mapped[bool] = mapped_column(Boolean, server_default=false())
    #: The gate's checks (``GateCheck`` documents); None where the label had no gate.
    checks: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    #: The entry came with an imported ``{name}_versions.json`` (revision 0013).
    imported: Mapped[bool] = mapped_column(Boolean, server_default=false())


class LabelShareRow(TenantColumn, Base):
    """The shares of a label that splits its traffic over versions (``agent_labels.version``
    is then its main version); a label on one version has none."""

    __tablename__ = "agent_label_shares"
    __table_args__ = (
        ForeignKeyConstraint(
            ["agent_id", "label"],
            ["agent_labels.agent_id", "agent_labels.label"],
            ondelete="CASCADE",
        ),
    )

    agent_id: Mapped[int] = mapped_column(primary_key=True)
    label: Mapped[str] = mapped_column(String(LABEL_MAX_LENGTH), primary_key=True)
    version: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=False)
    weight: Mapped[int] = mapped_column(Integer)


class LabelGateRow(TenantColumn, Base):
    """A protected label's gate (``protect_label``); the label need not be set yet."""

    __tablename__ = "agent_label_gates"

    agent_id: Mapped[int] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    label: Mapped[str] = mapped_column(String(LABEL_MAX_LENGTH), primary_key=True)
    min_runs: Mapped[int] = mapped_column(Counter)
    min_success_rate: Mapped[float] = mapped_column(DOUBLE_FLOAT)
    max_mean_duration: Mapped[float | None] = mapped_column(DOUBLE_FLOAT)


class VersionStatsRow(TenantColumn, Base):
    """Lifetime run counters of one version of an agent, moved by each run's transaction; they
    outlive the version's snapshot (pruning) but not the agent."""

    __tablename__ = "agent_version_stats"

    agent_id: Mapped[int] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=False)
    runs: Mapped[int] = mapped_column(Counter)
    successes: Mapped[int] = mapped_column(Counter)
    errors: Mapped[int] = mapped_column(Counter)
    duration_total: Mapped[float] = mapped_column(DOUBLE_FLOAT)
    last_executed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class TenantRow(Base):
    """Each tenant a store was opened for, to write (``acti-store tenants``): its names are
    listed here, outside row-level security, so that a role bound by it can list them."""

    __tablename__ = "agent_tenants"

    name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    max_agents: Mapped[int | None] = mapped_column(Integer)  # None: no limit (0014)


class StoreSettingRow(Base):
    """The store's settings by name (0014): ``tenants``, ``strict`` or ``open``."""

    __tablename__ = "agent_store_settings"

    name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))


class ChangeRow(TenantColumn, Base):
    """The change feed (``acti_store.changes``): one row per change of a configuration, written
    in the change's own transaction; ``seq`` numbers a tenant's changes in commit order
    (``ChangeCounterRow``). No foreign key: a deleted agent's changes stay. One B-tree, written
    by every write of a configuration: ``WITHOUT ROWID`` on SQLite, and no index of ``at`` (a
    prune, rare, reads the tenant's changes to find where to cut)."""

    __tablename__ = "agent_changes"
    __table_args__ = ({"sqlite_with_rowid": False},)

    tenant: Mapped[str] = mapped_column(
        String(NAME_MAX_LENGTH), primary_key=True, server_default=DEFAULT_TENANT
    )
    seq: Mapped[int] = mapped_column(Counter, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String(16))
    agent: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH))
    version: Mapped[int | None] = mapped_column(Counter)
    label: Mapped[str | None] = mapped_column(String(LABEL_MAX_LENGTH))
    at: Mapped[datetime] = mapped_column(UtcDateTime)


class ChangeCounterRow(TenantColumn, Base):
    """A tenant's last change number, moved by each write's transaction just before it commits:
    the row lock it takes orders the numbers as the commits (``repository.feed``); and the
    last number pruned (a consumer behind it has lost changes)."""

    __tablename__ = "agent_change_counters"

    tenant: Mapped[str] = mapped_column(
        String(NAME_MAX_LENGTH), primary_key=True, server_default=DEFAULT_TENANT
    )
    last_seq: Mapped[int] = mapped_column(Counter)
    pruned_through: Mapped[int] = mapped_column(Counter, server_default="0")


class CheckpointRow(TenantColumn, Base):
    """Where a named consumer of the feed (a relay) has got to."""

    __tablename__ = "agent_change_checkpoints"

    tenant: Mapped[str] = mapped_column(
        String(NAME_MAX_LENGTH), primary_key=True, server_default=DEFAULT_TENANT
    )
    name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH), primary_key=True)
    seq: Mapped[int] = mapped_column(Counter)
    saved_at: Mapped[datetime] = mapped_column(UtcDateTime)


def _config_columns() -> None:
    """Refuse to start when ``ConfigColumns`` and ``AgentConfig`` disagree on the fields."""
    declared, fields = set(ConfigColumns.__annotations__), set(UPDATABLE_FIELDS)
    if declared != fields:
        raise RuntimeError(f"ConfigColumns must have a column per field of {sorted(fields)}")


_config_columns()


def _tenant_tables() -> None:
    """Refuse to start when ``tenancy.TENANT_TABLES`` and the tables with a tenant differ."""
    tables = {t.name for t in Base.metadata.tables.values() if "tenant" in t.c}
    if tables != TENANT_TABLES:
        raise RuntimeError(f"TENANT_TABLES must name every table with a tenant: {sorted(tables)}")


_tenant_tables()

#: The Core tables the repository writes its statements against.
agents = cast(Table, AgentRow.__table__)
agent_tags = cast(Table, AgentTagRow.__table__)
executions = cast(Table, ExecutionRow.__table__)
agent_versions = cast(Table, AgentVersionRow.__table__)
versions_archive = cast(Table, ArchivedVersionRow.__table__)
agent_labels = cast(Table, AgentLabelRow.__table__)
label_moves = cast(Table, LabelMoveRow.__table__)
version_stats = cast(Table, VersionStatsRow.__table__)
tenants = cast(Table, TenantRow.__table__)
store_settings = cast(Table, StoreSettingRow.__table__)
label_shares = cast(Table, LabelShareRow.__table__)
label_gates = cast(Table, LabelGateRow.__table__)
changes = cast(Table, ChangeRow.__table__)
change_counters = cast(Table, ChangeCounterRow.__table__)
checkpoints = cast(Table, CheckpointRow.__table__)
