"""The change feed's statements and the one way a write appends its changes (``changes``).

A write names its changes as it goes (``changed``: kept on its cursor); ``append_changes`` writes
them as the transaction's last statements. First the tenant's counter row is moved by the
number of changes (an upsert: ``EngineStrategy.count_changes``); each change then takes its
number from that row. The row lock the counter's update takes is held until the commit, so a
second writer numbers its changes only once the first has committed: numbers are given in commit
order, and a consumer that has read change 10 will never see a 9 commit after it. (PostgreSQL's
and MariaDB's sequences give numbers at insert time: 10 can commit before 9, and a reader of
``seq > 9`` then never sees 9.) The lock is taken last, so a writer holds it only for its
commit, and waits on it holding no lock another writer needs after it (no deadlock). An engine
whose writers take turns for the whole transaction numbers each change after the feed's newest
instead, with no counter moved (``FeedStatements.counter`` None: ``engines.sqlite.statements``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

from sqlalchemy import Integer, String, bindparam, delete, literal, select, update
from sqlalchemy.sql import Select

from ..changes import Change
from ..schema import change_counters, changes, checkpoints
from ..sqlexec import Cursor, Prepared
from ..tenancy import TENANT, tenant_param
from ..versioning import LABEL_MAX_LENGTH

#: Changes a write keeps before it appends them (a long import appends as it goes, and takes the
#: counter's lock from its first batch to its commit).
APPEND_BATCH: Final = 1_000

_counters, _changes = change_counters.c, changes.c


def counter_moved(insert_of: Callable[[Any], Any]) -> Any:
    """The insert of a tenant's counter row at ``count`` (parameter), on the engine's
    ``insert_of`` (its dialect's ``insert``): an engine's upsert of it moves the row that is
    there (``count_changes``, ``engines.mariadb.statements``)."""
    return insert_of(change_counters).from_select(
        ["last_seq", "pruned_through", TENANT],
        select(bindparam("count", type_=Integer()), literal(0), tenant_param()),
    )


def count_changes(insert_of: Callable[[Any], Any]) -> Any:
    """The tenant's counter moved by ``count`` changes, its first inserting the row: the upsert
    (``INSERT ... ON CONFLICT DO UPDATE``) of the engines that have one."""
    counted = counter_moved(insert_of)
    return counted.on_conflict_do_update(
        index_elements=[_counters.tenant],
        set_={"last_seq": _counters.last_seq + counted.excluded.last_seq},
    )


def insert_change(seq: Any, *, scalar: bool = False) -> Prepared:
    """The INSERT of one change numbered ``seq`` (a SQL expression), its other columns bound
    (``kind``, ``agent``, ``version``, ``label``, ``at``) and its tenant the store's: the one
    shape every engine's feed appends with, whatever numbers it.

    ``scalar``: ``seq`` reads its tables through scalar subqueries only, so the row goes in as
    ``INSERT ... VALUES``. SQLite runs an ``INSERT ... SELECT`` whose SELECT reads the table it
    inserts into through a temporary table first (``OpenEphemeral``): 20-30 µs more per write
    than the same row by ``VALUES``. Otherwise ``seq`` reads a table (the counter just moved),
    which only a SELECT can name."""
    row = {
        "kind": bindparam("kind", type_=String()),
        "agent": bindparam("agent", type_=_changes.agent.type),
        "version": bindparam("version", type_=_changes.version.type),
        "label": bindparam("label", type_=String(LABEL_MAX_LENGTH)),
        "at": bindparam("at", type_=_changes.at.type),
    }
    if scalar:
        # inline: no RETURNING of a key given as an expression (nothing reads it back).
        return Prepared(changes.insert().inline().values(seq=seq, **row, tenant=tenant_param()))
    return Prepared(
        changes.insert().from_select(
            ["seq", *row, TENANT], select(seq, *row.values(), tenant_param())
        )
    )


#: One change, numbered from the counter just moved (``count`` changes, this the ``k``-th).
INSERT_CHANGE: Final = insert_change(
    _counters.last_seq - bindparam("count", type_=Integer()) + bindparam("k", Integer())
)


def _feed(after: Any) -> Select[Any]:
    """The tenant's counter, with the changes after ``after`` (an outer join: the counter's row
    alone when there are none), in one statement: one snapshot."""
    return (
        select(
            _counters.last_seq,
            _counters.pruned_through,
            _changes.seq,
            _changes.kind,
            _changes.agent,
            _changes.version,
            _changes.label,
            _changes.at,
        )
        .select_from(change_counters.outerjoin(changes, _changes.seq > after))
        .order_by(_changes.seq)
        .limit(bindparam("limit", type_=Integer()))
    )


#: The changes after ``after``, oldest first, at most ``limit``, behind the counter's figures.
FEED: Final = Prepared(_feed(bindparam("after", type_=_changes.seq.type)))
#: The tenant's newest change number (no row: none yet).
LAST_SEQ: Final = Prepared(select(_counters.last_seq))
#: The oldest change made at or after ``before``: pruning keeps it and every newer one. In
#: number order from the oldest, so it reads what it prunes and stops at the first it keeps.
FIRST_KEPT: Final = Prepared(
    select(_changes.seq)
    .where(_changes.at >= bindparam("before", type_=_changes.at.type))
    .order_by(_changes.seq)
    .limit(1)
)
PRUNE_CHANGES: Final = Prepared(
    delete(changes).where(_changes.seq <= bindparam("through", type_=_changes.seq.type))
)
MARK_PRUNED: Final = Prepared(
    update(change_counters)
    .where(_counters.pruned_through < bindparam("through", type_=_counters.pruned_through.type))
    .values(pruned_through=bindparam("through"))
)
CHECKPOINT: Final = Prepared(
    select(checkpoints.c.seq).where(checkpoints.c.name == bindparam("name", type_=String()))
)


def checkpoint_saved(insert_of: Callable[[Any], Any]) -> Any:
    """The insert of a named consumer's position (parameters ``name``, ``seq``, ``saved_at``),
    on the engine's ``insert_of``: an engine's upsert of it replaces the one there."""
    return insert_of(checkpoints).from_select(
        ["name", "seq", "saved_at", TENANT],
        select(
            bindparam("name", type_=String()),
            bindparam("seq", type_=checkpoints.c.seq.type),
            bindparam("saved_at", type_=checkpoints.c.saved_at.type),
            tenant_param(),
        ),
    )


def save_checkpoint(insert_of: Callable[[Any], Any]) -> Any:
    """A named consumer's position stored: the upsert of the engines with ``ON CONFLICT``."""
    saved = checkpoint_saved(insert_of)
    return saved.on_conflict_do_update(
        index_elements=[checkpoints.c.tenant, checkpoints.c.name],
        set_={"seq": saved.excluded.seq, "saved_at": saved.excluded.saved_at},
    )


