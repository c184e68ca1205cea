"""The four version tools' logic: thin adapters over the repository's version methods.

Like ``BuilderTools``: each method checks its arguments, makes a few repository calls and renders
a text (``version_texts``) with a dict artifact; it never raises to the model. A missing agent
gets the builder tools' own "not found" text.
"""

from __future__ import annotations

from typing import Any

from ..documents import config_document
from ..errors import (
    AgentNotFoundError,
    LabelNotFoundError,
    NoChangesError,
    VersionConflictError,
    VersionNotFoundError,
)
from ..repository import AgentRepository
from ..versioning import LABEL_RULE, AgentVersion, is_valid_label
from . import render, texts
from . import version_texts as vt
from .builder import BuilderTools
from .outcomes import Refused, Result, refused, success, tool_boundary, valid_name, validated
from .version_schemas import LabelRequest, RollbackRequest, VersionListRequest, VersionPair


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

    def _call(self, fragment: str, name: str, version: object = "") -> str:
        return fragment.format(name=name, version=version)

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
            labels = repo.labels(agent_name)
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
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
            labels=vt.labels_line(labels),
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
    def set_agent_label(self, name: object, label: object, version: object) -> Result:
        return self.set_label(name, label, version)

    def _label(self, label: object) -> str:
        if not is_valid_label(label):
            text = vt.INVALID_LABEL.format(label=render.quoted(label), rule=LABEL_RULE)
            raise refused(text, "invalid_label", label=render.quoted(label))
        assert isinstance(label, str)
        return label

    @tool_boundary
    def set_label(
        self, name: object, label: object, version: object, note: object = None
    ) -> Result:
        """``set_agent_label``, with a note for the label log (the CLI's ``--note``)."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        request = validated(
            LabelRequest,
            {"version": version},
            lambda errors: render.invalid_parameters("label", errors),
        )
        repo = self._builder.repo
        try:
            before = repo.labels(agent_name).get(label)
            # Expect the position just read: a move by someone else meanwhile is not overwritten.
            repo.set_label(agent_name, label, request.version, expected_version=before, note=note)  # type: ignore[arg-type]
            labels = repo.labels(agent_name)
        except (AgentNotFoundError, VersionNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        except VersionConflictError as exc:
            now = "not set" if exc.actual is None else f"on v{exc.actual}"
            text = vt.LABEL_CONFLICT.format(
                label=label,
                name=agent_name,
                now=now,
                versions=self._call(self._calls.versions, agent_name),
            )
            raise refused(text, "conflict", name=agent_name, label=label, now=exc.actual) from None
        text = vt.LABEL_SET.format(
            label=label,
            name=agent_name,
            moved=vt.label_change(before, request.version),
            labels=vt.labels_line(labels),
        )
        return success(
            text,
            name=agent_name,
            label=label,
            from_version=before,
            to_version=request.version,
            labels=labels,
        )

    @tool_boundary
    def remove_label(self, name: object, label: object, note: object = None) -> Result:
        """Remove a label (the CLI's ``label NAME LABEL --remove``); the removal is logged."""
        agent_name = valid_name("name", name)
        label = self._label(label)
        repo = self._builder.repo
        try:
            before = repo.labels(agent_name).get(label)
            repo.remove_label(agent_name, label, note=note)  # type: ignore[arg-type]
            labels = repo.labels(agent_name)
        except (AgentNotFoundError, LabelNotFoundError) as exc:
            raise self._missing(agent_name, exc) from None
        text = vt.LABEL_SET.format(
            label=label,
            name=agent_name,
            moved=vt.label_change(before, None),
            labels=vt.labels_line(labels),
        )
        return success(text, name=agent_name, label=label, from_version=before, labels=labels)

    @tool_boundary
    def label_report(self, name: object) -> Result:
        """An agent's labels and their log, newest move first (the CLI's ``labels``)."""
        agent_name = valid_name("name", name)
        repo = self._builder.repo
        try:
            labels = repo.labels(agent_name)
            moves = repo.label_history(agent_name)
        except AgentNotFoundError as exc:
            raise self._missing(agent_name, exc) from None
        text = vt.LABEL_REPORT.format(
            name=agent_name, labels=vt.labels_line(labels), log=vt.label_log(moves)
        )
        return success(
            text,
            name=agent_name,
            labels=labels,
            label_history=[m.model_dump(mode="json") for m in moves],
        )
