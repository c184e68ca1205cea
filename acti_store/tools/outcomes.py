"""What a tool returns: ``(text, artifact)``, and the refusals that end a tool early.

A tool never raises to the model. Inside a tool, a refusal (``Refused``) or a store error
(``AgentStoreError``) ends the call; ``tool_boundary`` turns either into the contract's
``ERROR: ...`` text with a dict artifact (``{"status": "error", "error": <kind>, ...}``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import AgentStoreError, InvalidInputError
from ..models import is_valid_name
from ..validation import FieldError
from . import render, texts

Result = tuple[str, dict[str, Any]]
"""What every tool returns: the text for the model and the artifact for programs."""

P = ParamSpec("P")
S = TypeVar("S")
M = TypeVar("M", bound=BaseModel)


def success(text: str, **data: Any) -> Result:
    return text, {"status": "success", **data}


def error(text: str, kind: str, **data: Any) -> Result:
    return text, {"status": "error", "error": kind, **data}


class Refused(Exception):
    """Raised inside a tool to return an ERROR result at once (caught by ``tool_boundary``)."""

    def __init__(self, result: Result) -> None:
        super().__init__(result[0])
        self.result = result


def refused(text: str, kind: str, **data: Any) -> Refused:
    return Refused(error(text, kind, **data))


def settled(exc: Refused | AgentStoreError) -> Result:
    """The ERROR result of a refusal or of a store error."""
    if isinstance(exc, Refused):
        return exc.result
    return error(render.store_error(exc), "store_error", message=str(exc), transient=exc.transient)


def tool_boundary(
    method: Callable[Concatenate[S, P], Result],
) -> Callable[Concatenate[S, P], Result]:
    """The boundary of a tool: refusals and store errors become ERROR results, never raises."""

    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Result:
        try:
            refuse_unencodable(method.__name__, {"input": args, **kwargs})
            return method(self, *args, **kwargs)
        except (Refused, AgentStoreError) as exc:
            return settled(exc)

    functools.update_wrapper(run, method)
    return run


def _unencodable(value: object) -> bool:
    """True when ``value`` holds text no store can keep: a lone surrogate (invalid UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list | tuple):
        return any(_unencodable(item) for item in value)
    if isinstance(value, dict):
        return any(_unencodable(k) or _unencodable(v) for k, v in value.items())
    return False


def refuse_unencodable(tool: str, arguments: Mapping[str, object]) -> None:
    """Refuse text that is not valid Unicode before anything (pydantic included) renders it."""
    errors = [FieldError(k, texts.NOT_UNICODE) for k, v in arguments.items() if _unencodable(v)]
    if errors:
        raise _invalid_fields(render.invalid_arguments(tool, errors), errors)


def _given(arguments: Mapping[str, object]) -> dict[str, object]:
    """The arguments that were given: ``None`` means "not given" (the model's default applies)."""
    return {key: value for key, value in arguments.items() if value is not None}


def validated(
    model: type[M], arguments: Mapping[str, object], describe: Callable[[list[FieldError]], str]
) -> M:
    """``arguments`` as ``model``, or a refusal listing every problem at once."""
    try:
        return model.model_validate(_given(arguments))
    except ValidationError as exc:
        raise invalid(exc, describe) from None


def invalid(
    exc: ValidationError | InvalidInputError, describe: Callable[[list[FieldError]], str]
) -> Refused:
    """The refusal of arguments a model (or the repository) found invalid: ``describe`` words
    the problems."""
    if isinstance(exc, ValidationError):
        errors = render.field_errors(exc)
    else:
        limit = texts.ERROR_MESSAGE_LENGTH
        errors = [FieldError(f, render.quoted(m, limit)) for f, m in exc.problems]
    return _invalid_fields(describe(errors), errors)


def arguments_refused(tool: str, exc: ValidationError) -> Result:
    """The ERROR result of arguments a tool's args schema refused before the tool ran (a
    required one missing, or no mapping at all): every front end words it so."""
    return invalid(exc, lambda errors: render.invalid_arguments(tool, errors)).result


def _invalid_fields(text: str, errors: list[FieldError]) -> Refused:
    return refused(text, "validation", errors=[e._asdict() for e in errors])


def valid_name(parameter: str, value: object) -> str:
    """``value`` if it is a valid agent name; else refuse before anything touches storage."""
    if not isinstance(value, str) or not is_valid_name(value):
        raise refused(render.invalid_name(parameter, value), "invalid_name", parameter=parameter)
    return value
