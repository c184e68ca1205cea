"""``acti-store doctor``: what an operator checks first, each check one ``Finding``.

``diagnose`` reads and never writes: it opens the store read-only (a missing SQLite file is a
finding, not a new file; a SQLite store keeps its journal mode), never migrates, and shows the
store's URL without its password (``store_location``). Every engine is asked for its server's
version and the store's revision; each engine's own checks (``EngineChecks``) live in its folder
(``acti_store/engines/<engine>/doctor.py``), found through the engines' registry.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from alembic.script import ScriptDirectory
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from ..dberrors import unreachable
from ..engine import (
    ENV_REPLICA_URLS,
    alembic_config,
    make_engine,
    resolve_pooler,
    resolve_schema,
    resolve_url,
    store_file,
    store_location,
)
from ..engine_registry import engine_for
from ..errors import AgentStoreError
from ..revisions import current_revisions
from ..tenancy import resolve_tenant
from .findings import EngineChecks, Finding, Target, error, healthy, ok, report

__all__ = ["Finding", "diagnose", "healthy", "report"]


def engine_checks(database: str) -> EngineChecks:
    """The checks of the engine of ``database`` (a URL's backend name: ``resolve_url`` refused
    any other), from its folder's ``doctor`` module."""
    checks: EngineChecks = engine_for(database).part("doctor").CHECKS
    return checks


#: What to do when the options name no store acti_store can open.
FIX_OPTIONS: Final = "correct the option or environment variable the message names"
#: What to do when the server cannot be reached.
FIX_CONNECTION: Final = (
    "check the URL (host, port, database, user, password), that the server is running, and "
    "that this machine may reach it"
)
#: What to do when a check's own query failed (the store was reached).
FIX_CHECK: Final = "check that the role may read the server's catalog, else report it"


def diagnose(
    url: str | URL | None = None,
    *,
    schema: str | None = None,
    tenant: str | None = None,
    pooler: str | None = None,
    replicas: Sequence[str] | None = None,
) -> list[Finding]:
    """Check the store at ``url`` (else ``ACTI_STORE_URL``, else the default SQLite file), in
    ``schema`` (else ``ACTI_STORE_SCHEMA``), for ``tenant`` (checked only); ``pooler`` (else
    ``ACTI_STORE_POOLER``) is the pooler mode the store is configured with, ``replicas`` (else
    ``ACTI_STORE_REPLICA_URLS``) the read replicas' URLs.

    Returns the findings, in order: the server and its version, the store's revision against
    this acti_store's head, then the engine's own checks. A store that cannot be reached is one
    error finding. Never raises for a problem of the store or its options: each is a finding.
    """
    try:
        resolved = resolve_url(url)
        own_schema = resolve_schema(schema, resolved)
        resolve_tenant(tenant)
        pooled = resolve_pooler(pooler, resolved)
    except (AgentStoreError, ValueError) as exc:  # ValueError: e.g. a URL's port not a number
        return [error("options", str(exc), FIX_OPTIONS)]
    options = (
        *(("--url", _shown_url(resolved)) if url is not None else ()),
        *(("--schema", own_schema) if schema else ()),
    )
    path = store_file(resolved)
    if path is not None and not path.is_file():
        return [
            error(
                "store",
                f"there is no store at {path.expanduser().absolute()} (no such file); "
                "nothing was created",
                f"check --url, or create the store: {' '.join(('acti-store', *options))} migrate",
            )
        ]
    checks = engine_checks(resolved.get_backend_name())
    try:
        engine = make_engine(
            resolved, schema=own_schema, read_only=True, pooler=pooler, poolclass=NullPool
        )
    except AgentStoreError as exc:
        return [error("store", str(exc), FIX_OPTIONS)]
    target = Target(engine, resolved, own_schema, pooled, _replicas(replicas), options)
    try:
        try:
            with engine.connect() as conn:
                version = checks.version(conn)
        except AgentStoreError as exc:  # e.g. a server acti_store does not run on
            return [error("server", str(exc), "use a server acti_store runs on (docs/engines.md)")]
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            return [error("connection", str(unreachable(exc)), FIX_CONNECTION)]
        driver_error: type[Exception] = engine.dialect.loaded_dbapi.Error  # a probe's own
        findings = [ok("server", f"{checks.label} {version} at {store_location(resolved)}")]
        findings.append(_revision(target))
        for name, check in checks.checks:
            try:
                findings.extend(check(target))
            except (AgentStoreError, sa_exc.SQLAlchemyError, driver_error) as exc:
                findings.append(error(name, f"could not check: {_first_line(exc)}", FIX_CHECK))
        return findings
    finally:
        engine.dispose()


def _replicas(replicas: Sequence[str] | None) -> tuple[str, ...]:
    """The replicas' URLs given, else those of ``ACTI_STORE_REPLICA_URLS`` (comma-separated)."""
    if replicas is None:
        replicas = os.environ.get(ENV_REPLICA_URLS, "").split(",")
    return tuple(url.strip() for url in replicas if url.strip())


def _shown_url(url: URL) -> str:
    """``url`` as a printed command gives it: a server's without its password (``***``)."""
    return str(url) if store_file(url) is not None else store_location(url)


def _first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _revision(target: Target) -> Finding:
    """The store's schema revision against the head of this acti_store's migrations."""
    try:
        current, heads, legacy = current_revisions(target.engine)
    except AgentStoreError as exc:
        return error("revision", str(exc), FIX_CONNECTION)
    script = ScriptDirectory.from_config(alembic_config())
    known = {revision.revision for revision in script.walk_revisions()}
    at, head = ", ".join(sorted(current)), ", ".join(sorted(heads))
    migrate = f"run {target.command('migrate')}"
    if not current:
        return error(
            "revision",
            f"{store_location(target.url)} holds no acti_store store (no revision recorded)",
            f"check --url and --schema; to create the store there, {migrate}",
        )
    if not current <= known:
        return error(
            "revision",
            f"the store is at revision {at}, which this acti_store does not know (a newer "
            "acti_store migrated it)",
            "upgrade acti_store to the version that migrated the store",
        )
    if current != heads:
        return error("revision", f"the store is at revision {at}, behind {head}", migrate)
    if legacy:
        return error(
            "revision",
            f"the store is at {at}, recorded where earlier versions of acti_store kept it",
            migrate,
        )
    return ok("revision", f"the store is at revision {at}, the latest")
