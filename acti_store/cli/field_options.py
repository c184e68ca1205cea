"""Arguments and options that stand for a model's field: added with the field's default and
description as help (``add_field_argument``), checked by the field's rule (``checked_by``), read
back by field name (``field_values``): the command line and the tools cannot drift apart.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError


def add_field_argument(
    parser: argparse.ArgumentParser,
    model: type[BaseModel],
    field: str,
    *flags: str,
    **options: Any,
) -> None:
    """Add the argument (no ``flags``) or option that stands for ``model``'s ``field``.

    The value is stored under the field's name, its default is the field's and its help is the
    field's description (for a tool's args schema: what the model reads), so the command line and
    the tools cannot drift apart. Without ``flags`` the argument is positional, named as the field.
    """
    info = model.model_fields[field]
    if not info.is_required():
        options.setdefault("default", info.default)
    notes = _schema_notes(model, field, info.description or "")
    if options.get("action") == "append":
        notes.append("repeatable")
    description = (info.description or "").rstrip(".").replace("%", "%%")
    if options.get("default") not in (None, False) and "default" not in description:
        notes.append("default: %(default)s")
    help_text = f"{description} ({', '.join(notes)})" if notes else description
    if flags:
        parser.add_argument(*flags, dest=field, help=help_text, **options)
    else:
        parser.add_argument(field, help=help_text, **options)


def checked_by(model: type[BaseModel], field: str) -> Callable[[str], Any]:
    """An argparse ``type`` that checks a value with the rule of ``model``'s ``field``.

    One rule for every way in: a value the model refuses is a usage error that says why (e.g.
    ``argument --timeout: Input should be greater than or equal to 1``).
    """
    adapter: TypeAdapter[Any] = TypeAdapter(model.model_fields[field].rebuild_annotation())

    def check(text: str) -> Any:
        try:
            return adapter.validate_python(text)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(
                "; ".join(error["msg"] for error in exc.errors())
            ) from None

    return check


def field_values(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The parsed values that are ``model``'s fields, by field name; ``None`` is "not given"."""
    fields = model.model_fields
    return {key: value for key, value in vars(args).items() if key in fields and value is not None}


@functools.cache
def _properties(model: type[BaseModel]) -> Mapping[str, Any]:
    return model.model_json_schema()["properties"]  # type: ignore[no-any-return]


def _schema_notes(model: type[BaseModel], field: str, description: str) -> list[str]:
    """What the field's JSON schema says that its description does not: choices and range."""
    schema = _properties(model)[field]
    for option in schema.get("anyOf", ()):  # a nullable field: the non-null alternative
        if option.get("type") != "null":
            schema = option
    notes = []
    choices = schema.get("enum") or schema.get("items", {}).get("enum")
    if choices and not all(str(choice) in description for choice in choices):
        notes.append(f"one of: {', '.join(map(str, choices))}")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is None:
        notes.append(f"at least {low}")
    elif low is not None and f"{low}-{high}" not in description:
        notes.append(f"{low}-{high}")
    return notes
