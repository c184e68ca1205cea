"""The repository's statements, built once and compiled once per dialect (``sqlexec``), and the
mapping between their rows and the domain models.

Stored rows were validated on the way in: they become models without re-validation (``trusted``).
A row's fields are read by name: each name's position is taken from the column list the statement
selects (``AGENT_COLUMNS``, ``EXECUTION_COLUMNS``), so reordering a list moves every reader with
it. The configuration columns, and how a row maps to an agent and back, derive from the fields of
``AgentConfig``: a new field needs no change here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from pydantic import BaseModel
from sqlalchemy import (
    JSON,
    Column,
    Integer,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.sql.elements import ColumnElement

from ..models import (
    HISTORY_MAX_RECORDS,
    UPDATABLE_FIELDS,
    Agent,
    AgentConfig,
    AgentMetadata,
    ExecutionHistory,
    ExecutionRecord,
    ExecutionStats,
    trusted,
)
from ..schema import agent_tags, agents, executions
from ..sqlexec import Cursor, Prepared
from ..tool_masks import tools_mask

M = TypeVar("M", bound=BaseModel)

# --------------------------------------------------------------------------------------------------
# Columns, and where each field sits in a row
# --------------------------------------------------------------------------------------------------

#: An agent's configuration columns but its name (what a version snapshot copies), in the
#: model's order.
CONFIG_COLUMNS: Final = tuple(agents.c[field] for field in UPDATABLE_FIELDS)
#: What every read of whole agents selects, in this order.
AGENT_COLUMNS: Final = (
    agents.c.id,
    agents.c.name,
    *CONFIG_COLUMNS,
    agents.c.created_at,
    agents.c.updated_at,
    agents.c.last_executed_at,
    agents.c.version,
    agents.c.builder,
    agents.c.execution_count,
    agents.c.success_count,
    agents.c.error_count,
    agents.c.total_executions,
)
#: What every read of history records selects, in this order (after any leading columns).
EXECUTION_COLUMNS: Final = (
    executions.c.execution_id,
    executions.c.timestamp,
    executions.c.task,
    executions.c.result_summary,
    executions.c.success,
    executions.c.duration_seconds,
    executions.c.tool_calls_count,
    executions.c.error_type,
)


def _positions(columns: Sequence[Column[Any]]) -> dict[str, int]:
    """Where each of ``columns`` (by key) sits in a row that selects them."""
    return {column.key: index for index, column in enumerate(columns)}


_AGENT_AT: Final = _positions(AGENT_COLUMNS)
_RECORD_AT: Final = _positions(EXECUTION_COLUMNS)

# Positions in a row of AGENT_COLUMNS: plain integers, read as fast as literals.
ID: Final = _AGENT_AT["id"]
NAME: Final = _AGENT_AT["name"]
LAST_EXECUTED_AT: Final = _AGENT_AT["last_executed_at"]
SUCCESS_COUNT: Final = _AGENT_AT["success_count"]
ERROR_COUNT: Final = _AGENT_AT["error_count"]
TOTAL_EXECUTIONS: Final = _AGENT_AT["total_executions"]

# Positions in a row of EXECUTION_COLUMNS (from its first record column).
_EXECUTION_ID: Final = _RECORD_AT["execution_id"]
_TIMESTAMP: Final = _RECORD_AT["timestamp"]
_TASK: Final = _RECORD_AT["task"]
_RESULT_SUMMARY: Final = _RECORD_AT["result_summary"]
_SUCCESS: Final = _RECORD_AT["success"]
_DURATION_SECONDS: Final = _RECORD_AT["duration_seconds"]
_TOOL_CALLS_COUNT: Final = _RECORD_AT["tool_calls_count"]
_ERROR_TYPE: Final = _RECORD_AT["error_type"]

#: The parameters an agent row is written from: ``config_values`` | ``metadata_values``.
_CONFIG_KEYS: Final = ("name", *UPDATABLE_FIELDS, "tools_mask")
_METADATA_KEYS: Final = (
    "created_at",
    "updated_at",
    "last_executed_at",
    "version",
    "builder",
    "execution_count",
    "success_count",
    "error_count",
    "total_executions",
)
_RECORD_KEYS: Final = (
    "agent_id",
    "agent_name",
    *(c.name for c in EXECUTION_COLUMNS),
    "agent_version",
)

# --------------------------------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------------------------------

BY_NAME: Final = agents.c.name == bindparam("name")
_of_agent = executions.c.agent_id == bindparam("agent_id")

GET: Final = Prepared(select(*AGENT_COLUMNS).where(BY_NAME))
GET_FOR_UPDATE: Final = Prepared(select(*AGENT_COLUMNS).where(BY_NAME).with_for_update())
GET_ID: Final = Prepared(select(agents.c.id).where(BY_NAME))
ALL: Final = Prepared(select(*AGENT_COLUMNS).order_by(agents.c.name))
NAMES: Final = Prepared(select(agents.c.name).order_by(agents.c.name))
COUNT_BY_STRATUM: Final = Prepared(
    select(agents.c.stratum, func.count()).group_by(agents.c.stratum)
)
_ranked = select(
    agents.c.id,
    func.row_number().over(partition_by=agents.c.stratum, order_by=agents.c.name).label("rank"),
).subquery()
#: The first ``limit`` agents by name of each stratum value (NULL included), by name.
FIRST_BY_STRATUM: Final = Prepared(
    select(*AGENT_COLUMNS)
    .join_from(agents, _ranked, _ranked.c.id == agents.c.id)
    .where(_ranked.c.rank <= bindparam("limit"))
    .order_by(agents.c.name)
)
#: Run for one row or many at once (``Cursor.insert_rows``): the name maps returned ids back.
#: The columns of a new agent's row, as ``config_values`` and ``metadata_values`` give them.
AGENT_KEYS: Final = _CONFIG_KEYS + _METADATA_KEYS
INSERT_AGENT: Final = Prepared(
    insert(agents).returning(agents.c.id, agents.c.name), columns=AGENT_KEYS
)
_UPDATES: dict[frozenset[str], Prepared] = {}


def update_statement(fields: Iterable[str]) -> Prepared:
    """The UPDATE of an agent that sets ``fields`` (config fields), its version and update time.

    Only the fields given: assigning a column, even its own value, rewrites its index entries.
    One statement per set of fields, built when first needed (at most 2**6).
    """
    key = frozenset(fields)
    found = _UPDATES.get(key)
    if found is None:
        columns = [k for k in _CONFIG_KEYS if k in key or (k == "tools_mask" and "tools" in key)]
        found = _UPDATES[key] = Prepared(
            update(agents).where(
                agents.c.id == bindparam("where_id"),
                agents.c.version == bindparam("where_version"),
            ),
            columns=(*columns, "updated_at", "version"),
        )
    return found


DELETE_AGENT: Final = Prepared(delete(agents).where(agents.c.id == bindparam("agent_id")))
INSERT_TAG: Final = Prepared(insert(agent_tags), columns=("agent_id", "tag"))
DELETE_TAGS: Final = Prepared(
    delete(agent_tags).where(agent_tags.c.agent_id == bindparam("agent_id"))
)
INSERT_EXECUTION: Final = Prepared(insert(executions), columns=_RECORD_KEYS)
DELETE_HISTORY: Final = Prepared(delete(executions).where(_of_agent))
ARCHIVE_HISTORY: Final = Prepared(
    update(executions)
    .where(executions.c.agent_id == bindparam("archived_id"))
    .values(agent_id=None)
)
HAS_HISTORY: Final = Prepared(select(executions.c.id).where(_of_agent).limit(1))
SET_TOTAL: Final = Prepared(
    update(agents).where(agents.c.id == bindparam("agent_id")), columns=("total_executions",)
)
#: A history row: the agent's lifetime total, then a record (all NULL when it has none).
_HISTORY_COLUMNS: Final = (agents.c.total_executions, *EXECUTION_COLUMNS)
_HISTORY_TOTAL: Final = _positions(_HISTORY_COLUMNS)["total_executions"]
_HISTORY_RECORD_OFFSET: Final = len(_HISTORY_COLUMNS) - len(EXECUTION_COLUMNS)


def _history_statement(errors_only: bool) -> Prepared:
    """One statement for the total and the newest records: a consistent read on any engine."""
    joined = executions.c.agent_id == agents.c.id
    if errors_only:
        joined = and_(joined, executions.c.success.is_(False))
    return Prepared(
        select(*_HISTORY_COLUMNS)
        .select_from(agents.outerjoin(executions, joined))
        .where(BY_NAME)
        .order_by(executions.c.id.desc())
        .limit(bindparam("limit", type_=Integer()))
    )


#: The newest records of an agent, by ``errors_only``.
HISTORY: Final = {False: _history_statement(False), True: _history_statement(True)}
STATS: Final = Prepared(
    select(func.count(executions.c.id), func.avg(executions.c.duration_seconds)).where(_of_agent)
)
_archived = and_(executions.c.agent_id.is_(None), executions.c.agent_name == bindparam("name"))
ARCHIVED_COUNT: Final = Prepared(select(func.count()).where(_archived))
ARCHIVED: Final = Prepared(
    select(*EXECUTION_COLUMNS)
    .where(_archived)
    .order_by(executions.c.id.desc())
    .limit(HISTORY_MAX_RECORDS)
)
#: The ids of a page of agents after the name ``after``, by name (``page_size`` of them).
EXPORT_PAGE: Final = (
    select(agents.c.id)
    .where(agents.c.name > bindparam("after"))
    .order_by(agents.c.name)
    .limit(bindparam("page_size", type_=Integer()))
)
#: The page of whole agents after the name ``after``, by name (export, ``iter_agents``).
AGENTS_PAGE: Final = Prepared(EXPORT_PAGE.with_only_columns(*AGENT_COLUMNS))
#: A row of ``EXPORT_RECORDS``: the record's agent id, then the record.
_EXPORT_RECORD_COLUMNS: Final = (executions.c.agent_id, *EXECUTION_COLUMNS)
_EXPORT_RECORD_AGENT_ID: Final = _positions(_EXPORT_RECORD_COLUMNS)["agent_id"]
_EXPORT_RECORD_OFFSET: Final = len(_EXPORT_RECORD_COLUMNS) - len(EXECUTION_COLUMNS)


def records_of(page: ColumnElement[bool]) -> Prepared:
    """The export's records (``EXPORT_RECORDS`` rows) of the agents ``page`` selects."""
    return Prepared(
        select(*_EXPORT_RECORD_COLUMNS)
        .where(page)
        .order_by(executions.c.agent_id, executions.c.id.desc())
    )


