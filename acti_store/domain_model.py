"""The base of the domain models (``DomainModel``) and ``trusted``, the build of one from values
validated before.

Pure Python, like ``models``, ``history`` and ``search_query``, whose models extend it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict


class DomainModel(BaseModel):
    """A domain model: frozen, no field it does not declare, its validator built on first use."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=False, defer_build=True
    )


M = TypeVar("M", bound=BaseModel)


def trusted(cls: type[M], **values: Any) -> M:
    """Build a model from values that were validated before (e.g. read back from the store).

    What ``model_construct`` does, without its per-field default handling: every field must be
    given. The store's hot read paths use it; ``tests/test_models.py`` checks it stays equivalent.
    """
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model
