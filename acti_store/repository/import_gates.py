"""What an import may do to the protected labels of an agent it replaces.

``set_label`` moves a protected label only past its gate (or forced, with a note). An import
with ``on_conflict="replace"`` puts the agent's labels and gates as its ``{name}_versions.json``
says (none without one), so it would move them past any gate: ``protected_moves`` refuses an
import that moves a label the store protects (sets, moves or removes it) or drops or loosens
its gate, unless forced with a note, and then gives the moves to log forced. Every protected
move is refused, whatever the figures: the file's version numbers need not be the store's
versions, and a replaced agent's per-version figures go with it. The one rule of a bulk put
(``bulk``) and of a dry run's prediction (``interchange.importing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ..errors import ProtectedImportError
from ..routing import Weights, figures, gate_check, is_split, main_version
from ..versioning import LabelGate, LabelMove, VersionLog


def loosened(gate: LabelGate, new: LabelGate | None) -> str | None:
    """How ``new`` lets through what ``gate`` refuses, in words (None: it is at least as
    strict)."""
    if new is None:
        return "drop its gate"
    limit, new_limit = gate.max_mean_duration, new.max_mean_duration
    if (
        new.min_runs < gate.min_runs
        or new.min_success_rate < gate.min_success_rate
        or (limit is not None and (new_limit is None or new_limit > limit))
    ):
        return f"loosen its gate to {new}"
    return None


def _spelled(target: Weights | None) -> str:
    if target is None:
        return "nowhere"
    if not is_split(target):
        return f"version {main_version(target)}"
    return " ".join(f"{v}={w}" for v, w in sorted(target.items()))


def protected_moves(
    name: str,
    gates: Mapping[str, LabelGate],
    targets: Mapping[str, Weights],
    log: VersionLog | None,
    *,
    note: str | None,
    force: bool,
    now: datetime,
) -> list[LabelMove]:
    """The moves an import replacing agent ``name`` makes of its protected labels, to log
    forced (``gates``: the store's gates; ``targets``: where its labels point now; ``log``:
    what the import puts, None for no versions file). ``ProtectedImportError`` for the first
    protected label it moves or gate it drops or loosens, unless ``force`` (its ``note``
    checked by the caller). A forced move's checks are of the figures its versions have once
    imported: none yet."""
    new_gates = log.gates if log is not None else {}
    new_targets: dict[str, Weights] = (
        {label: log.splits.get(label, {v: 100}) for label, v in log.labels.items()}
        if log is not None
        else {}
    )
    moves: list[LabelMove] = []
    for label, gate in sorted(gates.items()):
        before, after = targets.get(label), new_targets.get(label)
        what = loosened(gate, new_gates.get(label))
        if what is None and before != after:
            what = f"move it from {_spelled(before)} to {_spelled(after)}"
        if what is not None and not force:
            raise ProtectedImportError(name, label, gate, what)
        if before == after:
            continue
        moves.append(
            LabelMove(
                label=label,
                from_version=None if before is None else main_version(before),
                to_version=None if after is None else main_version(after),
                moved_at=now,
                note=note,
                from_weights=before if before is not None and is_split(before) else None,
                to_weights=after if after is not None and is_split(after) else None,
                forced=True,
                checks=(
                    None
                    if after is None
                    else [gate_check(gate, figures(v, 0, 0, 0.0)) for v in after]
                ),
            )
        )
    return moves