EXPORT_RECORDS: Final = records_of(executions.c.agent_id.in_(EXPORT_PAGE.scalar_subquery()))

# --------------------------------------------------------------------------------------------------
# Rows <-> domain models
# --------------------------------------------------------------------------------------------------


def model_reader(
    model: type[M],
    columns: Sequence[Column[Any]],
    *given: str,
    **nested: type[BaseModel],
) -> Callable[..., M]:
    """What makes a ``model`` (``trusted``) of a row that selects ``columns``, its fields in the
    model's order: each read by name, from the position its column has in ``columns`` (JSON lists
    copied: a model owns its lists); a ``nested`` field a model of its own read from the same row;
    the fields ``given`` passed after the row, in that order.

    The reader is compiled once, as the hand-written function would read (``row[3]``, a constant
    index per field): a row is read as fast as by literal positions, and a field added to the
    model or a column list moves every reader with it."""
    at = _positions(columns)
    namespace: dict[str, Any] = {"trusted": trusted}

    def value(name: str) -> str:
        if name in given:
            return name
        if name in nested:
            return build(nested[name])
        if isinstance(columns[at[name]].type, JSON):
            return f"list(row[{at[name]}])"
        return f"row[{at[name]}]"

    def build(kind: type[BaseModel]) -> str:
        namespace[kind.__name__] = kind
        values = ", ".join(f"{name}={value(name)}" for name in kind.model_fields)
        return f"trusted({kind.__name__}, {values})"

    source = f"def read({', '.join(['row', *given])}):\n    return {build(model)}\n"
    exec(source, namespace)  # our own text: names of model fields, and integers
    reader: Callable[..., M] = namespace["read"]
    reader.__qualname__ = f"model_reader.<{model.__name__}>"
    return reader


