"""Hot statements: SQLAlchemy Core constructs compiled once per dialect, run on a DBAPI cursor.

The repository's frequent operations (get, create, record_execution, history reads, bulk paths)
are tiny statements whose cost in SQLAlchemy's execution layer (expression building, cache key
lookup, execution context, result proxy) is several times the database's own work. A
``Prepared`` statement (``prepared``) keeps the table definitions and the dialect's SQL and type
handling (the compiled string, bind and result processors from SQLAlchemy's own types) and drops
the rest; here a ``Cursor`` passes its processed parameters straight to the DBAPI cursor and
reads the rows back (``fetched``; ``Answer`` for a statement whose answer comes later). The
statement's own names (``Prepared``, ``Compiled``, ``PlainInsert``, ``Processor``) are
importable from here as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Final

from sqlalchemy.engine import Dialect

from .prepared import _REQUIRED as _REQUIRED
from .prepared import Compiled, PlainInsert, Prepared, Processor
from .tenancy import TENANT

__all__ = [
    "Answer",
    "Compiled",
    "Cursor",
    "Load",
    "PlainInsert",
    "Prepared",
    "Processor",
    "fetched",
]


def fetched(cursor: Any, compiled: Compiled) -> list[Sequence[Any]]:
    """The rows of the statement ``cursor`` just ran, result processors applied (the fetch
    comes first: in pipeline mode it is what brings the answer, its description included)."""
    raw_rows = cursor.fetchall()
    if compiled.results is None:
        compiled.prepare_results(cursor.description)
    if not (results := compiled.results):
        return list(raw_rows)
    rows: list[Sequence[Any]] = []
    for raw in raw_rows:  # inline, not a call per row: a history read's 10 rows are a tenth
        row = list(raw)  # of its Python calls
        for index, process in results:
            row[index] = process(row[index])
        rows.append(row)
    return rows


class Answer:
    """What a statement sent by ``Cursor.later`` returned, once it is in: its rows (result
    processors applied) and the number of rows it changed."""

    __slots__ = ("expected", "rowcount", "rows")

    def __init__(self, expected: int | None = None) -> None:
        self.expected = expected
        self.rows: list[Sequence[Any]] = []
        self.rowcount = -1

    def take(self, cursor: Any, compiled: Compiled) -> None:
        if cursor.description is not None:  # the answer is in: its description with it
            self.rows = fetched(cursor, compiled)
        self.rowcount = int(cursor.rowcount)
        if self.expected is not None and self.rowcount != self.expected:
            what = " ".join(compiled.sql.split()[:3])
            raise AssertionError(f"{what} ... changed {self.rowcount} rows, not {self.expected}")


#: What a statement runs in when nothing about its preparing changes (``Cursor``).
_AS_PREPARED: Final[AbstractContextManager[None]] = nullcontext()

#: An engine's bulk load of rows of a ``Compiled`` INSERT on a DBAPI cursor: True when it loaded
#: them, False to leave them to ``executemany``: ``Cursor.executemany``.
Load = Callable[[Any, Compiled, Sequence[Mapping[str, Any]]], bool]


class Cursor:
    """A DBAPI cursor that runs ``Prepared`` statements for one dialect.

    With a ``pipeline`` (psycopg's pipeline mode, PostgreSQL writes) a statement is sent without
    waiting for its answer: ``send`` (no answer needed) queues it, and the next statement whose
    answer is needed (``execute``'s row count, ``first``, ``all``) or the commit fetches every
    answer at once. A transaction then costs a round trip per answer it needs, not per statement;
    one whose answers can all wait for the commit (``later``) costs one.
    """

    __slots__ = (
        "_cursor",
        "_later",
        "changes",
        "dialect",
        "driver",
        "load",
        "many_rows",
        "pipeline",
        "returning_batches",
        "tenant",
    )

    def __init__(
        self,
        cursor: Any,
        dialect: Dialect,
        pipeline: Any = None,
        driver: Any = None,
        *,
        many_rows: bool = False,
        returning_batches: bool = False,
        load: Load | None = None,
    ) -> None:
        self._cursor = cursor
        self.dialect = dialect
        self.pipeline = pipeline
        #: The driver's own connection (``all(prepare=False)`` sets psycopg's prepare threshold).
        self.driver = driver
        #: The engine's bulk loading (``repository.strategy``), for ``insert_rows``: many rows
        #: as one multi-row INSERT (``Prepared.many``), or the driver's executemany of INSERT
        #: ... RETURNING, its results read batch by batch (psycopg's ``returning=True``); for
        #: ``executemany``: rows streamed in (``load``; None: none).
        self.many_rows = many_rows
        self.returning_batches = returning_batches
        self.load = load
        #: The tenant its statements bind (``tenancy``): the store's, set by each transaction
        #: (``repository.transaction.use_tenant``); none set, a tenant's statement is refused.
        self.tenant: str | None = None
        self._later: list[tuple[Any, Compiled, Answer]] = []
        #: The changes its write has made, appended to the change feed before the commit
        #: (``repository.feed``): kind, agent, version, label, time.
        self.changes: list[tuple[str, str, int | None, str | None, Any]] = []

    def _values(self, compiled: Compiled, values: Mapping[str, Any] | None) -> Mapping[str, Any]:
        if compiled.tenant_bound:
            return {**values, TENANT: self._tenant()} if values else {TENANT: self._tenant()}
        return values or {}

    def _tenant(self) -> str:
        if self.tenant is None:  # a path that forgot it: never another tenant's rows
            raise RuntimeError("a statement of a tenant's rows on a cursor given no tenant")
        return self.tenant

    def later(
        self,
        prepared: Prepared,
        values: Mapping[str, Any] | None = None,
        *,
        rowcount: int | None = None,
    ) -> Answer:
        """Run a statement whose answer the transaction does not wait for: in a pipeline it
        goes on a cursor of its own and is read with the commit's (``settle``); else at once.

        With ``rowcount``, a statement that changed another number of rows raises
        ``AssertionError`` (an invariant's check; in a pipeline, once the answers are in).
        """
        compiled = prepared.compiled(self.dialect)
        answer = Answer(rowcount)
        if self.pipeline is None:
            self._cursor.execute(compiled.sql, compiled.params(self._values(compiled, values)))
            answer.take(self._cursor, compiled)
        else:
            own = self._cursor.connection.cursor()
            self._later.append((own, compiled, answer))
            own.execute(compiled.sql, compiled.params(self._values(compiled, values)))
        return answer

    def settle(self, *, failed: bool = False) -> None:
        """Read the answers of ``later``'s statements (the pipeline has synced) and close their
        cursors; after a failure, only close them."""
        later, self._later = self._later, []
        try:
            for own, compiled, answer in [] if failed else later:
                answer.take(own, compiled)
        finally:
            for own, _, _ in later:
                own.close()

    def execute(self, prepared: Prepared, values: Mapping[str, Any] | None = None) -> int:
        """Run a statement; returns the number of rows it changed."""
        self.send(prepared, values)
        if self.pipeline is not None:
            self.pipeline.sync()
        return int(self._cursor.rowcount)

    def send(self, prepared: Prepared, values: Mapping[str, Any] | None = None) -> None:
        """Run a statement whose answer is not needed (an error still ends the transaction)."""
        compiled = prepared.compiled(self.dialect)
        with self._planned_each_time(prepared.planned_each_time):
            self._cursor.execute(compiled.sql, compiled.params(self._values(compiled, values)))

    def _planned_each_time(self, unprepared: bool) -> AbstractContextManager[None]:
        """With ``unprepared``, psycopg's prepare threshold (sync or async) off meanwhile; else
        nothing (no generator made: every statement of every write passes here)."""
        if not unprepared:
            return _AS_PREPARED
        threshold = getattr(self.driver, "prepare_threshold", None)
        return _AS_PREPARED if threshold is None else self._threshold_off(threshold)

    @contextmanager
    def _threshold_off(self, threshold: int) -> Iterator[None]:
        self.driver.prepare_threshold = None
        try:
            yield
        finally:
            self.driver.prepare_threshold = threshold

    def executemany(self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run a statement for each of ``rows`` (what it returns is dropped). Outside a pipeline
        the engine's ``load`` may stream them in instead, with no statement per row (PostgreSQL:
        ``COPY``, ``engines.postgresql.statements.copy_rows``)."""
        compiled = prepared.compiled(self.dialect)
        if (
            self.pipeline is None
            and self.load is not None
            and self.load(self._cursor, compiled, rows := self._rows(compiled, rows))
        ):
            return
        rows = self._rows(compiled, rows)
        with self._planned_each_time(prepared.planned_each_time):
            if self.pipeline is not None:
                # Each sent without waiting, as psycopg's executemany would; not through it: in
                # pipeline mode it leaves results the cursor's next query then reads as its own.
                for row in rows:
                    self._cursor.execute(compiled.sql, compiled.params(row))
                return
            self._cursor.executemany(compiled.sql, [compiled.params(r) for r in rows])

    def _query(
        self, prepared: Prepared, values: Mapping[str, Any] | None, prepare: bool = True
    ) -> list[Sequence[Any]]:
        compiled = prepared.compiled(self.dialect)
        if self.pipeline is None:
            with self._planned_each_time(not prepare or prepared.planned_each_time):
                self._cursor.execute(compiled.sql, compiled.params(self._values(compiled, values)))
            return fetched(self._cursor, compiled)
        # In a pipeline, on a cursor of its own: the answers of the statements this cursor sent
        # before may come in while it sends this one, and the fetch would take one for its own.
        with self._cursor.connection.cursor() as own:
            own.execute(compiled.sql, compiled.params(self._values(compiled, values)))
            return fetched(own, compiled)

    def all(
        self, prepared: Prepared, values: Mapping[str, Any] | None = None, *, prepare: bool = True
    ) -> list[Sequence[Any]]:
        """Every row; ``prepare=False``: never a server-side prepared statement (psycopg would
        prepare it after a few runs, and then plan it without its values)."""
        return self._query(prepared, values, prepare)

    def first(
        self, prepared: Prepared, values: Mapping[str, Any] | None = None
    ) -> Sequence[Any] | None:
        """The first row (the statement is run to its end, so it holds no snapshot after)."""
        rows = self._query(prepared, values)
        return rows[0] if rows else None

    def insert_rows(
        self, prepared: Prepared, rows: Sequence[Mapping[str, Any]]
    ) -> list[Sequence[Any]]:
        """Run a single-row ``INSERT ... RETURNING`` for each of ``rows`` as ONE statement (a
        multi-row VALUES: ``many_rows``, SQLite's) where the engine takes one, else all at once
        (``returning_batches``, psycopg's), else row by row; returns what RETURNING gave, in no
        set order. Keep ``rows`` within the driver's parameter limit (SQLite: 999 on older
        builds).

        On SQLite one statement instead of one per row matters beyond the round trips: the
        full-text index (fed by a trigger) writes out its pending terms after every statement.
        """
        compiled = prepared.compiled(self.dialect)
        rows = self._rows(compiled, rows)
        many = prepared.many(self.dialect, len(rows)) if self.many_rows else None
        if many is not None:
            if many.positional:  # each row's values in turn: the multi-row statement's order
                params: Any = [value for row in rows for value in compiled.values(row)]
            else:
                params = many.params(
                    {
                        f"{key}_{index}": value
                        for index, row in enumerate(rows)
                        for key, value in row.items()
                    }
                )
            self._cursor.execute(many.sql, params)
            return fetched(self._cursor, many)
        if len(rows) > 1 and self.returning_batches:
            # psycopg: every row's INSERT sent at once (a pipeline), their RETURNING read after;
            # what this cursor sent before is answered first, so that its results are not read.
            if self.pipeline is not None:
                self.pipeline.sync()
            batches = [compiled.params(row) for row in rows]
            self._cursor.executemany(compiled.sql, batches, returning=True)
            returned: list[Sequence[Any]] = []
            for _ in self._cursor.results():
                returned.extend(fetched(self._cursor, compiled))
            return returned
        found = (self.first(prepared, row) for row in rows)
        return [row for row in found if row is not None]

    def _rows(
        self, compiled: Compiled, rows: Sequence[Mapping[str, Any]]
    ) -> Sequence[Mapping[str, Any]]:
        if not compiled.tenant_bound:
            return rows
        tenant = self._tenant()
        return [{**row, TENANT: tenant} for row in rows]

    def raw(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a fixed SQL text (BEGIN, a PRAGMA), with its positional ``params`` if any."""
        self._cursor.execute(sql, params) if params else self._cursor.execute(sql)
