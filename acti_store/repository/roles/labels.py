"""The labels role: where labels point (one version or a weighted split), how a key resolves,
the gates that protect a label, and moves forward and back, each a transaction on the
statements of ``version_statements``.

A move reads the label's target, its gate and the figures of every version it would send a
share to with the agent's row locked, so runs recorded meanwhile wait for it, and two movers
checking one expected target cannot both move (``tests/test_label_gates.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...errors import (
    ArgumentTypeError,
    GateRefusedError,
    InvalidInputError,
    LabelNotFoundError,
    VersionConflictError,
)
from ...models import COUNTER_MAX
from ...routing import (
    Weights,
    checked_key,
    checked_weights,
    comparison,
    figures,
    gate_check,
    is_split,
    main_version,
    pick,
)
from ...sqlexec import Cursor
from ...validation import (
    ARGUMENT,
    flag,
    forced_note,
    integer,
    optional_message,
    quoted,
    seconds,
    version_number,
)
from ...versioning import (
    DURATION_MAX,
    AgentVersion,
    GateCheck,
    LabelGate,
    LabelMove,
    VersionComparison,
    VersionFigures,
)
from ..core import Role, agent_row
from ..feed import changed
from ..statements import ID, agent_from_row
from ..version_statements import (
    DELETE_GATE,
    DELETE_LABEL,
    DELETE_SHARES,
    GATE,
    GATES,
    INSERT_GATE,
    INSERT_LABEL,
    INSERT_MOVE,
    INSERT_SHARE,
    LABEL,
    LABEL_SHARES,
    LABELS,
    MOVE_LABEL,
    MOVES,
    SHARES,
    VERSION_FIGURES,
    gate_from_row,
    move_from_row,
    move_values,
    splits_from_rows,
)
from ..versions import checked_label, find_version, version_that_ran


def _target(weights: Weights) -> int | Weights:
    """A target as the caller spelled it: a version number for one version."""
    return main_version(weights) if not is_split(weights) else weights


def label_target(cursor: Cursor, agent_id: int, label: str) -> Weights | None:
    """Where ``label`` points now, as weights (None: it is not set)."""
    keys = {"agent_id": agent_id, "label": label}
    found = cursor.first(LABEL, keys)
    if found is None:
        return None
    shares = cursor.all(LABEL_SHARES, keys)
    return {version: weight for version, weight in shares} if shares else {found[0]: 100}


def _not_set(cursor: Cursor, name: str, agent_id: int, label: str) -> LabelNotFoundError:
    labels = [row[0] for row in cursor.all(LABELS, {"agent_id": agent_id})]
    return LabelNotFoundError(name, label, labels)


class Labels(Role):
    """``set_label``, ``remove_label``, ``rollback_label``, ``label_weights``, ``resolve``,
    ``compare_versions``, ``protect_label``, ``unprotect_label`` and ``label_gates`` of the
    repository."""

    # -- reading -----------------------------------------------------------------------------------

    def label_weights(self, name: str) -> dict[str, Weights]:
        def work(cursor: Cursor) -> dict[str, Weights]:
            agent_id = agent_row(cursor, name)[ID]
            splits = splits_from_rows(cursor.all(SHARES, {"agent_id": agent_id}))
            return {
                label: splits.get(label, {version: 100})
                for label, version in cursor.all(LABELS, {"agent_id": agent_id})
            }

        return self._read(work, snapshot=True)

    def resolve(self, name: str, label: str | None = None, key: str | None = None) -> AgentVersion:
        if label is not None:
            checked_label(label)
        key = checked_key(key)

        def work(cursor: Cursor) -> AgentVersion:
            row = agent_row(cursor, name)
            if label is None:
                return find_version(cursor, name, row[ID], agent_from_row(row).metadata.version)
            weights = label_target(cursor, row[ID], label)
            if weights is None:
                raise _not_set(cursor, name, row[ID], label)
            return find_version(cursor, name, row[ID], pick(weights, name, label, key))

        return self._read(work, snapshot=True)

    def compare_versions(self, name: str, a: int, b: int) -> VersionComparison:
        version_number(a, "a")
        version_number(b, "b")
        if a == b:
            raise InvalidInputError(
                ARGUMENT, [("b", f"compare two different versions, not {a} twice")]
            )

        def work(cursor: Cursor) -> VersionComparison:
            row = agent_row(cursor, name)
            current = agent_from_row(row).metadata.version
            a_figures, b_figures = (
                self._figures(cursor, row[ID], version_that_ran(name, current, v)) for v in (a, b)
            )
            return comparison(name, a_figures, b_figures)

        return self._read(work, snapshot=True)

    def label_gates(self, name: str) -> dict[str, LabelGate]:
        def work(cursor: Cursor) -> dict[str, LabelGate]:
            agent_id = agent_row(cursor, name)[ID]
            return {
                row[0]: gate_from_row(row[1:]) for row in cursor.all(GATES, {"agent_id": agent_id})
            }

        return self._read(work, snapshot=True)

    @staticmethod
    def _figures(cursor: Cursor, agent_id: int, version: int) -> VersionFigures:
        found = cursor.first(VERSION_FIGURES, {"agent_id": agent_id, "version": version})
        runs, successes, duration = found if found is not None else (0, 0, 0.0)
        return figures(version, runs, successes, float(duration))

    # -- gates -------------------------------------------------------------------------------------

    def protect_label(
        self,
        name: str,
        label: str,
        *,
        min_runs: int = 0,
        min_success_rate: float = 0.0,
        max_mean_duration: float | None = None,
    ) -> None:
        checked_label(label)
        gate = LabelGate(
            min_runs=integer(min_runs, "min_runs", 0, COUNTER_MAX),
            min_success_rate=_rate(min_success_rate),
            max_mean_duration=(
                None
                if max_mean_duration is None
                else seconds(max_mean_duration, "max_mean_duration", DURATION_MAX)
            ),
        )

        def work(cursor: Cursor) -> None:
            keys = {"agent_id": agent_row(cursor, name, for_update=True)[ID], "label": label}
            cursor.execute(DELETE_GATE, keys)
            cursor.execute(INSERT_GATE, keys | gate.model_dump())

        self._write(work, name=name)

    def unprotect_label(self, name: str, label: str) -> bool:
        checked_label(label)

        def work(cursor: Cursor) -> bool:
            keys = {"agent_id": agent_row(cursor, name, for_update=True)[ID], "label": label}
            return bool(cursor.execute(DELETE_GATE, keys))

        return self._write(work, name=name)

    def _checked(
        self,
        cursor: Cursor,
        agent_id: int,
        name: str,
        label: str,
        target: Weights,
        force: bool,
    ) -> tuple[list[GateCheck] | None, bool]:
        """The gate's checks of the versions ``target`` sends shares to (None: no gate), and
        whether the move is forced past a refusal; ``GateRefusedError`` unless ``force``."""
        found = cursor.first(GATE, {"agent_id": agent_id, "label": label})
        if found is None:
            return None, False
        gate = gate_from_row(found)
        checks = [gate_check(gate, self._figures(cursor, agent_id, v)) for v in target]
        refused = any(check.failures for check in checks)
        if refused and not force:
            raise GateRefusedError(name, label, gate, checks)
        return checks, refused

    # -- moving ------------------------------------------------------------------------------------

    def set_label(
        self,
        name: str,
        label: str,
        version: int | Mapping[int, int],
        *,
        expected_version: int | Mapping[int, int] | None = None,
        note: str | None = None,
        force: bool = False,
    ) -> None:
        checked_label(label)
        target = checked_weights(version)
        expected = (
            None
            if expected_version is None
            else checked_weights(expected_version, "expected_version")
        )
        note = forced_note(note, flag(force, "force"))

        def work(cursor: Cursor) -> None:
            agent_id = agent_row(cursor, name, for_update=True)[ID]
            now = label_target(cursor, agent_id, label)
            if expected is not None and now != expected:
                actual = None if now is None else _target(now)
                raise VersionConflictError(name, _target(expected), actual, label=label)
            for number in target:
                find_version(cursor, name, agent_id, number)  # each must have a snapshot
            if now == target:
                return  # already there: no move to log
            checks, forced = self._checked(cursor, agent_id, name, label, target, force)
            self._move(
                cursor, agent_id, name, label, now, target, note, checks=checks, forced=forced
            )

        self._write(work, name=name)

    def remove_label(self, name: str, label: str, *, note: str | None = None) -> None:
        checked_label(label)
        note = optional_message(note, "note")

        def work(cursor: Cursor) -> None:
            agent_id = agent_row(cursor, name, for_update=True)[ID]
            now = label_target(cursor, agent_id, label)
            if now is None:
                raise _not_set(cursor, name, agent_id, label)
            self._move(cursor, agent_id, name, label, now, None, note)

        self._write(work, name=name)

    def rollback_label(
        self, name: str, label: str, *, note: str | None = None, force: bool = False
    ) -> Weights | None:
        checked_label(label)
        note = forced_note(note, flag(force, "force"))

        def work(cursor: Cursor) -> Weights | None:
            agent_id = agent_row(cursor, name, for_update=True)[ID]
            moves = [move_from_row(r) for r in cursor.all(MOVES, {"agent_id": agent_id})]
            undone = _last_move(m for m in moves if m.label == label)
            if undone is None:
                raise InvalidInputError(
                    ARGUMENT,
                    [("label", f"label {label!r} of agent {name!r} has no move to roll back")],
                )
            now, target = label_target(cursor, agent_id, label), undone.before
            checks, forced = None, False
            if target is not None:
                for number in target:
                    find_version(cursor, name, agent_id, number)
                checks, forced = self._checked(cursor, agent_id, name, label, target, force)
            self._move(
                cursor, agent_id, name, label, now, target, note,
                checks=checks, forced=forced, rollback=True,
            )  # fmt: skip
            return target

        return self._write(work, name=name)

    def _move(
        self,
        cursor: Cursor,
        agent_id: int,
        name: str,
        label: str,
        before: Weights | None,
        after: Weights | None,
        note: str | None,
        *,
        checks: list[GateCheck] | None = None,
        forced: bool = False,
        rollback: bool = False,
    ) -> None:
        """Point ``label`` at ``after`` (None: remove it) from ``before``, log the move, and
        name it as a change of the feed (``label_set`` with the main version it points at now,
        ``label_removed`` with the one it pointed at)."""
        keys = {"agent_id": agent_id, "label": label}
        if before is not None and is_split(before):
            cursor.execute(DELETE_SHARES, keys)
        if after is None:
            cursor.execute(DELETE_LABEL, keys)
        elif before is None:
            cursor.execute(INSERT_LABEL, keys | {"version": main_version(after)})
        else:
            cursor.execute(MOVE_LABEL, keys | {"to_version": main_version(after)})
        if after is not None and is_split(after):
            cursor.executemany(
                INSERT_SHARE, [keys | {"version": v, "weight": w} for v, w in after.items()]
            )
        move = LabelMove(
            label=label,
            from_version=None if before is None else main_version(before),
            to_version=None if after is None else main_version(after),
            moved_at=self.now(),
            note=note,
            from_weights=before if before is not None and is_split(before) else None,
            to_weights=after if after is not None and is_split(after) else None,
            rollback=rollback,
            forced=forced,
            checks=checks,
        )
        cursor.execute(INSERT_MOVE, {"agent_id": agent_id, "agent_name": name} | move_values(move))
        if move.to_version is None:
            changed(cursor, "label_removed", name, move.from_version, move.moved_at, label)
        else:
            changed(cursor, "label_set", name, move.to_version, move.moved_at, label)


def _rate(value: object) -> float:
    """A success rate a gate asks for: a number from 0 to 1."""
    problem = [("min_success_rate", f"must be a number from 0 to 1, not {quoted(value)}")]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ArgumentTypeError(ARGUMENT, problem)
    if not 0 <= value <= 1:
        raise InvalidInputError(ARGUMENT, problem)
    return float(value)


def _last_move(moves: Iterable[LabelMove]) -> LabelMove | None:
    """The move a rollback undoes: the label's newest move not undone yet. The log is walked
    newest first; each rollback found undoes one earlier move."""
    undone = 0
    for move in moves:
        if move.rollback:
            undone += 1
        elif undone:
            undone -= 1
        else:
            return move
    return None
