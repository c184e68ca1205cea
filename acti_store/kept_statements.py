"""Compiled statements kept on disk, so that a fresh process does not compile them again.

A search's statement depends on its *shape* (``repository.search``): few of them, but each new
one costs its first use about 3,200 Python calls of SQLAlchemy's clone (tenant scoping,
``tenancy.scoped``) and compile, 4-15 ms; a CLI call or a short-lived process pays that on
every search it runs. A ``KeptStatement`` is a ``sqlexec.Prepared`` that, compiled once, writes
what ``sqlexec.Compiled`` holds (the SQL text, the parameters' names, types and defaults, the
result columns' types) to a small JSON file, and that a later process reads instead of
building and compiling the statement.

The SQL read back is the SQL SQLAlchemy compiled, tenant condition included (it was scoped
before it was written), and its values stay bound parameters. An entry is found only by the
same statement key, the same dialect (its class, paramstyle and server version) and the same
*fingerprint*: SQLAlchemy's version and the name, size and modification time of every module of
the package: a changed module (an upgrade, an edit) is a new fingerprint, never an entry
compiled by the code it replaced. Types are written by name from
the ``TypeNames`` the statement's builder gives; a statement holding a type it cannot name is
not kept (it is compiled in each process, as before).

Where: ``ACTI_STORE_STATEMENT_CACHE`` (a directory, or ``off``), else
``$XDG_CACHE_HOME/acti_store/statements``, else ``~/.cache/acti_store/statements``. A cache
that cannot be read or written is no cache: the statement is compiled, nothing fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Integer, String
from sqlalchemy import __version__ as sqlalchemy_version
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.types import TypeEngine

from .sqlexec import _REQUIRED, Compiled, Prepared, Processor

#: The environment variable naming the directory (``off``: no cache).
ENV_STATEMENT_CACHE: Final = "ACTI_STORE_STATEMENT_CACHE"
#: The package whose modules make the fingerprint: all of them, so that no module that shapes a
#: statement (its builder, an engine's way of reading a column, the tables and their types, the
#: tenant's scoping, the compile) can be left out of it as the package changes. About 160
#: ``stat`` calls, 1.4 ms once per process that compiles a kept statement, against 4-15 ms for
#: each shape it would compile again.
_PACKAGE_ROOT: Final = os.path.dirname(os.path.abspath(__file__))
#: A fingerprint's folder unused this long is removed when a new one is made.
_STALE_SECONDS: Final = 30 * 86_400
#: The generic types a statement may hold without naming them (the tenant's ``String(64)``, a
#: count's ``Integer``): by exact class, each read back as one instance (their processing does
#: not depend on a length).
_GENERIC: Final[Mapping[type[TypeEngine[Any]], str]] = {String: "String", Integer: "Integer"}
_GENERIC_TYPES: Final[Mapping[str, TypeEngine[Any]]] = {"String": String(), "Integer": Integer()}


class TypeNames:
    """The types a family of statements binds and returns, by name: how an entry writes them."""

    __slots__ = ("_by_id", "_by_name")

    def __init__(self, types: Mapping[str, Any]) -> None:
        self._by_name: dict[str, TypeEngine[Any]] = {**_GENERIC_TYPES, **types}
        self._by_id = {id(type_): name for name, type_ in types.items()}

    def name(self, type_: TypeEngine[Any]) -> str | None:
        """``type_``'s name, None for a type it does not know."""
        return self._by_id.get(id(type_)) or _GENERIC.get(type(type_))

    def type(self, name: str) -> TypeEngine[Any]:
        return self._by_name[name]


