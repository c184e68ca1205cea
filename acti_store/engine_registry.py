"""The engines acti_store runs on: the one list of them, and the one place a database it does
not run on is refused (STYLE.md 14).

Each engine is a folder, ``acti_store/engines/<folder>/``, that holds what its database knows:

- ``connection``: its sessions' policy (``make``: the SQLAlchemy engine of a store), where a
  store's file is (``store_file``), and what a migration's connection needs (``migrating``,
  ``migrated``): the functions ``engine.EngineConnection`` names;
- ``statements``: the repository's ``EngineStrategy`` of each of its dialects (``STRATEGIES``);
- ``errors``: what its driver's errors mean (``ERRORS``: ``dberrors.ErrorCodes``);
- ``types``: its own forms of the package's column types (``TYPES``: ``column_types.EngineTypes``);
- ``migration``: how it migrates (``MIGRATION``: ``migration_policy.MigrationPolicy``);
- ``doctor``: its checks (``CHECKS``).

The rest of the package asks for an engine's part through ``engine_for(...).part(name)``, which
imports it when first asked: a SQLite store never imports PostgreSQL's driver or dialect, and
the engines import the package, never the other way (no import runs back up). Adding an engine
is a folder with those modules, an entry in ``ENGINES``, its driver's extra in
``pyproject.toml`` and an Alembic revision for its text index (docs/adapters.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from .errors import StoreUrlError


@dataclass(frozen=True)
class Driver:
    """A driver an engine runs on: the URL's driver part (``postgresql+psycopg://``), the
    module it is imported as, and what to run when it is missing."""

    name: str
    module: str
    install: str


@dataclass(frozen=True)
class EngineEntry:
    """An engine of ``ENGINES``: its folder under ``acti_store/engines``, the databases its
    URLs name (SQLAlchemy's backend names, also its dialects' names), its drivers (the first
    is a driverless URL's default and the one a refused driver's message names) and what it
    takes of the options that are not every engine's."""

    folder: str
    databases: tuple[str, ...]
    drivers: tuple[Driver, ...]
    #: A server's URL without a driver (``postgresql://``) gets one; SQLite's has its own.
    server: bool = True
    #: A schema of the store's own in a shared database (``open_repository(schema=...)``).
    schemas: bool = False
    #: A pooler in transaction mode between the store and its server (``pooler=``).
    transaction_pooler: bool = False
    #: A direct URL its change feed listens on (``listen_url=``).
    listens: bool = False
    #: The driver of its async engine (``make_async_engine``), if it has one.
    async_driver: str | None = None
    #: A store's connections kept open by the process between calls (``connections``): SQLite's,
    #: whose file a new connection would open again with its pragmas.
    kept_connections: bool = False

    def part(self, name: str) -> ModuleType:
        """The engine's module ``name`` (``connection``, ``errors``, ``types``, ``migration``,
        ``statements``, ``doctor``)."""
        return importlib.import_module(f"{__package__}.engines.{self.folder}.{name}")


_MYSQL_INSTALL: Final = 'pip install "acti-store[mysql]"'

ENGINES: Final = (
    EngineEntry(
        "sqlite",
        ("sqlite",),
        (Driver("pysqlite", "sqlite3", ""),),
        server=False,
        kept_connections=True,
    ),
    EngineEntry(
        "postgresql",
        ("postgresql",),
        (Driver("psycopg", "psycopg", 'pip install "acti-store[postgres]"'),),
        schemas=True,
        transaction_pooler=True,
        listens=True,
        async_driver="psycopg_async",
    ),
    EngineEntry(
        "mariadb",
        ("mariadb", "mysql"),
        (
            Driver("pymysql", "pymysql", _MYSQL_INSTALL),
            Driver(
                "mysqldb",
                "MySQLdb",
                "pip install mysqlclient (it builds against MariaDB's client library: "
                "e.g. apt install libmariadb-dev pkg-config)",
            ),
        ),
        schemas=True,
    ),
)
#: Other names of a database in the URLs people paste: ``postgres://`` is what Heroku, Render
#: and Fly put in ``DATABASE_URL``.
DATABASE_ALIASES: Final = {"postgres": "postgresql"}
#: The URLs acti_store takes, in words: what a refused URL's message ends with.
SUPPORTED_URLS: Final = (
    "Use sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE (PostgreSQL needs "
    'pip install "acti-store[postgres]") or mariadb+pymysql://USER:PASSWORD@HOST:PORT/DATABASE '
    f"(also mysql+pymysql://; MariaDB needs {_MYSQL_INSTALL})"
)

_BY_DATABASE: Final = {database: entry for entry in ENGINES for database in entry.databases}
#: The databases acti_store runs on (SQLAlchemy's backend and dialect names).
DATABASES: Final = frozenset(_BY_DATABASE)
_BY_DRIVER_MODULE: Final = {driver.module: entry for entry in ENGINES for driver in entry.drivers}


def engine_of_error(error: BaseException) -> EngineEntry | None:
    """The engine whose driver raised ``error`` (by the package of its class: ``sqlite3``,
    ``psycopg``, ``pymysql``), else None."""
    return _BY_DRIVER_MODULE.get(type(error).__module__.partition(".")[0])


def find_engine(database: str) -> EngineEntry | None:
    """The engine of ``database``, else None (a dialect acti_store does not run on, such as
    the default one ``str(statement)`` compiles with)."""
    return _BY_DATABASE.get(database)


def engine_for(database: str) -> EngineEntry:
    """The engine of ``database`` (a URL's backend name, a dialect's name); ``StoreUrlError``
    for one acti_store does not run on: the one place it is refused."""
    try:
        return _BY_DATABASE[database]
    except KeyError:
        raise StoreUrlError(
            f"acti_store does not support {database} databases. {SUPPORTED_URLS}"
        ) from None
