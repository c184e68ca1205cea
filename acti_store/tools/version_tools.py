"""The version tools' logic: thin adapters over the repository's version methods.

Like ``BuilderTools``: each method checks its arguments, makes a few repository calls and renders
a text (``version_texts``) with a dict artifact; it never raises to the model. A missing agent
gets the builder tools' own "not found" text. ``VersionTools`` lists, diffs, compares and rolls
back an agent's versions here; its label methods are ``LabelTools``' (``label_tools``), what both
share is ``VersionToolsBase``'s (``version_base``).
"""

from __future__ import annotations

from typing import Any

from ..documents import config_document
from ..errors import (
    AgentNotFoundError,
    InvalidInputError,
    NoChangesError,
    VersionNotFoundError,
)
from ..repository import AgentRepository
from ..routing import main_version
from ..versioning import AgentVersion
from . import render, texts
from . import version_texts as vt
from .label_tools import LabelTools
from .outcomes import (
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
    RollbackRequest,
    VersionListRequest,
    VersionPair,
)


def _version_document(version: AgentVersion) -> dict[str, Any]:
    document = version.model_dump(mode="json")
    document["config"] = config_document(version.config)  # a WHEN_SET field only when set
    return document


class VersionTools(LabelTools):
    """The version tools' logic over the repository of ``builder`` (its "not found" texts too),
    with the label tools' (``LabelTools``).

    ``calls`` says how texts name the next step (tool calls, or ``acti-store`` commands)."""

    async def arepo(self) -> AgentRepository:
        return await self._builder.arepo()

    def on(self, repo: AgentRepository) -> VersionTools:
        """These tools' logic on ``repo`` (the twin ``acall`` hands over)."""
        return VersionTools(self._builder.on(repo), self._calls)

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