#: The agent in a row of ``AGENT_COLUMNS``.
agent_from_row: Final = model_reader(Agent, AGENT_COLUMNS, metadata=AgentMetadata)


def record_from_row(row: Sequence[Any], offset: int = 0) -> ExecutionRecord:
    """The record in a row whose ``EXECUTION_COLUMNS`` start at ``offset``."""
    return trusted(
        ExecutionRecord,
        execution_id=row[offset + _EXECUTION_ID],
        timestamp=row[offset + _TIMESTAMP],
        task=row[offset + _TASK],
        result_summary=row[offset + _RESULT_SUMMARY],
        success=bool(row[offset + _SUCCESS]),
        duration_seconds=row[offset + _DURATION_SECONDS],
        tool_calls_count=row[offset + _TOOL_CALLS_COUNT],
        error_type=row[offset + _ERROR_TYPE],
    )


def history_from_rows(name: str, rows: Sequence[Sequence[Any]]) -> ExecutionHistory:
    """The history of agent ``name`` in the rows of a ``HISTORY`` statement (one at least: an
    agent without records has one row, its record columns NULL)."""
    first_record_column = _HISTORY_RECORD_OFFSET + _EXECUTION_ID
    return trusted(
        ExecutionHistory,
        agent_name=name,
        executions=[
            record_from_row(r, _HISTORY_RECORD_OFFSET)
            for r in rows
            if r[first_record_column] is not None
        ],
        total_executions=rows[0][_HISTORY_TOTAL],
    )


