"""Statements compiled once per kind of dialect: ``Prepared`` and the ``Compiled`` form it keeps.

A ``Prepared`` holds a SQLAlchemy Core statement and compiles it lazily, once per dialect class
and paramstyle, after ``tenancy.scoped`` has confined it to the store's tenant. What it keeps,
``Compiled``, is what the cursor (``sqlexec.Cursor``) needs and no more: the SQL text, the
parameters' plan in the driver's order with their bind processors and defaults, and the result
processors, set from the first result's description. A single-row INSERT whose every value is
a parameter named after its column is recognised as a ``PlainInsert`` by SQLAlchemy compiling
its own INSERT of the same columns (never by parsing SQL), and compiled on demand as one
multi-row ``VALUES`` (``Prepared.many``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Table, bindparam, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import SAWarning
from sqlalchemy.sql import ClauseElement, Insert
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

from .tenancy import TENANT, inserted_columns, scoped

#: A bind or result processor: SQLAlchemy's, from the type, for one dialect.
Processor = Callable[[Any], Any]
#: A plan's default of a parameter that has none: it must be given.
_REQUIRED: Any = object()


@dataclass(frozen=True, slots=True)
class PlainInsert:
    """A single-row INSERT into ``table`` whose every value is the parameter named after its
    column's key, in ``keys`` order: what an engine may load in bulk (``Prepared.many``, COPY)."""

    table: Table
    keys: tuple[str, ...]
    #: The columns it returns (``INSERT ... RETURNING``), if any.
    returning: tuple[Any, ...] = ()


