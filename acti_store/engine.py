"""The engine of a store: its URL and schema, checked, and the SQLAlchemy engine its database's
connection policy makes (``make_engine``, which asks the store's engine: ``engine_registry``).

Nothing here knows the JSON interchange or the mirror: ``acti_store.bootstrap`` wires those.
Bringing the schema to Alembic head is ``acti_store.revisions``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from .engine_registry import (
    DATABASE_ALIASES,
    SUPPORTED_URLS,
    EngineEntry,
    engine_for,
    find_engine,
)
from .errors import (
    ArgumentTypeError,
    MissingDriverError,
    SchemaVersionError,
    StoreUrlError,
)
from .models import INTEGER_MAX
from .validation import ARGUMENT

if TYPE_CHECKING:  # imported when first made: it needs greenlet, which only [postgres] installs
    from alembic.config import Config  # Alembic only when a migration is due (schema_head)
    from sqlalchemy.ext.asyncio import AsyncEngine

ENV_URL: Final = "ACTI_STORE_URL"
#: The PostgreSQL schema of acti_store's objects when ``open_repository(schema=...)`` is not given.
ENV_SCHEMA: Final = "ACTI_STORE_SCHEMA"
DEFAULT_URL: Final = "sqlite:///outputs/acti_store.db"
#: How long one call of the store may wait, in all, for a lock another writer holds (seconds):
#: ``open_repository(lock_timeout=...)``. Every wait for a lock (SQLite's busy timeout,
#: PostgreSQL's ``lock_timeout``) and every retry of the write count against this one deadline.
LOCK_TIMEOUT_DEFAULT: Final = 30.0
#: The longest ``lock_timeout`` (seconds), about 24.8 days: both engines take a lock wait in
#: milliseconds as a 32-bit integer (PostgreSQL's ``lock_timeout``, SQLite's busy timeout).
LOCK_TIMEOUT_MAX: Final = INTEGER_MAX / 1000
#: The table where acti_store records its Alembic revision (Alembic's ``version_table``): not
#: ``alembic_version``, which an application's own Alembic uses in the same database.
VERSION_TABLE: Final = "acti_store_alembic_version"
#: Where acti_store kept its revision before; moved to ``VERSION_TABLE`` on the first write open.
LEGACY_VERSION_TABLE: Final = "alembic_version"
#: MariaDB/MySQL: the table whose row says a migration is under way (``acti_store.revisions``):
#: written before the first DDL and deleted when the migration commits, as that engine's DDL
#: commits as it goes and cannot be rolled back. A row left behind is an interrupted migration.
MIGRATION_PROGRESS_TABLE: Final = "acti_store_migration_progress"
#: PostgreSQL: the logins bound to one tenant each, which row-level security holds to it
#: (revision 0015; ``engines.postgresql.logins``).
TENANT_LOGINS_TABLE: Final = "agent_tenant_logins"
#: A schema name acti_store takes: an identifier PostgreSQL keeps as written without quotes.
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: The rule ``_SCHEMA_NAME`` (and the names PostgreSQL reserves) in words.
SCHEMA_NAME_RULE: Final = (
    "lower-case letters, digits and underscores, starting with a letter or an underscore, at "
    "most 63 characters, not starting with pg_ (PostgreSQL's own), e.g. acti"
)
#: The execution option that carries a store's schema (None: the connection's default schema)
#: on its engine and every connection of it, so the migrations know where they run.
SCHEMA_OPTION: Final = "acti_schema"
#: The environment variable naming the connection pooler between the store and PostgreSQL
#: when ``open_repository(pooler=...)`` is not given (``POOLERS``).
ENV_POOLER: Final = "ACTI_STORE_POOLER"
#: What may stand between a store and its PostgreSQL server: nothing (or a pooler in session
#: mode, which keeps a server connection per client connection), or a pooler in transaction
#: mode (PgBouncer's ``pool_mode = transaction``, RDS Proxy, Supabase's and Neon's pooled URLs),
#: which may hand each transaction to another server connection.
POOLERS: Final = ("none", "transaction")
#: The execution option that carries a pooled store's ``postgresql.TransactionSettings`` on its
#: engine (absent: a store that keeps its settings in the session).
POOLER_OPTION: Final = "acti_pooler"


def wait_ms(seconds: float) -> int:
    """A lock wait in whole milliseconds (PostgreSQL's and SQLite's), at least 1: 0 means
    "never wait" to SQLite's busy timeout and "wait forever" to PostgreSQL's ``lock_timeout``."""
    return max(1, round(seconds * 1000))


@dataclass(frozen=True)
class SessionPolicy:
    """What ``make_engine`` resolved from its options, for the store's engine to connect by:
    the store's URL (its driver checked), schema (None: the default), whether it only reads,
    its lock timeout (seconds), whether a pooler in transaction mode stands before its server,
    the direct URL its change feed listens on, and whether the engine is an async one's."""

    url: URL
    schema: str | None
    read_only: bool
    lock_timeout: float
    pooled: bool
    listen_url: URL | None
    is_async: bool


