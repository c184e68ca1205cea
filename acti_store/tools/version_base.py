"""What the version tools and the label tools share: the builder tools they work through (its
store, its "not found" texts), how their texts name the next step, and the refusal of a missing
agent, version or label.
"""

from __future__ import annotations

from ..errors import AgentNotFoundError, LabelNotFoundError, VersionNotFoundError
from . import texts
from . import version_texts as vt
from .builder import BuilderTools
from .outcomes import Refused, refused


class VersionToolsBase:
    """The state and the refusals of ``VersionTools`` (and its ``LabelTools``): the repository of
    ``builder`` (its "not found" texts too).

    ``calls`` says how texts name the next step (tool calls, or ``acti-store`` commands)."""

    def __init__(self, builder: BuilderTools, calls: vt.VersionCalls = vt.VERSION_TOOL_CALLS):
        self._builder = builder
        self._calls = calls

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
