"""``serve-mcp --tokens FILE``: the bearer tokens of the tenants one HTTP server serves.

FILE is a JSON object mapping each token to its grant: the tenant it sees and touches, and
whether it only reads::

    {"<token>": {"tenant": "acme", "read_only": false},
     "<token>": {"tenant": "globex", "read_only": true}}

Both keys are required (a grant that forgot ``read_only`` does not silently write) and no
other key is taken (``readonly`` is a typo, not a grant). A token is at least
``MIN_TOKEN_LENGTH`` characters of what an ``Authorization: Bearer`` header carries (RFC 6750:
letters, digits, ``-._~+/``, ``=`` at the end), e.g. ``openssl rand -hex 32``. The file is
refused when its group or others may read or write it (as ssh refuses a private key): tokens
are secrets. Every refusal is one line that names the token by its place in the file
(``token #2``), never by its text, and shows no value of the file (a token pasted in the wrong
place is still a token): a wrong value is named by its type. Loads without the MCP SDK: the
command line checks the file before it starts anything.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..errors import AgentStoreError
from ..models import NAME_MAX_LENGTH, NAME_RULE, is_valid_name

#: The shortest token taken: 16 characters (96 bits as base64, 64 as hex) resist guessing
#: over HTTP; ``openssl rand -hex 32`` makes 64.
MIN_TOKEN_LENGTH: Final = 16
#: A token file larger than this is not one (a token and its grant take ~100 bytes).
MAX_FILE_BYTES: Final = 1024 * 1024
#: The permission bits of group and others: any of them set and the file is refused.
SHARED_BITS: Final = 0o077
#: What an ``Authorization: Bearer`` header carries (RFC 6750 ``b64token``).
TOKEN_PATTERN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
GRANT_KEYS: Final = ("tenant", "read_only")
#: How a grant looks, for the texts that say what was expected.
EXAMPLE_GRANT: Final = '{"tenant": "acme", "read_only": false}'

SHARED: Final = (
    "{path} may be read or written by its group or others (mode {mode:o}): the tokens are "
    "secrets; run chmod 600 {path}"
)
UNREADABLE: Final = "{path}: {reason}"
TOO_LARGE: Final = "{path} is larger than {limit} bytes: it is not a token file"
NOT_JSON: Final = "{path} is not JSON: {reason}"
NOT_AN_OBJECT: Final = (
    "{path} must be a JSON object mapping each token to its grant ({example}), not {kind}"
)
EMPTY: Final = "{path} names no token: map at least one token to its grant ({example})"
REPEATED: Final = "{path}: token #{number} appears twice (as token #{first})"
SHORT: Final = (
    "{path}: token #{number} is shorter than {minimum} characters (make one with "
    "openssl rand -hex 32)"
)
UNSENDABLE: Final = (
    "{path}: token #{number} has a character an Authorization: Bearer header cannot carry "
    "(use letters, digits and -._~+/, e.g. openssl rand -hex 32)"
)
GRANT_NOT_AN_OBJECT: Final = "{path}: token #{number} must map to a grant ({example}), not {kind}"
UNKNOWN_KEY: Final = (
    "{path}: token #{number}: unknown key {key} (the keys are tenant and read_only)"
)
REPEATED_KEY: Final = "{path}: token #{number}: {key} is given twice"
MISSING_KEY: Final = "{path}: token #{number} has no {key} ({example})"
TENANT_NOT_TEXT: Final = "{path}: token #{number}: tenant must be a tenant name (text), not {kind}"
BAD_TENANT: Final = (
    "{path}: token #{number}: invalid tenant (not shown: it may be a token): {rule}, at most "
    "{limit} characters"
)
READ_ONLY_NOT_BOOL: Final = "{path}: token #{number}: read_only must be true or false, not {kind}"


class TokenFileError(AgentStoreError, ValueError):
    """The token file cannot be used: unreadable, shared, not JSON, or a grant breaks a rule."""


@dataclass(frozen=True)
class Grant:
    """What a token lets its bearer do: see and touch ``tenant``'s agents, reading only or not."""

    tenant: str
    read_only: bool


@dataclass(frozen=True)
class TokenFile:
    """A token file as read at startup: where it is (read again on SIGHUP and when it changes:
    ``rotation``), and its tokens with their grants."""

    path: Path
    grants: Mapping[str, Grant]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TokenFile:
        """The file at ``path`` (``read_grants``: ``TokenFileError`` saying what is wrong)."""
        return cls(Path(path), read_grants(path))


