"""How a configuration field is declared once: markers of its ``Annotated`` type, and the partial
model (an update's) derived from the full one. Pure Python, like ``models``, which uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, get_args

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo


@dataclass(frozen=True)
class WhenSet:
    """Marks a configuration field (in its ``Annotated`` type) that documents (the agent file, a
    version's ``config``) hold only when it is not None: the files of agents without it keep
    their format. For fields added after the contract's seven, which are always written."""


WHEN_SET: Final = WhenSet()


def _markers(info: FieldInfo) -> list[object]:
    """The metadata of a field's type, that of each member of a union too (``Annotated[str,
    WHEN_SET] | None``)."""
    found = list(info.metadata)
    for member in get_args(info.annotation):
        found.extend(getattr(member, "__metadata__", ()))
    return found


def marked(model: type[BaseModel], marker: object) -> frozenset[str]:
    """The fields of ``model`` whose type carries ``marker``."""
    return frozenset(f for f, info in model.model_fields.items() if marker in _markers(info))


def _optional(info: FieldInfo, dropped: Callable[..., Any]) -> Any:
    """A field as a partial change takes it: its rules, or None (keep the value). The validator
    ``dropped`` is left out (the full model's "None means empty")."""
    rules = [m for m in info.metadata if getattr(m, "func", None) is not dropped]
    annotated: Any = Annotated
    kind: Any = annotated[(info.annotation, *rules)] if rules else info.annotation
    return (kind | None, Field(default=None, description=info.description))


def partial_fields(
    name: str,
    base: type[BaseModel],
    model: type[BaseModel],
    fields: Iterable[str],
    dropped: Callable[..., Any],
) -> Any:
    """A model (``base`` the class it extends) with ``fields`` of ``model``, each optional
    (``_optional``): the fields of a partial change, for a class to extend with its methods."""
    return create_model(
        name, __base__=base, **{f: _optional(model.model_fields[f], dropped) for f in fields}
    )


def sequence_as_list(value: object) -> object:
    """A tuple (any sequence but text) of a list field as a list: a model's strict rules, which
    a mapping given to the Python API is checked with, take only a ``list``."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | list):
        return list(value)
    return value


def integer_range(model: type[BaseModel], field: str) -> tuple[int, int]:
    """The least and greatest values of ``model``'s integer ``field`` (its ``ge`` and ``le``),
    read from the field's declaration: as its JSON schema's ``minimum`` and ``maximum`` say,
    without building the schema of the whole model (tens of milliseconds of a process's start)."""
    low = high = None
    for rule in model.model_fields[field].metadata:
        low = getattr(rule, "ge", low)
        high = getattr(rule, "le", high)
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"{model.__name__}.{field} declares no integer ge and le")
    return low, high