class EngineConnection(Protocol):
    """What an engine's ``connection`` module gives (``engine_registry``)."""

    def make(self, policy: SessionPolicy, kwargs: dict[str, Any]) -> Engine:
        """The SQLAlchemy engine of the store ``policy`` describes (``kwargs``: SQLAlchemy's
        ``create_engine`` options), with this engine's connection policy."""

    def store_file(self, url: URL) -> Path | None:
        """The file the store at ``url`` is kept in, if it is kept in one."""

    def migrating(self, conn: Connection) -> AbstractContextManager[None]:
        """Held around a migration on ``conn``, its transaction and ``migrated`` included."""

    def migrated(self, conn: Connection) -> None:
        """After a migration on ``conn`` committed."""


def connection_of(database: str) -> EngineConnection:
    """The ``connection`` part of the engine of ``database`` (a backend or dialect name)."""
    return cast(EngineConnection, engine_for(database).part("connection"))


def migrating(conn: Connection) -> AbstractContextManager[None]:
    """What the store's engine holds around a migration on ``conn`` (SQLite: foreign keys off,
    so that a revision may rebuild a table), entered before its transaction begins."""
    return connection_of(conn.dialect.name).migrating(conn)


def migrated(conn: Connection) -> None:
    """What the store's engine does once a migration on ``conn`` committed (SQLite: the file
    switched to WAL)."""
    connection_of(conn.dialect.name).migrated(conn)


def resolve_url(url: str | URL | None = None) -> URL:
    """The URL argument, else ``ACTI_STORE_URL``, else the default SQLite file.

    A server's URL without a driver (``postgresql://``, ``mysql://``, ``mariadb://``, and
    ``postgres://``, PostgreSQL's other name) is read with the driver acti_store runs it on
    (``default_driver``): ``postgresql+psycopg://``, ``mysql+pymysql://``. Raises
    ``StoreUrlError`` for text that is not a database URL, or names a database or driver
    acti_store does not run on; the message lists the supported forms.
    """
    given = url or os.environ.get(ENV_URL) or DEFAULT_URL
    try:
        resolved = _with_driver(make_url(given))
        backend, driver = resolved.get_backend_name(), resolved.get_driver_name()
    except sa_exc.ArgumentError:  # not a URL, or a database SQLAlchemy has no dialect for
        raise StoreUrlError(
            f"{_shown_url(given)} is not a database URL acti_store can use. {SUPPORTED_URLS}"
        ) from None
    drivers = [d.name for d in engine_for(backend).drivers]
    if driver not in drivers:
        raise StoreUrlError(
            f"acti_store does not support the {driver} driver for {backend}: use "
            f"{backend}+{drivers[0]}://. {SUPPORTED_URLS}"
        )
    return resolved