class _Object(list[tuple[str, Any]]):
    """A JSON object as its pairs, in order, repeated keys kept (``json``'s dict drops them)."""


def _kind(value: Any) -> str:
    """A JSON value as a refusal names it: by its type only, never its value (a string or a
    number may be a token in the wrong place)."""
    if isinstance(value, _Object):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def read_grants(path: str | os.PathLike[str]) -> dict[str, Grant]:
    """Every token of the file at ``path`` with its grant; ``TokenFileError`` saying what is
    wrong with the file (its permissions first: a shared file's tokens are not read)."""
    file = Path(path)
    data = _parse(file, _read(file))
    shown = str(file)
    if not isinstance(data, _Object):
        raise TokenFileError(
            NOT_AN_OBJECT.format(path=shown, example=EXAMPLE_GRANT, kind=_kind(data))
        )
    if not data:
        raise TokenFileError(EMPTY.format(path=shown, example=EXAMPLE_GRANT))
    grants: dict[str, Grant] = {}
    places: dict[str, int] = {}
    for number, (token, grant) in enumerate(data, start=1):
        where = {"path": shown, "number": number}
        if token in places:
            raise TokenFileError(REPEATED.format(**where, first=places[token]))
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokenFileError(SHORT.format(**where, minimum=MIN_TOKEN_LENGTH))
        if not TOKEN_PATTERN.fullmatch(token):
            raise TokenFileError(UNSENDABLE.format(**where))
        places[token] = number
        grants[token] = _grant(grant, where)
    return grants


def _read(file: Path) -> bytes:
    """The file's bytes, once its permissions show that only its owner may read it."""
    try:
        with file.open("rb") as opened:
            mode = os.fstat(opened.fileno()).st_mode
            if os.name == "posix" and mode & SHARED_BITS:
                raise TokenFileError(SHARED.format(path=file, mode=mode & 0o777))
            raw = opened.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise TokenFileError(UNREADABLE.format(path=file, reason=exc.strerror or exc)) from None
    if len(raw) > MAX_FILE_BYTES:
        raise TokenFileError(TOO_LARGE.format(path=file, limit=MAX_FILE_BYTES))
    return raw


def _parse(file: Path, raw: bytes) -> Any:
    """The JSON document, its objects as ``_Object`` pairs. The reason of a refusal quotes no
    text of the file: it may hold tokens."""
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_Object)
    except UnicodeDecodeError:
        reason = "it is not UTF-8 text"
    except json.JSONDecodeError as exc:
        reason = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    except RecursionError:
        reason = "it is nested too deeply"
    raise TokenFileError(NOT_JSON.format(path=file, reason=reason))


def _grant(value: Any, where: Mapping[str, Any]) -> Grant:
    """One token's grant, checked: exactly ``tenant`` (a valid name) and ``read_only`` (bool)."""
    if not isinstance(value, _Object):
        raise TokenFileError(
            GRANT_NOT_AN_OBJECT.format(**where, example=EXAMPLE_GRANT, kind=_kind(value))
        )
    fields: dict[str, Any] = {}
    for key, item in value:
        if key not in GRANT_KEYS:
            # A key as long as a token may be one (a grant nested once too deep): not shown.
            shown = json.dumps(key) if len(key) < MIN_TOKEN_LENGTH else "(a long one, not shown)"
            raise TokenFileError(UNKNOWN_KEY.format(**where, key=shown))
        if key in fields:
            raise TokenFileError(REPEATED_KEY.format(**where, key=key))
        fields[key] = item
    for key in GRANT_KEYS:
        if key not in fields:
            raise TokenFileError(MISSING_KEY.format(**where, key=key, example=EXAMPLE_GRANT))
    tenant, read_only = fields["tenant"], fields["read_only"]
    if not isinstance(tenant, str):
        raise TokenFileError(TENANT_NOT_TEXT.format(**where, kind=_kind(tenant)))
    if not is_valid_name(tenant):
        raise TokenFileError(BAD_TENANT.format(**where, rule=NAME_RULE, limit=NAME_MAX_LENGTH))
    if not isinstance(read_only, bool):
        raise TokenFileError(READ_ONLY_NOT_BOOL.format(**where, kind=_kind(read_only)))
    return Grant(tenant, read_only)