def changed(
    cursor: Cursor,
    kind: str,
    agent: str,
    version: int | None,
    at: datetime,
    label: str | None = None,
) -> None:
    """Name a change of the write on ``cursor``: appended before it commits (``append_changes``)."""
    cursor.changes.append((kind, agent, version, label, at))


class FeedStatements(NamedTuple):
    """An engine's statements of the change feed (``EngineStrategy.feed_statements``): how a
    write appends its changes (``append_changes``), how the feed is read and pruned."""

    #: The tenant's counter moved by ``count`` (the engine's upsert: ``count_changes``), or
    #: None: ``insert`` numbers each change after the feed's last number itself (an engine whose
    #: writers take turns for the whole transaction: ``engines.sqlite.statements``).
    counter: Prepared | None
    #: Wakes the engine's watchers (PostgreSQL's NOTIFY), or None: they poll.
    notify: Prepared | None
    #: One change (parameters ``count``, ``k`` and the change's: ``INSERT_CHANGE``).
    insert: Prepared = INSERT_CHANGE
    #: The tenant's newest change number (no row: none yet).
    last: Prepared = LAST_SEQ
    #: The changes after ``after``, at most ``limit``, behind the feed's figures (``FEED``).
    read: Prepared = FEED
    #: The feed marked pruned through ``through`` (``MARK_PRUNED``).
    mark_pruned: Prepared = MARK_PRUNED


def append_changes(cursor: Cursor, statements: FeedStatements) -> None:
    """Append the changes named on ``cursor`` (``changed``), numbered in commit order: the
    counter moved, then a row per change, then the engine's wake-up of its watchers, if it has
    one. None waits for an answer: in a pipeline they go with the commit."""
    named, cursor.changes = cursor.changes, []
    if not named:
        return
    count = len(named)
    if statements.counter is not None:
        cursor.send(statements.counter, {"count": count})
    rows = [
        {"count": count, "k": k, "kind": kind, "agent": agent, "version": version}
        | {"label": label, "at": at}
        for k, (kind, agent, version, label, at) in enumerate(named, 1)
    ]
    if count == 1:  # a write's one change: the driver's plain execute, cheaper than many
        cursor.send(statements.insert, rows[0])
    else:
        cursor.executemany(statements.insert, rows)
    if statements.notify is not None:
        cursor.send(statements.notify)


def prune(cursor: Cursor, before: datetime, statements: FeedStatements) -> int:
    """Delete the changes made before ``before`` up to the first one made at or after it, and
    mark the feed pruned through the last deleted; how many were deleted. By number, not by
    time: what stays is every change from one on, so the feed never has a hole (the clocks of
    several processes may disagree a little: a change stamped before ``before`` but numbered
    after a later one stays)."""
    kept = cursor.first(FIRST_KEPT, {"before": before})
    if kept is None:  # every change is older: all go, up to the newest
        last = cursor.first(statements.last)
        through = 0 if last is None else last[0]
    else:
        through = kept[0] - 1
    pruned = cursor.execute(PRUNE_CHANGES, {"through": through}) if through > 0 else 0
    if pruned:  # last: the counter's row lock, for the commit only
        cursor.execute(statements.mark_pruned, {"through": through})
    return pruned


def change_from_row(row: Sequence[Any], tenant: str) -> Change:
    seq, kind, agent, version, label, at = row
    return Change.model_construct(
        seq=seq, kind=kind, agent=agent, version=version, label=label, at=at, tenant=tenant
    )


def feed_rows(
    rows: Sequence[Sequence[Any]],
) -> tuple[int, int, list[Sequence[Any]]]:
    """``FEED``'s rows as the newest number, the last number pruned, and the changes' rows."""
    if not rows:
        return 0, 0, []
    last, pruned = rows[0][0], rows[0][1]
    return last, pruned, [r[2:] for r in rows if r[2] is not None]
