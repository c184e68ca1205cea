"""What every tool's args schema is built from: its base model, the JSON schema of each kind of
value, and the validator of list arguments.

Every argument is *accepted* as anything (``Any``) and *shown* to the model with its real JSON
schema (``WithJsonSchema``), built here from the limits in ``acti_store.models``. The tools validate
their arguments themselves, with the domain models, so that a wrong value (a number for a name, a
string for a list, ``None``) comes back as the contract's ``ERROR: ...`` text with a structured
artifact, instead of an exception raised by LangChain before the tool runs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ..models import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    MAX_TAGS,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    STRATA,
    SYSTEM_PROMPT_MIN_LENGTH,
    TAG_MAX_LENGTH,
    TAG_MIN_LENGTH,
    TAG_PATTERN,
    TOOL_CATEGORIES,
    ExecutionRequest,
    HistoryRequest,
    SearchQuery,
)

JsonSchema = dict[str, Any]


def _nullable(schema: JsonSchema) -> JsonSchema:
    return {"anyOf": [schema, {"type": "null"}]}


NAME: Final[JsonSchema] = {
    "type": "string",
    "pattern": NAME_PATTERN.pattern,
    "minLength": 1,
    "maxLength": NAME_MAX_LENGTH,
}
DESCRIPTION: Final[JsonSchema] = {
    "type": "string",
    "minLength": DESCRIPTION_MIN_LENGTH,
    "maxLength": DESCRIPTION_MAX_LENGTH,
}
SYSTEM_PROMPT: Final[JsonSchema] = {"type": "string", "minLength": SYSTEM_PROMPT_MIN_LENGTH}
MODEL_ID: Final[JsonSchema] = {"type": "string"}
TOOL_LIST: Final[JsonSchema] = {
    "type": "array",
    "items": {"type": "string", "enum": list(TOOL_CATEGORIES)},
}
STRATUM: Final[JsonSchema] = {"type": "string", "enum": list(STRATA)}
TAG_LIST: Final[JsonSchema] = {
    "type": "array",
    "maxItems": MAX_TAGS,
    "items": {
        "type": "string",
        "pattern": TAG_PATTERN.pattern,
        "minLength": TAG_MIN_LENGTH,
        "maxLength": TAG_MAX_LENGTH,
    },
}
TEXT: Final[JsonSchema] = {"type": "string"}
DATE: Final[JsonSchema] = {"type": "string", "description": "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS"}
FLAG: Final[JsonSchema] = {"type": "boolean"}
#: The JSON schema keys of a range, in the order the schemas show them.
_RANGE_KEYS: Final = ("type", "minLength", "maxLength", "minimum", "maximum")


@functools.cache
def _properties(model: type[BaseModel]) -> Mapping[str, JsonSchema]:
    """The JSON schemas of ``model``'s fields, made once per model (pydantic makes the whole
    model's anew at each ``model_json_schema()``)."""
    return model.model_json_schema()["properties"]  # type: ignore[no-any-return]


#: The JSON types of the plain fields ``_bounds`` reads, and the JSON schema's key of each rule.
_JSON_TYPES: Final = {str: "string", int: "integer", float: "number"}
_RULE_KEYS: Final = {
    "min_length": "minLength",
    "max_length": "maxLength",
    "ge": "minimum",
    "le": "maximum",
}


def _bounds(model: type[BaseModel], field: str) -> JsonSchema:
    """A field's type and range as the domain model declares them (one source for both), read
    from its declaration: the model's JSON schema is not built at import (tens of ms)."""
    info = model.model_fields[field]
    kind = _JSON_TYPES.get(info.annotation) if isinstance(info.annotation, type) else None
    if kind is None:
        schema = _properties(model)[field]
        return {key: schema[key] for key in _RANGE_KEYS if key in schema}
    found: JsonSchema = {"type": kind}
    for rule in info.metadata:
        for name, key in _RULE_KEYS.items():
            value = getattr(rule, name, None)
            if value is not None:
                found[key] = value
    return {key: found[key] for key in _RANGE_KEYS if key in found}


TASK: Final[JsonSchema] = _bounds(ExecutionRequest, "task")
TIMEOUT: Final[JsonSchema] = _bounds(ExecutionRequest, "timeout")
HISTORY_LIMIT: Final[JsonSchema] = _bounds(HistoryRequest, "limit")
SEARCH_LIMIT: Final[JsonSchema] = _bounds(SearchQuery, "limit")


def _json_list(value: object) -> object:
    """A list sent as JSON text (``'["crm", "voice"]'``: the MCP Inspector's CLI and some models
    send lists so) as the list; any other value as it is, for the tool to accept or refuse."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if isinstance(decoded, list):
            return decoded
    return value


#: The validator of every list argument: a list, or a JSON list in a string.
LIST_ARG: Final = BeforeValidator(_json_list)


class _Args(BaseModel):
    # Unknown arguments are ignored, as LangChain does for any tool.
    model_config = ConfigDict(extra="ignore", defer_build=True)
