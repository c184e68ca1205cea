"""Parameters that are the tools' own: no domain model (``acti_store.models``) holds them.

``BuilderTools`` validates them like the models' fields, so their problems come back as the
contract's ``ERROR: ...`` texts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter

from ..models import Description, Stratum, TagList

#: A stratum given on its own (``create_agent_config``'s is checked before the configuration).
STRATUM: Final = TypeAdapter(Stratum)


class CloneOverrides(BaseModel):
    """What ``clone_agent_config`` may change of the source: its description and tags."""

    model_config = ConfigDict(defer_build=True)  # built by a clone's first call, not at import

    description: Description | None = None
    tags: TagList | None = None


class DeleteParameters(BaseModel):
    """``delete_agent_config``'s choice about the agent's history."""

    model_config = ConfigDict(defer_build=True)  # built by a delete's first call, not at import

    delete_history: bool = True


F = TypeVar("F", bound=Callable[..., Any])


def takes(args_schema: type[BaseModel]) -> Callable[[F], F]:
    """Give a tool's method the signature of its ``args_schema`` (after ``self``, before the
    method's own keyword-only options): the schema's arguments, in order, with their defaults.

    The method takes the configuration's fields as keywords (``**fields``), so a field added to
    the configuration, hence to the schema, reaches it without any change of the method; its
    signature still tells the schema's (``tests/test_tools_specs.py``)."""

    def decorate(method: F) -> F:
        own = list(inspect.signature(method).parameters.values())
        shown = [
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=inspect.Parameter.empty if field.is_required() else field.default,
            )
            for name, field in args_schema.model_fields.items()
        ]
        options = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
        signature = inspect.signature(method).replace(parameters=[own[0], *shown, *options])
        method.__signature__ = signature  # type: ignore[attr-defined]
        return method

    return decorate
