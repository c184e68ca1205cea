"""The version tools' logic: thin adapters over the repository's version methods.

Like ``BuilderTools``: each method checks its arguments, makes a few repository calls and renders
a text (``version_texts``) with a dict artifact; it never raises to the model. A missing agent
gets the builder tools' own "not found" text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..documents import config_document
from ..errors import (
    AgentNotFoundError,
    GateRefusedError,
    InvalidInputError,
    LabelNotFoundError,
    NoChangesError,
    VersionConflictError,
    VersionNotFoundError,
)
from ..repository import AgentRepository
from ..routing import Weights, checked_weights, main_version, spelled
from ..versioning import LABEL_RULE, AgentVersion, LabelGate, is_valid_label
from . import render, texts
from . import version_texts as vt
from .builder import BuilderTools
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
from .version_schemas import (
    ComparePair,
    LabelRequest,
    RollbackRequest,
    SplitRequest,
    VersionListRequest,
    VersionPair,
)


def _version_document(version: AgentVersion) -> dict[str, Any]:
    document = version.model_dump(mode="json")
    document["config"] = config_document(version.config)  # a WHEN_SET field only when set
    return document


class VersionTools:
    """The version tools' logic over the repository of ``builder`` (its "not found" texts too).

    ``calls`` says how texts name the next step (tool calls, or ``acti-store`` commands)."""

    def __init__(self, builder: BuilderTools, calls: vt.VersionCalls = vt.VERSION_TOOL_CALLS):
        self._builder = builder
        self._calls = calls

    async def arepo(self) -> AgentRepository:
        return await self._builder.arepo()

    def on(self, repo: AgentRepository) -> VersionTools:
        """These tools' logic on ``repo`` (the twin ``acall`` hands over)."""
        return VersionTools(self._builder.on(repo), self._calls)

    def _call(self, fragment: str, name: str, version: object = "", **values: object) -> str:
        return self._calls.call(fragment, name=name, version=version, **values)

    def _missing(self, name: str, exc: Exception) -> Refused:
        """The refusal for a lookup error of the version methods."""
        if isinstance(exc, AgentNotFoundError):
            return Refused(self._builder.not_found(name, texts.USE_NAMES))
        versions = self._call(self._calls.versions, name)
        if isinstance(exc, VersionNotFoundError):
            text = vt.VERSION_NOT_FOUND.format(reason=exc, versions=versions)
            return refused(text, "version_not_found", name=name, version=exc.version)
        assert isinstance(exc, LabelNotFoundError)
        label = self._call(self._calls.label, name)
        text = vt.LABEL_NOT_FOUND.format(reason=exc, label=label)
        return refused(text, "label_not_found", name=name, label=exc.label)

    @tool_boundary
    def list_agent_versions(
        self, name: object, limit: object = vt.VERSIONS_LIMIT_DEFAULT
    ) -> Result:
        agent_name = valid_name("name", name)
        params = validated(
            VersionListRequest,
            {"limit": limit},
            lambda errors: render.invalid_parameters("versions", errors),
        )
        repo = self._builder.repo
        try:
            current = repo.get(agent_name).metadata.version
            versions = repo.versions(agent_name, limit=params.limit + 1)
            weights = repo.label_weights(agent_name)
            gates = repo.label_gates(agent_name)
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
        labels = {label: main_version(w) for label, w in weights.items()}
        shown = versions[: params.limit]
        entries = [
            vt.VERSION_ENTRY.format(
                version=v.version,
                marks=(vt.CURRENT_MARK if v.version == current else "")
                + "".join(f" [{label}]" for label in v.labels),
                created=render.display_time(v.created_at),
                message=render.quoted(v.message) if v.message else texts.NONE,
            )
            for v in shown
        ]
        more = len(versions) > params.limit
        text = vt.VERSION_LIST.format(
            name=agent_name,
            current=current,
            entries="\n".join(entries),
            labels=vt.labels_line(weights),
            gates=vt.gates_line(gates),
            more=vt.MORE_VERSIONS.format(shown=len(shown)) if more else "",
            diff=self._call(self._calls.diff, agent_name),
            rollback=self._call(self._calls.rollback, agent_name),
        )
        return success(
            text,
            name=agent_name,
            current_version=current,
            versions=[_version_document(v) for v in shown],
            labels=labels,
            splits=vt.splits(weights),
            gates=vt.gates(gates),
            more=more,
        )

    @tool_boundary
    def diff_agent_versions(self, name: object, from_version: object, to_version: object) -> Result:
        agent_name = valid_name("name", name)
        pair = validated(
            VersionPair,
            {"from_version": from_version, "to_version": to_version},
            lambda errors: render.invalid_parameters("diff", errors),
        )
        try:
            diff = self._builder.repo.diff(agent_name, pair.from_version, pair.to_version)
        except (AgentNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        rollback = self._call(self._calls.confirm_rollback, agent_name, pair.from_version)
        text = vt.DIFF.format(
            name=agent_name,
            report=vt.diff_report(diff),
            closing=vt.DIFF_CLOSING.format(version=pair.from_version, rollback=rollback),
        )
        return success(text, diff=diff.model_dump(mode="json"))

    @tool_boundary
    def rollback_agent_config(
        self, name: object, to_version: object, confirm: object = False
    ) -> Result:
        agent_name = valid_name("name", name)
        request = validated(
            RollbackRequest,
            {"to_version": to_version},
            lambda errors: render.invalid_parameters("rollback", errors),
        )
        repo, target = self._builder.repo, request.to_version
        try:
            current = repo.get(agent_name).metadata.version
            diff = repo.diff(agent_name, current, target)
            if not diff.changes:
                raise NoChangesError(agent_name)
            if confirm is not True:  # anything but an explicit True is a dry run
                text = vt.ROLLBACK_PREVIEW.format(
                    name=agent_name,
                    target=target,
                    new=current + 1,
                    current=current,
                    changes=vt.diff_report(diff, skip_heading=True),
                    confirm_rollback=self._call(self._calls.confirm_rollback, agent_name, target),
                )
                return success(text, rolled_back=False, diff=diff.model_dump(mode="json"))
            agent = repo.rollback(agent_name, target, expected_version=current)
        except (AgentNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        except NoChangesError:
            text = vt.ROLLBACK_NO_CHANGES.format(
                name=agent_name,
                target=target,
                current=current,
                versions=self._call(self._calls.versions, agent_name),
            )
            raise refused(text, "no_changes", name=agent_name) from None
        location = repo.location_of(agent_name)
        text = vt.ROLLED_BACK.format(
            name=agent_name,
            target=target,
            new=agent.metadata.version,
            changes=vt.diff_report(diff, skip_heading=True),
            location=location,
        )
        return success(
            text,
            rolled_back=True,
            previous_version=current,
            version=agent.metadata.version,
            diff=diff.model_dump(mode="json"),
            location=location,
        )

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
    def compare_agent_versions(self, name: object, a: object, b: object) -> Result:
        agent_name = valid_name("name", name)
        pair = validated(
            ComparePair,
            {"a": a, "b": b},
            lambda errors: render.invalid_parameters("compare", errors),
        )
        try:
            result = self._builder.repo.compare_versions(agent_name, pair.a, pair.b)
        except (AgentNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        except InvalidInputError as exc:  # the same version twice
            raise invalid(exc, lambda e: render.invalid_parameters("compare", e)) from None
        split = self._call(self._calls.split, agent_name, label="<label>", a=pair.a, b=pair.b)
        return success(vt.comparison(result, split), comparison=result.model_dump(mode="json"))

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
