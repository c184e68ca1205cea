"""The MCP catalog: for each tool category, the MCP server that provides it.

A category entry says how to reach its server (a langchain-mcp-adapters connection dict, passed on
as it is), the provider name the texts show, and the environment variables the server needs. A
category is available only when all its variables are set; its server then gets those variables
(plus ``PATH`` and ``HOME``) and nothing else from our environment.

``${VAR}`` in a connection's ``args``, ``url``, ``headers`` or ``env`` values is replaced by the
variable's value when the server is started; only variables the category lists in ``env`` may be
referred to, so one category's credentials never reach another category's server.

The defaults point at the providers' public servers; a TOML file (``ACTI_STORE_MCP_CONFIG``, or a
path given to the runner) overrides them per category::

    [categories.crm]
    provider = "HubSpot"
    env = ["PRIVATE_APP_ACCESS_TOKEN"]
    [categories.crm.connection]
    transport = "stdio"
    command = "npx"
    args = ["-y", "@hubspot/mcp-server"]
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from ..errors import AgentStoreError
from ..models import TOOL_CATEGORIES
from ..validation import field_errors
from .environment import ENV_CONFIG as ENV_CONFIG

#: Variables every stdio server gets besides its category's own.
BASE_ENV: Final[tuple[str, ...]] = ("PATH", "HOME")
STDIO_TRANSPORT: Final = "stdio"
URL_TRANSPORTS: Final[tuple[str, ...]] = (
    "sse",
    "http",
    "streamable_http",
    "streamable-http",
    "websocket",
)
TRANSPORTS: Final[tuple[str, ...]] = (STDIO_TRANSPORT, *URL_TRANSPORTS)
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]*$"
_REFERENCE: Final = re.compile(r"\$\{([^}]*)\}")


class McpCatalogError(AgentStoreError, ValueError):
    """The MCP catalog (a TOML file or a Python entry) is malformed."""


def _references(value: object) -> Iterator[str]:
    """Every ``${VAR}`` name in ``value`` (a string, or strings nested in lists and dicts)."""
    if isinstance(value, str):
        yield from _REFERENCE.findall(value)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _references(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _references(item)


def _expand(value: Any, values: Mapping[str, str]) -> Any:
    """``value`` with each ``${VAR}`` replaced from ``values`` (nested lists and dicts too)."""
    if isinstance(value, str):
        return _REFERENCE.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, list | tuple):
        return [_expand(item, values) for item in value]
    if isinstance(value, Mapping):
        return {key: _expand(item, values) for key, item in value.items()}
    return value


def _check_connection(connection: Mapping[str, Any], env: tuple[str, ...]) -> dict[str, Any]:
    """A normalised copy of ``connection``; raises ``ValueError`` naming the problem."""
    transport = connection.get("transport")
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
    checked = copy.deepcopy(dict(connection))
    if transport == STDIO_TRANSPORT:
        command = checked.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("a stdio connection needs a command (a non-empty string)")
        args = checked.setdefault("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("args must be a list of strings")
        server_env = checked.get("env")
        if server_env is not None and not (
            isinstance(server_env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in server_env.items())
        ):
            raise ValueError("env must be a table of strings")
    else:
        url = checked.get("url")
        if not isinstance(url, str) or not url:
            raise ValueError(f"a {transport} connection needs a url (a non-empty string)")
    for key in ("args", "url", "headers", "env"):
        for name in _references(checked.get(key)):
            if name not in env:
                raise ValueError(
                    f"{key} refers to ${{{name}}}, which is not one of this category's env "
                    f"variables ({', '.join(env) or 'none'}); list it in env to use it"
                )
    return checked


@dataclass(frozen=True)
class CategorySpec:
    """How to reach the MCP server of one tool category."""

    provider: str
    connection: Mapping[str, Any]
    env: tuple[str, ...] = ()
    _checked: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.provider:
            raise McpCatalogError("provider must be a non-empty string")
        env = tuple(self.env)
        for name in env:
            if not re.fullmatch(ENV_NAME_PATTERN, name):
                raise McpCatalogError(f"env: {name!r} is not a valid environment variable name")
        try:
            checked = _check_connection(self.connection, env)
        except ValueError as exc:
            raise McpCatalogError(f"connection: {exc}") from None
        object.__setattr__(self, "env", env)
        object.__setattr__(self, "_checked", checked)

    @property
    def transport(self) -> str:
        return str(self._checked["transport"])

    def missing_env(self, environ: Mapping[str, str]) -> list[str]:
        """The variables this category needs that are unset (or empty) in ``environ``."""
        return [name for name in self.env if not environ.get(name)]

    def connection_for(self, environ: Mapping[str, str]) -> dict[str, Any]:
        """The connection to open, with ``${VAR}`` expanded and a stdio server's env set.

        A stdio server gets ``PATH``, ``HOME``, this category's variables and the connection's
        own ``env`` entries: no other variable of ``environ``.
        """
        values = {name: environ[name] for name in self.env if environ.get(name)}
        connection: dict[str, Any] = _expand(self._checked, values)
        if self.transport == STDIO_TRANSPORT:
            base = {name: environ[name] for name in BASE_ENV if name in environ}
            connection["env"] = base | values | dict(connection.get("env") or {})
        return connection

    def secret_values(self, environ: Mapping[str, str]) -> list[str]:
        """Values that must never be shown: this category's variables and configured secrets."""
        secrets = [environ[name] for name in self.env if environ.get(name)]
        connection = self.connection_for(environ)
        for key in ("env", "headers"):
            table = connection.get(key) or {}
            secrets.extend(
                str(value)
                for name, value in table.items()
                if name not in BASE_ENV and isinstance(value, str)
            )
        return secrets

    def describe(self) -> str:
        """How the server is started, as configured (``${VAR}`` left as written)."""
        if self.transport == STDIO_TRANSPORT:
            return " ".join([self._checked["command"], *self._checked["args"]])
        return str(self._checked["url"])