def _with_driver(url: URL) -> URL:
    """``url`` with its database's other name replaced (``DATABASE_ALIASES``) and, for a
    server's URL that names no driver, the driver acti_store runs it on (``default_driver``)."""
    backend, plus, driver = url.drivername.partition("+")
    backend = DATABASE_ALIASES.get(backend, backend)
    entry = find_engine(backend)
    if not plus and entry is not None and entry.server:
        return url.set(drivername=f"{backend}+{default_driver(entry)}")
    return url.set(drivername=f"{backend}{plus}{driver}")


def default_driver(entry: EngineEntry) -> str:
    """The driver a URL of ``entry``'s without one is read with: the first of its drivers that
    is installed, else the first (``make_engine`` then says what to install:
    ``MissingDriverError``)."""
    for driver in entry.drivers:
        with contextlib.suppress(ImportError, ValueError):  # a module set to None in sys.modules
            if importlib.util.find_spec(driver.module) is not None:
                return driver.name
    return entry.drivers[0].name


def resolve_schema(schema: str | None, url: URL) -> str | None:
    """The PostgreSQL schema that holds the store: ``schema``, else ``ACTI_STORE_SCHEMA``; None
    (also for ``""``) is the connection's default schema, where stores have always been.

    Raises ``StoreUrlError`` for a name that breaks ``SCHEMA_NAME_RULE``, and for any schema on
    SQLite, which has none: a store there shares nothing when it has a database file of its own.
    """
    given = os.environ.get(ENV_SCHEMA, "") if schema is None else schema
    if not given:
        return None
    named = f"schema {given[:100]!r}" if schema is not None else f"{ENV_SCHEMA}={given[:100]!r}"
    if not engine_for(url.get_backend_name()).schemas:
        raise StoreUrlError(
            f"{named}: a schema of its own is for PostgreSQL. On SQLite, give acti_store a "
            "database file of its own (e.g. sqlite:///acti_store.db) instead of the "
            "application's" + ("" if schema is not None else f", and unset {ENV_SCHEMA}")
        )
    if (
        not _SCHEMA_NAME.fullmatch(given)
        or given.startswith("pg_")
        or given == "information_schema"
    ):
        raise StoreUrlError(f"{named} is not a schema name acti_store can use: {SCHEMA_NAME_RULE}")
    return given


def resolve_pooler(pooler: str | None, url: URL) -> bool:
    """Whether the store at ``url`` is reached through a pooler in transaction mode: ``pooler``
    (``"none"``/None or ``"transaction"``), else ``ACTI_STORE_POOLER``. Accepted for any engine
    (nothing else needs it); ``StoreUrlError`` for another value."""
    given = os.environ.get(ENV_POOLER, "") if pooler is None else pooler
    if given in ("", "none"):
        return False
    if given != "transaction":
        named = f"pooler {given[:40]!r}" if pooler is not None else f"{ENV_POOLER}={given[:40]!r}"
        raise StoreUrlError(
            f"{named} is not a pooler mode acti_store knows: use none or transaction"
        )
    return engine_for(url.get_backend_name()).transaction_pooler


#: The environment variable giving ``listen_url`` when ``open_repository`` is not given one.
ENV_LISTEN_URL: Final = "ACTI_STORE_LISTEN_URL"
#: The execution option that carries a store's ``listen_url`` (None: its own connections).
LISTEN_OPTION: Final = "acti_listen_url"


def resolve_listen_url(listen_url: str | URL | None, url: URL) -> URL | None:
    """The direct URL a PostgreSQL store's change feed listens on: ``listen_url``, else
    ``ACTI_STORE_LISTEN_URL``; None (the store's own connections) for other engines."""
    given = listen_url or os.environ.get(ENV_LISTEN_URL) or None
    if given is None or not engine_for(url.get_backend_name()).listens:
        return None
    resolved = resolve_url(given)
    if engine_for(resolved.get_backend_name()) is not engine_for(url.get_backend_name()):
        raise StoreUrlError("listen_url must be a PostgreSQL URL of the store's database")
    return resolved