class KeptStatement(Prepared):
    """A SELECT built by ``build`` only when no process compiled it before (``key``: what the
    statement depends on, as text), compiled once per dialect and kept on disk."""

    __slots__ = ("_build", "key", "types")

    def __init__(self, key: str, build: Callable[[], ClauseElement], types: TypeNames) -> None:
        self._build: Callable[[], ClauseElement] | None = build
        self.key = key
        self.types = types
        super().__init__(_UNBUILT)

    def first_compile(self, dialect: Dialect) -> Compiled:
        folder = _folder()
        name = f"{_dialect_key(dialect)} {self.key}"
        path = None if folder is None else folder / f"{_digest(name)}.json"
        if path is not None and (kept := _read(path, name, dialect, self.types)) is not None:
            return kept
        if self._build is not None:
            self.statement, self._build = self._build(), None
        compiled = super().first_compile(dialect)
        if path is not None:
            _write(path, name, compiled, self.types)
        return compiled


#: What a ``KeptStatement`` holds until its statement is built (never compiled).
_UNBUILT: Final = ClauseElement()


def _dialect_key(dialect: Dialect) -> str:
    kind = type(dialect)
    version = ".".join(map(str, getattr(dialect, "server_version_info", None) or ()))
    return f"{kind.__module__}.{kind.__qualname__}:{dialect.paramstyle}:{version}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


_found: list[Path | None] = []


def _folder() -> Path | None:
    """This fingerprint's folder (made if need be), None when there is no cache; looked up
    once per process."""
    if not _found:
        _found.append(_make_folder())
    return _found[0]


def _make_folder() -> Path | None:
    base = _base()
    if base is None:
        return None
    try:
        folder = base / _fingerprint()
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            _remove_stale(base, folder)
    except OSError:
        return None
    return folder


def _base() -> Path | None:
    chosen = os.environ.get(ENV_STATEMENT_CACHE)
    if chosen:
        return None if chosen == "off" else Path(chosen)
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "acti_store" / "statements"


def _fingerprint() -> str:
    """SQLAlchemy's version and the path, size and mtime of each module of the package."""
    return _digest("\n".join([sqlalchemy_version, *sorted(_module_stamps(_PACKAGE_ROOT))]))


def _module_stamps(folder: str) -> list[str]:
    stamps: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                stamps += _module_stamps(entry.path)
            elif entry.name.endswith(".py"):
                stat = entry.stat()
                name = os.path.relpath(entry.path, _PACKAGE_ROOT)
                stamps.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return stamps


def _remove_stale(base: Path, current: Path) -> None:
    """Remove the fingerprints' folders nobody wrote to for ``_STALE_SECONDS``."""
    cutoff = time.time() - _STALE_SECONDS
    for other in base.iterdir():
        if other != current and other.is_dir() and other.stat().st_mtime < cutoff:
            shutil.rmtree(other, ignore_errors=True)


def _read(path: Path, name: str, dialect: Dialect, types: TypeNames) -> Compiled | None:
    try:
        entry = json.loads(path.read_bytes())
        if entry["name"] != name:
            return None
        return Compiled(
            sql=entry["sql"],
            positional=entry["positional"],
            plan=tuple(
                (
                    parameter,
                    _processor(types.type(type_name), dialect),
                    _REQUIRED if required else default,
                )
                for parameter, type_name, required, default in entry["plan"]
            ),
            dialect=dialect,
            result_types=tuple(types.type(type_name) for type_name in entry["results"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _processor(type_: TypeEngine[Any], dialect: Dialect) -> Processor | None:
    return type_.dialect_impl(dialect).bind_processor(dialect)


def _write(path: Path, name: str, compiled: Compiled, types: TypeNames) -> None:
    """Write ``compiled`` to ``path`` (a file of its own, renamed into place: a reader never
    sees half of it), unless it holds a type ``types`` cannot name or a default JSON cannot."""
    plan = []
    for (parameter, _, default), type_ in zip(compiled.plan, compiled.bind_types, strict=True):
        required = default is _REQUIRED
        plan.append([parameter, types.name(type_), required, None if required else default])
    results = [types.name(type_) for type_ in compiled.result_types]
    if any(row[1] is None for row in plan) or None in results or compiled.plain_insert:
        return
    entry = {"name": name, "sql": compiled.sql, "positional": compiled.positional}
    try:
        text = json.dumps(entry | {"plan": plan, "results": results})
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError):
        return