#: The providers' public MCP servers, one per category of the contract.
DEFAULT_CATEGORIES: Final[Mapping[str, CategorySpec]] = MappingProxyType(
    {
        "voice": CategorySpec(
            provider="ElevenLabs",
            env=("ELEVENLABS_API_KEY",),
            connection={"transport": "stdio", "command": "uvx", "args": ["elevenlabs-mcp"]},
        ),
        "websearch": CategorySpec(
            provider="Tavily",
            env=("TAVILY_API_KEY",),
            connection={"transport": "stdio", "command": "npx", "args": ["-y", "tavily-mcp"]},
        ),
        "calendar": CategorySpec(
            provider="Google Calendar",
            env=("GOOGLE_OAUTH_CREDENTIALS",),
            connection={
                "transport": "stdio",
                "command": "npx",
                "args": ["-y", "@cocal/google-calendar-mcp"],
            },
        ),
        "communication": CategorySpec(
            provider="Twilio",
            env=("TWILIO_ACCOUNT_SID", "TWILIO_API_KEY", "TWILIO_API_SECRET"),
            connection={
                "transport": "stdio",
                "command": "npx",
                "args": [
                    "-y",
                    "@twilio-alpha/mcp",
                    "${TWILIO_ACCOUNT_SID}/${TWILIO_API_KEY}:${TWILIO_API_SECRET}",
                ],
            },
        ),
        "crm": CategorySpec(
            provider="HubSpot",
            env=("PRIVATE_APP_ACCESS_TOKEN",),
            connection={
                "transport": "stdio",
                "command": "npx",
                "args": ["-y", "@hubspot/mcp-server"],
            },
        ),
    }
)


EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]


class _CategoryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    provider: str | None = Field(default=None, min_length=1)
    env: list[EnvName] | None = None
    connection: dict[str, Any] | None = None


class _CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    categories: dict[str, _CategoryEntry] = Field(default_factory=dict)


def _validation_problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{e.field}: {e.message}"
        for e in field_errors(exc, top_level="(top level)", bracket_indexes=False)
    )


class McpCatalog:
    """Tool category -> MCP server. Immutable; ``with_category`` returns a changed copy."""

    def __init__(self, categories: Mapping[str, CategorySpec] | None = None) -> None:
        self._categories: Mapping[str, CategorySpec] = MappingProxyType(
            dict(DEFAULT_CATEGORIES if categories is None else categories)
        )

    def __repr__(self) -> str:
        return f"McpCatalog({dict(self._categories)!r})"

    @property
    def categories(self) -> Mapping[str, CategorySpec]:
        return self._categories

    def get(self, category: str) -> CategorySpec | None:
        return self._categories.get(category)

    def with_category(self, category: str, spec: CategorySpec) -> McpCatalog:
        """A copy of this catalog with ``category`` set (added or replaced) to ``spec``."""
        return McpCatalog({**self._categories, category: spec})

    def secret_values(self, environ: Mapping[str, str]) -> list[str]:
        """Every credential value the catalog's servers could receive."""
        return [
            value for spec in self._categories.values() for value in spec.secret_values(environ)
        ]

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], base: McpCatalog | None = None) -> McpCatalog:
        """``base`` (the defaults unless given) with the categories of the TOML file at ``path``.

        A category in the file changes only the fields it sets; a ``connection`` given replaces
        the base connection as a whole. Raises ``McpCatalogError`` naming the file and problem.
        """
        source = Path(path)
        try:
            document = tomllib.loads(source.read_text(encoding="utf-8"))
            parsed = _CatalogFile.model_validate(document)
        except OSError as exc:
            raise McpCatalogError(f"{source}: cannot read the MCP catalog: {exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise McpCatalogError(f"{source}: not valid TOML: {exc}") from None
        except ValidationError as exc:
            raise McpCatalogError(f"{source}: {_validation_problems(exc)}") from None
        catalog = base or cls()
        for category, entry in parsed.categories.items():
            catalog = catalog.with_category(
                category, _merge(source, category, entry, catalog.get(category))
            )
        return catalog

    @classmethod
    def load(
        cls,
        source: McpCatalog | str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> McpCatalog:
        """A catalog object as is; a path to a TOML file; else ``$ACTI_STORE_MCP_CONFIG``;
        else the defaults."""
        if isinstance(source, McpCatalog):
            return source
        if source is None:
            source = (os.environ if environ is None else environ).get(ENV_CONFIG) or None
        return cls() if source is None else cls.from_toml(source)


def _merge(
    source: Path, category: str, entry: _CategoryEntry, base: CategorySpec | None
) -> CategorySpec:
    where = f"{source}: categories.{category}"
    if category not in TOOL_CATEGORIES:
        raise McpCatalogError(
            f"{where}: unknown tool category; valid categories are {', '.join(TOOL_CATEGORIES)}"
        )
    provider = entry.provider or (base.provider if base else None)
    connection = (
        entry.connection if entry.connection is not None else (base.connection if base else None)
    )
    if provider is None or connection is None:
        raise McpCatalogError(f"{where}: a new category needs both provider and connection")
    env: Iterable[str] = entry.env if entry.env is not None else (base.env if base else ())
    try:
        return CategorySpec(provider=provider, connection=connection, env=tuple(env))
    except McpCatalogError as exc:
        raise McpCatalogError(f"{where}.{exc}") from None


__all__ = [
    "BASE_ENV",
    "DEFAULT_CATEGORIES",
    "ENV_CONFIG",
    "CategorySpec",
    "McpCatalog",
    "McpCatalogError",
]