#: The environment variable listing a store's read replicas (URLs, comma-separated) when
#: ``open_repository(replicas=...)`` is not given.
ENV_REPLICA_URLS: Final = "ACTI_STORE_REPLICA_URLS"


def resolve_replicas(replicas: Sequence[str | URL] | None) -> list[URL]:
    """The read replicas' URLs: ``replicas``, else ``ACTI_STORE_REPLICA_URLS``; each checked
    (``resolve_url``). A text given for the list is refused (``ArgumentTypeError``): a URL's
    characters are no list of URLs."""
    if replicas is None:
        given: Sequence[str | URL] = [
            u.strip() for u in os.environ.get(ENV_REPLICA_URLS, "").split(",") if u.strip()
        ]
    elif isinstance(replicas, str | bytes) or not isinstance(replicas, Sequence):
        raise ArgumentTypeError(ARGUMENT, [("replicas", "must be a list of URLs")])
    else:
        given = replicas
    return [resolve_url(url) if isinstance(url, str | URL) else _not_a_url(url) for url in given]


def _not_a_url(value: object) -> URL:
    raise ArgumentTypeError(ARGUMENT, [("replicas", f"{type(value).__name__} is not a URL")])


def is_pooled(bind: Connection | Engine) -> bool:
    """Whether the store ``bind`` (made by ``make_engine``) is reached through a pooler in
    transaction mode (``make_engine(pooler="transaction")``)."""
    return bind.get_execution_options().get(POOLER_OPTION) is not None


def store_schema(bind: Connection | Engine) -> str | None:
    """The schema of the store ``bind`` (made by ``make_engine``) works on; None: the default."""
    schema = bind.get_execution_options().get(SCHEMA_OPTION)
    return str(schema) if schema else None


def _shown_url(given: str | URL) -> str:
    """The URL a user gave, quoted in an error only when it cannot hold a password."""
    text = given.render_as_string(hide_password=True) if isinstance(given, URL) else str(given)
    if "@" in text or "password" in text.lower():
        return "the store URL (not shown: it may hold a password)"
    return f"the store URL {text[:200]!r}"


def migrations_dir() -> Path:
    """The Alembic scripts: shipped in the wheel, or the checkout's top-level ``migrations/``
    (the package's ``migrations/env.py`` there only runs that one's: it has no ``versions/``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file() and (candidate / "versions").is_dir():
            return candidate
    raise SchemaVersionError(f"Alembic migrations not found next to {here}")


#: The ini option (``[alembic]`` section) naming the schema of the store Alembic migrates; what
#: ``alembic -x schema=NAME`` gives on the command line. Read by ``migrations/env.py``.
SCHEMA_INI_OPTION: Final = "acti_store_schema"


def alembic_config(url: URL | None = None, schema: str | None = None) -> Config:
    """An Alembic config for our migrations (no alembic.ini needed); the public form is
    ``acti_store.migrations.alembic_config``. ``schema`` (PostgreSQL) as ``make_engine`` takes
    it: None leaves it to ``ACTI_STORE_SCHEMA``, ``""`` is the default schema."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        cfg.set_main_option(
            "sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%")
        )
    if schema is not None:
        if url is not None:
            resolve_schema(schema, url)  # refused now rather than when Alembic runs
        cfg.set_main_option(SCHEMA_INI_OPTION, schema)
    return cfg


def head_revisions() -> set[str]:
    """The heads of acti_store's migrations: the revisions of a store at the latest."""
    from alembic.script import ScriptDirectory

    return set(ScriptDirectory.from_config(alembic_config()).get_heads())