@dataclass(slots=True)
class Compiled:
    """One statement as one dialect runs it."""

    sql: str
    positional: bool
    #: Per parameter, in the driver's order: name, bind processor, default (``_REQUIRED``).
    plan: tuple[tuple[str, Processor | None, Any], ...]
    dialect: Dialect
    result_types: tuple[TypeEngine[Any], ...]
    #: Result processors by column index, set from the first result's cursor description
    #: (some drivers' processors depend on the column type code the server reports).
    results: tuple[tuple[int, Processor], ...] | None = None
    #: Set when the statement is a ``PlainInsert``.
    plain_insert: PlainInsert | None = None
    #: The plan's parameters' types (what ``kept_statements`` writes of them).
    bind_types: tuple[TypeEngine[Any], ...] = ()
    #: The plan's names, and its bind processors by position (derived: ``__post_init__``).
    names: tuple[str, ...] = ()
    processors: tuple[tuple[int, Processor], ...] = ()
    #: Whether it binds the store's tenant (``tenancy.scoped``): the cursor adds it.
    tenant_bound: bool = False
    #: The parameters that have a default, with it (a LIMIT's OFFSET): taken when not given.
    defaults: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.names = tuple(name for name, _, _ in self.plan)
        self.defaults = {
            name: default for name, _, default in self.plan if default is not _REQUIRED
        }
        self.tenant_bound = TENANT in self.names
        self.processors = tuple(
            (index, process) for index, (_, process, _) in enumerate(self.plan) if process
        )

    def prepare_results(self, description: Sequence[Sequence[Any]] | None) -> None:
        results: list[tuple[int, Processor]] = []
        for index, type_ in enumerate(self.result_types):
            coltype = description[index][1] if description else None
            process = type_.dialect_impl(self.dialect).result_processor(self.dialect, coltype)
            if process is not None:
                results.append((index, process))
        self.results = tuple(results)

    def params(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        """The DBAPI parameters for ``values`` (bind processors applied).

        A required parameter missing from ``values`` raises ``KeyError``.
        """
        processed = self.values(values)
        if self.positional:
            return processed
        return dict(zip(self.names, processed, strict=True))

    def values(self, values: Mapping[str, Any]) -> list[Any]:
        """``params``, in the plan's order whatever the paramstyle."""
        if self.defaults:  # merged first, not on a KeyError: every LIMIT has its OFFSET
            values = {**self.defaults, **values}
        processed = [values[name] for name in self.names]
        for index, process in self.processors:
            value = processed[index]
            if value is not None:
                processed[index] = process(value)
        return processed


class Prepared:
    """A Core statement, compiled lazily once per kind of dialect.

    ``columns`` names the columns an INSERT or UPDATE sets from parameters of the same names.
    The compiled form is shared by the dialects of one class and paramstyle: two drivers of one
    database (psycopg and pg8000 are both "postgresql") differ in paramstyle and type handling,
    and one driver can be set to another paramstyle.
    """

    __slots__ = ("_by_dialect", "_many", "columns", "planned_each_time", "statement")

    def __init__(
        self,
        statement: ClauseElement,
        *,
        columns: Sequence[str] = (),
        planned_each_time: bool = False,
    ) -> None:
        self.statement = statement
        self.columns = inserted_columns(statement, tuple(columns))
        #: Never a server-side prepared statement (psycopg): planned for its values each time.
        #: For a lookup sent in a burst of writes into a table that starts empty: a prepared
        #: statement's generic plan, made while the table held a few rows, scans it, and stays
        #: a scan as it grows (until an ANALYZE): the agent's tags and first snapshot found by
        #: name took 0.13 ms each at 4,000 agents, 0.02 ms planned each time.
        self.planned_each_time = planned_each_time
        self._by_dialect: dict[tuple[type[Dialect], str], Compiled] = {}
        self._many: dict[tuple[type[Dialect], str, int], Compiled | None] = {}

    def compiled(self, dialect: Dialect) -> Compiled:
        key = (type(dialect), dialect.paramstyle)
        found = self._by_dialect.get(key)
        if found is None:
            found = self._by_dialect[key] = self.first_compile(dialect)
        return found

    def first_compile(self, dialect: Dialect) -> Compiled:
        """This statement compiled for ``dialect`` (once per kind: ``compiled``)."""
        return _compile(self, dialect)

    def many(self, dialect: Dialect, count: int) -> Compiled | None:
        """This statement, a ``PlainInsert``, for ``count`` rows at once: one multi-row
        ``VALUES`` that SQLAlchemy builds from the table (``Insert.values`` of ``count``
        parameter sets, RETURNING kept), whose parameters are each row's in turn (row after row,
        in the single row's order); None for any other statement."""
        key = (type(dialect), dialect.paramstyle, count)
        if key not in self._many:
            self._many[key] = _many_rows(self.compiled(dialect), dialect, count)
        return self._many[key]


def _compile(prepared: Prepared, dialect: Dialect) -> Compiled:
    statement = scoped(prepared.statement)
    if prepared.columns:
        compiled = statement.compile(dialect=dialect, column_keys=list(prepared.columns))
    else:
        compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    positional = compiled.positiontup is not None
    names = list(compiled.positiontup or compiled.binds)
    binds = [compiled.binds[name] for name in names]
    processors = [b.type.dialect_impl(dialect).bind_processor(dialect) for b in binds]
    defaults = [_REQUIRED if b.required else b.effective_value for b in binds]
    plan = tuple(zip(names, processors, defaults, strict=True))
    columns: Sequence[Any] = compiled.returning or getattr(statement, "selected_columns", ())
    return Compiled(
        sql=compiled.string,
        positional=positional,
        plan=plan,
        dialect=dialect,
        result_types=tuple(column.type for column in columns),
        plain_insert=_plain_insert(statement, compiled, dialect),
        bind_types=tuple(bind.type for bind in binds),
    )


def _plain_insert(
    statement: ClauseElement, compiled: SQLCompiler, dialect: Dialect
) -> PlainInsert | None:
    """The ``PlainInsert`` ``statement`` is, if it is one: SQLAlchemy's own INSERT of the
    parameters' columns into its table (RETURNING the same) compiles to the very same SQL."""
    if not isinstance(statement, Insert) or not isinstance(statement.table, Table):
        return None
    table = statement.table
    keys = tuple(compiled.positiontup or compiled.binds)
    if not keys or any(key not in table.c for key in keys):
        return None
    plain = insert(table)
    if compiled.returning:
        plain = plain.returning(*compiled.returning)
    with warnings.catch_warnings():  # SQLAlchemy's word on the probe (a key left out), dropped
        warnings.simplefilter("ignore", SAWarning)
        probe = plain.compile(dialect=dialect, column_keys=list(keys)).string
    if probe != compiled.string:
        return None
    return PlainInsert(table, keys, tuple(compiled.returning or ()))


def _many_rows(single: Compiled, dialect: Dialect, count: int) -> Compiled | None:
    plain = single.plain_insert
    if plain is None or count < 2:
        return None
    table = plain.table
    parameter_sets = [
        {key: bindparam(f"{key}_{row}", type_=table.c[key].type) for key in plain.keys}
        for row in range(count)
    ]
    statement: Insert = insert(table).values(parameter_sets)
    if plain.returning:
        statement = statement.returning(*plain.returning)
    many = _compile(Prepared(statement), dialect)
    expected = tuple(f"{key}_{row}" for row in range(count) for key in plain.keys)
    return many if many.names == expected else None