def archived_from_rows(
    name: str, total: Sequence[Any] | None, rows: Sequence[Sequence[Any]]
) -> ExecutionHistory:
    """The archived history of ``name`` from its ``ARCHIVED_COUNT`` and ``ARCHIVED`` rows."""
    return trusted(
        ExecutionHistory,
        agent_name=name,
        executions=[record_from_row(r) for r in rows],
        total_executions=total[0] if total else 0,
    )


def stats_from_rows(row: Sequence[Any], stats: Sequence[Any]) -> ExecutionStats:
    """``ExecutionStats`` from an agent's ``GET`` row and its ``STATS`` row."""
    retained, average = stats
    return ExecutionStats(
        total_executions=row[TOTAL_EXECUTIONS],
        success_count=row[SUCCESS_COUNT],
        error_count=row[ERROR_COUNT],
        retained=retained,
        average_duration_seconds=None if average is None else float(average),
        last_executed_at=row[LAST_EXECUTED_AT],
    )


#: How an engine reads the records of an export page: the cursor, the page's agent ids and the
#: page's parameters of ``EXPORT_RECORDS`` (``EngineStrategy.export_records``).
RecordsOf = Callable[[Cursor, list[int], dict[str, Any]], list[Sequence[Any]]]


def export_page(
    cursor: Cursor, after: str, page_size: int, records_of_page: RecordsOf
) -> list[tuple[Agent, ExecutionHistory | None]]:
    """The agents after the name ``after`` (up to ``page_size``, by name), each with its history
    (None when it never ran, its records read by ``records_of_page``): two statements, so run
    them in one snapshot."""
    page = {"after": after, "page_size": page_size}
    rows = cursor.all(AGENTS_PAGE, page)
    if not rows:
        return []
    by_id: dict[int, list[ExecutionRecord]] = {row[ID]: [] for row in rows}
    records = records_of_page(cursor, list(by_id), page)
    for record in records:
        by_id[record[_EXPORT_RECORD_AGENT_ID]].append(
            record_from_row(record, _EXPORT_RECORD_OFFSET)
        )
    return [
        (
            agent_from_row(row),
            trusted(
                ExecutionHistory,
                agent_name=row[NAME],
                executions=by_id[row[ID]],
                total_executions=row[TOTAL_EXECUTIONS],
            )
            if by_id[row[ID]] or row[TOTAL_EXECUTIONS]
            else None,
        )
        for row in rows
    ]


def plain_values(config: AgentConfig, fields: Iterable[str]) -> dict[str, Any]:
    """``fields`` of ``config`` as statement parameters, lists copied."""
    return {
        field: list(value) if isinstance(value := getattr(config, field), list) else value
        for field in fields
    }


def config_values(config: AgentConfig) -> dict[str, Any]:
    """The parameters of an agent row's config columns."""
    values = plain_values(config, AgentConfig.model_fields)
    values["tools_mask"] = tools_mask(config.tools)
    return values


def metadata_values(meta: AgentMetadata, total_executions: int) -> dict[str, Any]:
    """The parameters of an agent row's metadata columns."""
    return {
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
        "last_executed_at": meta.last_executed_at,
        "version": meta.version,
        "builder": meta.builder,
        "execution_count": meta.execution_count,
        "success_count": meta.success_count,
        "error_count": meta.error_count,
        "total_executions": total_executions,
    }


def record_values(
    agent_id: int, name: str, record: ExecutionRecord, version: int | None = None
) -> dict[str, Any]:
    """The parameters of ``INSERT_EXECUTION`` for one record of an agent (``version``: the
    agent version that ran, None when unknown)."""
    return {
        "agent_version": version,
        "agent_id": agent_id,
        "agent_name": name,
        "execution_id": record.execution_id,
        "timestamp": record.timestamp,
        "task": record.task,
        "result_summary": record.result_summary,
        "success": record.success,
        "duration_seconds": record.duration_seconds,
        "tool_calls_count": record.tool_calls_count,
        "error_type": record.error_type,
    }


def insert_agents(cursor: Cursor, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Insert agent rows (one statement where the driver allows) and their tags; their ids by
    name."""
    ids = {name: agent_id for agent_id, name in cursor.insert_rows(INSERT_AGENT, rows)}
    insert_tags(cursor, rows, ids)
    return ids


def insert_tags(cursor: Cursor, rows: list[dict[str, Any]], ids: Mapping[str, int]) -> None:
    """The tags of new agent rows, once their ids (by name) are known."""
    tags = [
        {"agent_id": ids[values["name"]], "tag": tag} for values in rows for tag in values["tags"]
    ]
    if tags:
        cursor.executemany(INSERT_TAG, tags)
