"""The composition root: ``open_repository`` wires the engine, the schema and the JSON mirror.

The one module that knows every adapter; nothing below it knows how they are put together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from .engine import (
    LOCK_TIMEOUT_DEFAULT,
    LOCK_TIMEOUT_MAX,
    is_pooled,
    make_engine,
    resolve_replicas,
    store_schema,
)
from .errors import ArgumentTypeError
from .repository import Clock, Mirror, SqlAgentRepository, retention, store_options
from .repository.core import MAX_REPLICA_LAG
from .schema_head import at_head
from .tenancy import DEFAULT_TENANT, resolve_create_tenant, resolve_tenant
from .validation import ARGUMENT, flag, folder_path, optional_function, optional_of, seconds

#: Directory of the JSON mirror (``{name}.json`` rewritten after each write); unset: no mirror.
ENV_EXPORT_DIR: Final = "ACTI_STORE_EXPORT_DIR"


def open_repository(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    migrate: bool = True,
    read_only: bool = False,
    clock: Clock | None = None,
    mirror: Mirror | None = None,
    export_dir: str | os.PathLike[str] | None = None,
    engine_options: dict[str, Any] | None = None,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
    keep_versions: int | None = None,
    tenant: str | None = None,
    keep_changes: timedelta | None = None,
    pooler: str | None = None,
    listen_url: str | URL | None = None,
    replicas: Sequence[str | URL] | None = None,
    max_replica_lag: float = MAX_REPLICA_LAG,
    create_tenant: bool | None = None,
) -> SqlAgentRepository:
    """Open the store at ``url`` (else ``ACTI_STORE_URL``, else ``outputs/acti_store.db``).

    URLs: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``,
    ``postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE`` (``pip install
    "acti-store[postgres]"``), or ``mysql+pymysql://USER:PASSWORD@HOST:PORT/DATABASE`` or
    ``mariadb+pymysql://...`` (``pip install "acti-store[mysql]"``). Brings the schema to
    Alembic head unless ``migrate=False``; then, on a store never migrated, every call raises a
    lasting ``StoreUnavailableError`` ("the store's tables are missing (run `acti-store
    migrate`)"), on every engine.
    ``schema`` (PostgreSQL only; else ``ACTI_STORE_SCHEMA``; ``""`` for none) puts every object
    of the store, its revision too, in that schema of the database (created if missing) and
    looks for tables nowhere else, so an application's own tables of the same names in other
    schemas are never touched; without it the store is in the connection's default schema.
    ``read_only=True`` opens for reading only: no migration (the schema must be at head), no
    WAL switch, SQLite ``mode=ro`` (``immutable=1`` when the file's folder is read-only too),
    PostgreSQL read-only transactions; every write raises ``ReadOnlyStoreError``.
    ``clock`` (a callable returning an aware UTC datetime) sets every timestamp the store
    writes; tests pass a fixed one. Unless a ``mirror`` is given, ``export_dir`` (else
    ``ACTI_STORE_EXPORT_DIR``; ``""`` for none) names a directory whose JSON files are
    rewritten after each committed write (a tenant's other than the default one: its subfolder
    named after the tenant). ``lock_timeout`` (seconds) is how long one call may
    wait in all for a lock another writer holds, retries included; then it fails with a
    ``StoreUnavailableError`` saying so. ``keep_versions`` (None: keep every configuration
    version) prunes each agent's snapshots on every write to that many besides the current and
    the labelled ones (``prune_versions``). ``tenant`` (else ``ACTI_STORE_TENANT``, else
    ``"default"``, where every store made before tenants keeps its agents) is the one tenant
    whose agents, versions, labels and histories the store sees and touches: names are unique
    per tenant, and another tenant's agent reads as one that does not exist (docs/tenants.md).
    ``keep_changes`` (None: keep every change) is how long the change feed keeps a change: the
    store prunes older ones after its writes (``prune_changes``; docs/changes.md).
    ``pooler`` (else ``ACTI_STORE_POOLER``): ``"transaction"`` when a PostgreSQL store is
    reached through a pooler in transaction mode (PgBouncer, RDS Proxy, Supabase's or Neon's
    pooled URL): every read and write is a transaction that makes the store's settings anew
    (schema, tenant, lock timeout), and no statement is prepared on the server; ``"none"`` (the
    default) keeps them in the session (docs/production.md). ``listen_url`` (else
    ``ACTI_STORE_LISTEN_URL``): a direct URL of the database for the change feed's ``LISTEN``
    behind such a pooler; without one, its watchers poll the feed's counter. ``replicas``
    (else ``ACTI_STORE_REPLICA_URLS``, comma-separated): URLs of streaming standbys of a
    PostgreSQL store's server, which its reads go to (its writes, and what a write reads, go to
    ``url``); a read after the store's own write waits up to ``max_replica_lag`` seconds for a
    replica that has replayed it, else reads the primary, and one store's reads never go back
    in time; a replica that fails is left out for a while (docs/production.md).
    ``create_tenant`` (else ``ACTI_STORE_TENANTS``: ``strict`` is False, ``open`` True; else
    the store's recorded mode: strict for a store made empty by revision 0014_tenant_lifecycle
    or later, open for one that held data then): whether a
    write for a tenant not registered (``acti-store tenants create``) registers it, or is
    refused with ``TenantNotFoundError`` (docs/tenants.md, "Operating tenants").

    Raises (all ``AgentStoreError``): ``InvalidInputError`` (also a ``ValueError``; for a wrong
    type an ``ArgumentTypeError``, also a ``TypeError``) for an argument out of its rule, before
    anything is opened: ``migrate`` and ``read_only`` are ``True`` or ``False``, ``lock_timeout``
    a finite positive number of seconds (at most ``engine.LOCK_TIMEOUT_MAX``), ``keep_changes``
    None or a positive ``timedelta``, ``keep_versions``
    None or an integer from 0 to ``models.INTEGER_MAX``, ``tenant`` a name of the agent-name
    rule; ``StoreUrlError`` (also a ``ValueError``)
    for a URL that is not one of those forms, for a schema name PostgreSQL would need quoted
    (see ``acti_store.engine.SCHEMA_NAME_RULE``), for a schema on SQLite (give acti_store a
    file of its own instead), and, before anything in it changes, for a SQLite file or
    PostgreSQL schema that holds another application's tables of acti_store's names (its own
    ``agents``, say; a store records its revision in ``acti_store_alembic_version``);
    ``MissingDriverError`` (also an ``ImportError``)
    when the database driver is not installed, saying what to install;
    ``StoreUnavailableError`` when the database cannot be reached or created;
    ``ReadOnlyStoreError`` (a lasting ``StoreUnavailableError``) when the store cannot be
    written by this process and ``read_only`` was not given; ``SchemaVersionError`` for a
    schema written by a newer acti_store (or, read-only, one not at head).
    """
    read_only, lock_timeout, keep_versions = store_options(read_only, lock_timeout, keep_versions)
    tenant = resolve_tenant(tenant)
    create_tenant = resolve_create_tenant(create_tenant)
    keep_changes = retention(keep_changes)
    flag(migrate, "migrate")
    optional_of(schema, str, "schema")
    optional_of(pooler, str, "pooler")
    replica_urls = resolve_replicas(replicas)
    max_replica_lag = seconds(max_replica_lag, "max_replica_lag", LOCK_TIMEOUT_MAX)
    if listen_url is not None and not isinstance(listen_url, URL):
        optional_of(listen_url, str, "listen_url")
    optional_of(engine_options, Mapping, "engine_options")
    optional_function(clock, "clock", "a function returning the time (an aware UTC datetime)")
    if mirror is not None and not callable(getattr(mirror, "sync", None)):
        raise ArgumentTypeError(ARGUMENT, [("mirror", "must be a Mirror (files_for and sync)")])
    if export_dir is not None:
        folder_path(export_dir, "export_dir")
    if mirror is None and not read_only:
        directory = os.environ.get(ENV_EXPORT_DIR) if export_dir is None else export_dir
        if directory:  # another tenant's in its subfolder: a name's file is its tenant's
            from .interchange import JsonMirror  # the export machinery, for a mirrored store only

            mirror = JsonMirror(directory if tenant == DEFAULT_TENANT else Path(directory) / tenant)
    engine = make_engine(
        url,
        schema=schema,
        read_only=read_only,
        lock_timeout=lock_timeout,
        pooler=pooler,
        listen_url=listen_url,
        **(engine_options or {}),
    )
    replica_engines = []
    try:
        if (read_only or migrate) and not at_head(engine):
            _migrate_or_check(engine, read_only)
        for replica in replica_urls:  # as the store's: its schema, pooler and lock timeout
            replica_engines.append(
                make_engine(
                    replica,
                    schema=store_schema(engine) or "",
                    read_only=True,
                    lock_timeout=lock_timeout,
                    pooler="transaction" if is_pooled(engine) else "none",
                    **(engine_options or {}),
                )
            )
    except BaseException:
        engine.dispose()
        for made in replica_engines:
            made.dispose()
        raise
    repository = SqlAgentRepository(
        engine,
        clock=clock,
        mirror=mirror,
        read_only=read_only,
        lock_timeout=lock_timeout,
        keep_versions=keep_versions,
        tenant=tenant,
        keep_changes=keep_changes,
        replicas=replica_engines,
        max_replica_lag=max_replica_lag,
        create_tenant=create_tenant,
    )
    try:
        repository.register_tenant()
    except BaseException:
        repository.close()
        raise
    return repository


def _migrate_or_check(engine: Engine, read_only: bool) -> None:
    """A store not recognised at head (``schema_head.at_head``): read-only, refused unless
    Alembic finds it at head after all; else brought there. Alembic and the migration scripts
    are loaded here, only for such a store."""
    from .revisions import check_schema, upgrade_schema

    if read_only:
        check_schema(engine)
    else:
        upgrade_schema(engine)
