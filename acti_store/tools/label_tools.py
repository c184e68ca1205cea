"""The label tools' logic: set or split a label, roll it back, remove it, protect it with a gate,
and report an agent's labels and their log.

Thin adapters over the repository's label methods, as the version tools are (``VersionTools``,
which has these methods as its own): each checks its arguments, makes a few repository calls and
renders a text (``version_texts``) with a dict artifact; it never raises to the model.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import (
    AgentNotFoundError,
    GateRefusedError,
    InvalidInputError,
    LabelNotFoundError,
    VersionConflictError,
    VersionNotFoundError,
)
from ..routing import Weights, checked_weights, main_version, spelled
from ..versioning import LABEL_RULE, LabelGate, is_valid_label
from . import render
from . import version_texts as vt
from .outcomes import (
    Refused,
    Result,
    invalid,
    refused,
    success,
    tool_boundary,
    valid_name,
    validated,
)
from .version_base import VersionToolsBase
from .version_schemas import LabelRequest, SplitRequest


class LabelTools(VersionToolsBase):
    """The label tools' logic (part of ``VersionTools``): ``set_agent_label`` and
    ``rollback_agent_label`` for the model; for a person (the CLI), notes, ``force``, gates,
    removals and the label report."""

    @tool_boundary
    def set_agent_label(
        self, name: object, label: object, version: object = None, split: object = None
    ) -> Result:
        if (version is None) == (split is None):
            given = "not both" if version is not None else "neither was given"
            example = self._call(self._calls.split, "<name>", label="<label>", a=3, b=4)
            text = vt.SPLIT_INVALID.format(given=given, split=example)
            raise refused(text, "validation", errors=[{"field": "version", "message": given}])
        if split is None:
            return self.set_label(name, label, version)
        request = validated(
            SplitRequest,
            {"split": split},
            lambda errors: render.invalid_parameters("label", errors),
        )
        return self.set_label(name, label, request.weights())

    def _label(self, label: object) -> str:
        if not is_valid_label(label):
            text = vt.INVALID_LABEL.format(label=render.quoted(label), rule=LABEL_RULE)
            raise refused(text, "invalid_label", label=render.quoted(label))
        assert isinstance(label, str)
        return label

    def _target(self, target: object) -> Weights:
        """A version number or a split (version -> weight) as ``set_label`` takes it; else the
        label parameter's refusal."""
        if isinstance(target, Mapping):
            try:
                return checked_weights(target)
            except InvalidInputError as exc:
                raise invalid(exc, lambda e: render.invalid_parameters("label", e)) from None
        return {
            validated(
                LabelRequest,
                {"version": target},
                lambda errors: render.invalid_parameters("label", errors),
            ).version: 100
        }

    def _gate_refused(self, exc: GateRefusedError, target: str, now: Weights | None) -> Refused:
        """A protected label's refusal (``version_texts.gate_refused``); the way past it is a
        person's (``force``), never the model's."""
        text = vt.gate_refused(exc, self._calls, target, None if now is None else main_version(now))
        gate, checks = (
            exc.gate.model_dump(mode="json"),
            [c.model_dump(mode="json") for c in exc.checks],
        )
        return refused(
            text, "gate_refused", name=exc.name, label=exc.label, gate=gate, checks=checks
        )

    def _conflict(self, name: str, label: str, exc: VersionConflictError) -> Refused:
        actual = exc.actual
        now = "not set" if actual is None else f"on {vt.target(actual)}"
        text = vt.LABEL_CONFLICT.format(
            label=label, name=name, now=now, versions=self._call(self._calls.versions, name)
        )
        current = actual if actual is None or isinstance(actual, int) else vt.shares(actual)
        return refused(text, "conflict", name=name, label=label, now=current)

    @tool_boundary
    def set_label(
        self,
        name: object,
        label: object,
        version: object,
        note: object = None,
        force: bool = False,
    ) -> Result:
        """``set_agent_label``: ``version`` a version number or a split (version -> weight);
        with a note for the label log (the CLI's ``--note``) and, for a person only, ``force``
        past a protected label's gate (the CLI's ``--force``; never a tool's argument)."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        target = self._target(version)
        repo = self._builder.repo
        try:
            before = repo.label_weights(agent_name).get(label)
            # Expect the position just read: a move by someone else meanwhile is not overwritten.
            repo.set_label(
                agent_name,
                label,
                target if len(target) > 1 else main_version(target),
                expected_version=before,
                note=note,  # type: ignore[arg-type]
                force=force,
            )
            weights = repo.label_weights(agent_name)
        except (AgentNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        except VersionConflictError as exc:
            raise self._conflict(agent_name, label, exc) from None
        except GateRefusedError as exc:
            raise self._gate_refused(exc, spelled(target), before) from None
        labels = {key: main_version(w) for key, w in weights.items()}
        text = vt.LABEL_SET.format(
            label=label,
            name=agent_name,
            moved=vt.label_change(before, target),
            labels=vt.labels_line(weights),
        )
        return success(
            text,
            name=agent_name,
            label=label,
            from_version=None if before is None else main_version(before),
            to_version=main_version(target),
            from_weights=vt.shares(before),
            to_weights=vt.shares(target),
            forced=force,
            labels=labels,
            splits=vt.splits(weights),
        )

    @tool_boundary
    def rollback_agent_label(self, name: object, label: object) -> Result:
        return self.rollback_label(name, label)

    @tool_boundary
    def rollback_label(
        self, name: object, label: object, note: object = None, force: bool = False
    ) -> Result:
        """``rollback_agent_label``: the label back where it pointed before its last move; a
        note and ``force`` as for ``set_label`` (the CLI's ``label --rollback``)."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        repo = self._builder.repo
        try:
            before = repo.label_weights(agent_name).get(label)
            after = repo.rollback_label(agent_name, label, note=note, force=force)  # type: ignore[arg-type]
            weights = repo.label_weights(agent_name)
        except (AgentNotFoundError, LabelNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        except GateRefusedError as exc:
            raise self._gate_refused(exc, vt.ROLLBACK_TARGET, before) from None
        except InvalidInputError as exc:
            if [field for field, _ in exc.problems] != ["label"]:  # e.g. the CLI's note
                raise invalid(exc, lambda e: render.invalid_parameters("label", e)) from None
            text = vt.NOTHING_TO_ROLL_BACK.format(
                label=label,
                name=agent_name,
                versions=self._call(self._calls.versions, agent_name),
            )
            raise refused(text, "nothing_to_roll_back", name=agent_name, label=label) from None
        labels = {key: main_version(w) for key, w in weights.items()}
        text = vt.LABEL_SET.format(
            label=label,
            name=agent_name,
            moved=vt.label_change(before, after, rollback=True),
            labels=vt.labels_line(weights),
        )
        return success(
            text,
            name=agent_name,
            label=label,
            rolled_back=True,
            from_weights=vt.shares(before),
            to_weights=vt.shares(after),
            forced=force,
            labels=labels,
            splits=vt.splits(weights),
        )

    @tool_boundary
    def protect_label(
        self,
        name: object,
        label: object,
        min_runs: int = 0,
        min_success_rate: float = 0.0,
        max_mean_duration: float | None = None,
    ) -> Result:
        """Protect a label with a gate (the CLI's ``protect``; not a tool: a gate is a
        person's rule)."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        asked = validated(
            LabelGate,
            {
                "min_runs": min_runs,
                "min_success_rate": min_success_rate,
                "max_mean_duration": max_mean_duration,
            },
            lambda errors: render.invalid_parameters("protect", errors),
        )
        repo = self._builder.repo
        try:
            repo.protect_label(
                agent_name,
                label,
                min_runs=asked.min_runs,
                min_success_rate=asked.min_success_rate,
                max_mean_duration=asked.max_mean_duration,
            )
            gate = repo.label_gates(agent_name)[label]
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
        except InvalidInputError as exc:
            raise invalid(exc, lambda e: render.invalid_parameters("protect", e)) from None
        text = vt.PROTECTED.format(label=label, name=agent_name, gate=gate)
        return success(text, name=agent_name, label=label, gate=gate.model_dump(mode="json"))

    @tool_boundary
    def unprotect_label(self, name: object, label: object) -> Result:
        """Remove a label's gate (the CLI's ``protect --off``)."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        try:
            removed = self._builder.repo.unprotect_label(agent_name, label)
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
        template = vt.UNPROTECTED if removed else vt.NOT_PROTECTED
        text = template.format(label=label, name=agent_name)
        return success(text, name=agent_name, label=label, removed=removed)

    @tool_boundary
    def remove_label(self, name: object, label: object, note: object = None) -> Result:
        """Remove a label (the CLI's ``label NAME LABEL --remove``); the removal is logged."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        repo = self._builder.repo
        try:
            before = repo.label_weights(agent_name).get(label)
            repo.remove_label(agent_name, label, note=note)  # type: ignore[arg-type]
            weights = repo.label_weights(agent_name)
        except (AgentNotFoundError, LabelNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        labels = {key: main_version(w) for key, w in weights.items()}
        text = vt.LABEL_SET.format(
            label=label,
            name=agent_name,
            moved=vt.label_change(before, None),
            labels=vt.labels_line(weights),
        )
        return success(
            text,
            name=agent_name,
            label=label,
            from_version=None if before is None else main_version(before),
            from_weights=vt.shares(before),
            labels=labels,
            splits=vt.splits(weights),
        )

    @tool_boundary
    def label_report(self, name: object) -> Result:
        """An agent's labels and their log, newest move first (the CLI's ``labels``)."""
        agent_name = valid_name("name", name)
        repo = self._builder.repo
        try:
            weights = repo.label_weights(agent_name)
            gates = repo.label_gates(agent_name)
            moves = repo.label_history(agent_name)
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
        text = vt.LABEL_REPORT.format(
            name=agent_name,
            labels=vt.labels_line(weights),
            gates=vt.gates_line(gates),
            log=vt.label_log(moves),
        )
        return success(
            text,
            name=agent_name,
            labels={key: main_version(w) for key, w in weights.items()},
            splits=vt.splits(weights),
            gates=vt.gates(gates),
            label_history=[m.model_dump(mode="json") for m in moves],
        )