def make_async_engine(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    read_only: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    pooler: str | None = None,
    listen_url: str | URL | None = None,
    **kwargs: Any,
) -> AsyncEngine:
    """``make_engine``'s store on its driver's async connections (PostgreSQL: the URL's driver
    becomes ``psycopg_async``), with the same options and connection policy: what the
    repository's coroutines run on. SQLite and MariaDB have no async engine here (their
    coroutines use threads)."""
    resolved = resolve_url(url)
    if engine_for(resolved.get_backend_name()).async_driver is None:
        raise StoreUrlError("an async engine is made for PostgreSQL stores only")
    sync_engine = make_engine(
        resolved,
        schema=schema,
        read_only=read_only,
        lock_timeout=lock_timeout,
        pooler=pooler,
        listen_url=listen_url,
        _async=True,
        **kwargs,
    )
    from sqlalchemy.ext.asyncio import AsyncEngine

    return AsyncEngine(sync_engine)


def make_engine(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    read_only: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    pooler: str | None = None,
    listen_url: str | URL | None = None,
    _async: bool = False,
    **kwargs: Any,
) -> Engine:
    """An engine with its database's connection policy (each engine's ``connection.make``;
    SQLite: WAL for a file that is empty or a store, foreign keys, busy timeout; PostgreSQL:
    ``schema`` as the search path; every engine: lock waits end after ``lock_timeout`` seconds).

    ``schema`` (PostgreSQL, MariaDB; else ``ACTI_STORE_SCHEMA``, ``resolve_schema``) is carried
    by the engine and its connections (``store_schema``). ``read_only`` opens for reading only
    (SQLite: no WAL switch, no folder created; PostgreSQL sessions default to read-only
    transactions). ``pooler`` (else ``ACTI_STORE_POOLER``; ``resolve_pooler``):
    ``"transaction"`` for a PostgreSQL server reached through a pooler in transaction mode,
    where a session keeps nothing from one transaction to the next: no server-side prepared
    statements, and the store's settings (schema, lock timeout, read-only, tenant) made anew by
    each transaction. ``listen_url`` (else ``ACTI_STORE_LISTEN_URL``): a direct URL of the same
    database for the change feed's ``LISTEN``, which needs a session of its own. Raises
    ``StoreUrlError`` for a URL, schema or pooler acti_store cannot use, ``MissingDriverError``
    (saying what to install) when its driver is missing, and ``StoreUnavailableError`` when the
    SQLite file's folder cannot be created.
    """
    resolved = resolve_url(url)
    policy = SessionPolicy(
        url=resolved,
        schema=resolve_schema(schema, resolved),
        read_only=read_only,
        lock_timeout=lock_timeout,
        pooled=resolve_pooler(pooler, resolved),
        listen_url=resolve_listen_url(listen_url, resolved),
        is_async=_async,
    )
    return connection_of(resolved.get_backend_name()).make(policy, kwargs)


def create_store_engine(url: URL, kwargs: dict[str, Any]) -> Engine:
    """SQLAlchemy's engine of ``url`` (``kwargs``: ``create_engine``'s options), and
    ``MissingDriverError`` saying what to install when its driver is missing."""
    try:
        return create_engine(url, **kwargs)
    except ImportError as exc:  # the dialect imports its driver here
        driver = url.get_driver_name()
        entry = engine_for(url.get_backend_name())
        install = next(
            (d.install for d in entry.drivers if d.name == driver),
            f"install the {driver} package",
        )
        raise MissingDriverError(
            f"the {url.get_backend_name()} driver {driver!r} is not installed ({exc}). "
            f"Install it with: {install}"
        ) from None


#: Query parameters of a database URL that hold a credential (never shown in ``store_location``).
_URL_SECRET_PARAMETERS: Final = frozenset({"password", "sslpassword"})


def store_location(url: URL) -> str:
    """Where the store at ``url`` is, for people: a SQLite file's absolute path, else the URL
    without its password (libpq also takes one from the query string: dropped too)."""
    if (path := store_file(url)) is not None:
        return str(path.resolve())
    secrets = [key for key in url.query if key.lower() in _URL_SECRET_PARAMETERS]
    return url.difference_update_query(secrets).render_as_string(hide_password=True)


def store_file(url: URL) -> Path | None:
    """The file the store at ``url`` is kept in (a SQLite file), else None (a server's store)."""
    return connection_of(url.get_backend_name()).store_file(url)
