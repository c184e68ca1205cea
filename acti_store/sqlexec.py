"""Hot statements: SQLAlchemy Core constructs compiled once per dialect, run on a DBAPI cursor.

The repository's frequent operations (get, create, record_execution, history reads, bulk paths)
are tiny statements whose cost in SQLAlchemy's execution layer (expression building, cache key
lookup, execution context, result proxy) is several times the database's own work. A
``Prepared`` statement keeps the table definitions and the dialect's SQL and type handling (the
compiled string, bind and result processors from SQLAlchemy's own types) and drops the rest:
parameters are processed and passed straight to the DBAPI cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

Processor = Callable[[Any], Any]
Row = tuple[Any, ...]
_REQUIRED: Any = object()


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
        processed = []
        for name, process, default in self.plan:
            value = values.get(name, default)
            if value is _REQUIRED:
                raise KeyError(name)
            processed.append(value if process is None or value is None else process(value))
        if self.positional:
            return processed
        return {name: value for (name, _, _), value in zip(self.plan, processed, strict=True)}

    def row(self, raw: Sequence[Any]) -> Row:
        """A result row with the result processors applied (``prepare_results`` first)."""
        if not self.results:
            return tuple(raw)
        row = list(raw)
        for index, process in self.results:
            row[index] = process(row[index])
        return tuple(row)


class Prepared:
    """A Core statement, compiled lazily once per dialect.

    ``columns`` names the columns an INSERT or UPDATE sets from parameters of the same names.
    """

    __slots__ = ("_by_dialect", "columns", "statement")

    def __init__(self, statement: ClauseElement, *, columns: Sequence[str] = ()) -> None:
        self.statement = statement
        self.columns = tuple(columns)
        self._by_dialect: dict[str, Compiled] = {}

    def compiled(self, dialect: Dialect) -> Compiled:
        found = self._by_dialect.get(dialect.name)
        if found is None:
            found = self._by_dialect[dialect.name] = _compile(self, dialect)
        return found


def _compile(prepared: Prepared, dialect: Dialect) -> Compiled:
    statement = prepared.statement
    if prepared.columns:
        compiled = statement.compile(dialect=dialect, column_keys=list(prepared.columns))
    else:
        compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    positional = compiled.positiontup is not None
    plan = []
    for name in compiled.positiontup or compiled.binds:
        bind = compiled.binds[name]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        plan.append((name, process, _REQUIRED if bind.required else bind.effective_value))
    columns: Sequence[Any] = compiled.returning or getattr(statement, "selected_columns", ())
    return Compiled(
        sql=compiled.string,
        positional=positional,
        plan=tuple(plan),
        dialect=dialect,
        result_types=tuple(column.type for column in columns),
    )


class Cursor:
    """A DBAPI cursor that runs ``Prepared`` statements for one dialect."""

    __slots__ = ("_cursor", "dialect")

    def __init__(self, cursor: Any, dialect: Dialect) -> None:
        self._cursor = cursor
        self.dialect = dialect

    def execute(self, prepared: Prepared, values: Mapping[str, Any] | None = None) -> int:
        """Run a statement; returns the number of rows it changed."""
        compiled = prepared.compiled(self.dialect)
        self._cursor.execute(compiled.sql, compiled.params(values or {}))
        return int(self._cursor.rowcount)

    def executemany(self, prepared: Prepared, rows: Iterable[Mapping[str, Any]]) -> None:
        compiled = prepared.compiled(self.dialect)
        self._cursor.executemany(compiled.sql, [compiled.params(r) for r in rows])

    def _query(self, prepared: Prepared, values: Mapping[str, Any] | None) -> Compiled:
        compiled = prepared.compiled(self.dialect)
        self._cursor.execute(compiled.sql, compiled.params(values or {}))
        if compiled.results is None:
            compiled.prepare_results(self._cursor.description)
        return compiled

    def all(self, prepared: Prepared, values: Mapping[str, Any] | None = None) -> list[Row]:
        compiled = self._query(prepared, values)
        return [compiled.row(raw) for raw in self._cursor.fetchall()]

    def first(self, prepared: Prepared, values: Mapping[str, Any] | None = None) -> Row | None:
        compiled = self._query(prepared, values)
        raw = self._cursor.fetchone()
        if raw is None:
            return None
        self._cursor.fetchall()  # drain, so the statement is finished on every driver
        return compiled.row(raw)

    def raw(self, sql: str) -> None:
        """Run a fixed SQL text (BEGIN, a PRAGMA)."""
        self._cursor.execute(sql)
