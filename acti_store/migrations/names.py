"""Which database objects are acti_store's: name filters for Alembic's ``include_name``.

Two sides of one database: an application's Alembic must not see acti_store's tables as drift
(``ignore_acti_store``, for its ``env.py``), and acti_store's own ``alembic check`` must not see the
application's (``owned_name``, used by acti_store's ``env.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

from alembic import context
from alembic.runtime.environment import IncludeNameFn, NameFilterParentNames, NameFilterType
from sqlalchemy import MetaData
from sqlalchemy.schema import SchemaItem

from ..engine import ENV_SCHEMA, MIGRATION_PROGRESS_TABLE, TENANT_LOGINS_TABLE, VERSION_TABLE
from ..errors import InvalidInputError
from ..migration_policy import migration_policy
from ..schema import Base

#: acti_store's tables in its ORM metadata: what ``alembic check`` compares.
ORM_TABLES: Final = frozenset(Base.metadata.tables)
#: Name prefixes of the search-index objects the migrations make with raw SQL, outside the ORM
#: metadata: revision 0003's FTS5 table and its shadow tables and 0004's ``agents_fts_log``
#: (SQLite, "agents_fts"), 0003's pg_trgm indexes (PostgreSQL, "ix_agents_trgm_"), 0007's
#: stratum-and-sort indexes (PostgreSQL, "ix_agents_sort_"), 0008's trigram table and its
#: triggers (MariaDB, "agent_trigrams") and sort indexes (MariaDB, "ix_agents_sort_"), and
#: 0012's sort indexes (SQLite, "ix_agents_sort_").
SEARCH_INDEX_PREFIXES: Final = (
    "agents_fts",
    "ix_agents_trgm_",
    "ix_agents_sort_",
    "agent_trigrams",
)


def is_acti_store_table(name: str) -> bool:
    """Whether a table of this name is one acti_store makes (ORM, search index, version table,
    MariaDB's migration progress table, PostgreSQL's tenant-bound logins of revision 0015)."""
    return (
        name in ORM_TABLES
        or name in (VERSION_TABLE, MIGRATION_PROGRESS_TABLE, TENANT_LOGINS_TABLE)
        or name.startswith(SEARCH_INDEX_PREFIXES)
    )


def owned_name(
    name: str | None, type_: NameFilterType, parent_names: NameFilterParentNames
) -> bool:
    """``include_name`` of acti_store's own ``env.py``: compare only acti_store's ORM tables,
    and not the search-index objects the migrations make with raw SQL. Another application's
    tables in the same database (or schema) are not drift."""
    if name is None:
        return True
    if type_ == "table":
        return name in ORM_TABLES
    return not name.startswith(SEARCH_INDEX_PREFIXES)


def owned_object(
    item: SchemaItem,
    name: str | None,
    type_: NameFilterType,
    reflected: bool,
    compare_to: SchemaItem | None,
) -> bool:
    """``include_object`` of acti_store's own ``env.py``: every object but the ORM's indexes
    that a revision replaced on the engine by its own (``MigrationPolicy.replaced_indexes``:
    SQLite's of revision 0012)."""
    if type_ != "index" or reflected:
        return True
    return name not in migration_policy(context.get_context().dialect.name).replaced_indexes


def ignore_acti_store(
    schema: str | None = None, *, metadata: MetaData | Sequence[MetaData] | None = None
) -> IncludeNameFn:
    """The ``include_name`` for an application's own Alembic ``env.py`` that shares a database
    with acti_store: its autogenerate and ``alembic check`` then neither see acti_store's
    tables as drift nor propose to drop them::

        from acti_store.migrations import ignore_acti_store
        context.configure(connection=connection, target_metadata=target_metadata,
                          include_name=ignore_acti_store(schema="acti"))

    ``schema`` is the PostgreSQL schema acti_store lives in (``open_repository(schema=...)``;
    None: ``ACTI_STORE_SCHEMA``; ``""``: the application's default schema, as on SQLite). With
    a schema of its own, that schema is left out (it only shows with ``include_schemas=True``)
    and the application's own ``agents`` table in its default schema is compared as usual;
    without one, acti_store's tables are left out of the default schema by name.

    A table the application's metadata declares is never left out, whatever its name or schema:
    the application's own ``agents`` is compared even when acti_store is elsewhere (a SQLite
    file of its own) and the filter was told ``schema=""``. The metadata is ``metadata``, else
    the ``target_metadata`` that ``env.py`` gave ``context.configure`` (read when Alembic
    compares). Outside a run of ``env.py`` (``alembic.autogenerate.compare_metadata`` on a
    context of your own), pass ``metadata``: without it the filter raises ``InvalidInputError``
    rather than guess whether a table of acti_store's name is the application's.
    Combine it with a filter of your own as ``lambda *a: ours(*a) and mine(*a)``.
    """
    own = os.environ.get(ENV_SCHEMA, "") if schema is None else schema
    given = None if metadata is None else _declared(metadata)

    def declared() -> set[tuple[str | None, str]]:
        if given is not None:
            return given
        target = _running_target_metadata()
        if target is None:
            raise InvalidInputError(
                "ignore_acti_store argument",
                [
                    (
                        "metadata",
                        "needed outside a run of Alembic's env.py: pass the application's "
                        "MetaData, so that its own tables are never taken for acti_store's",
                    )
                ],
            )
        return _declared(target)

    def include_name(
        name: str | None, type_: NameFilterType, parent_names: NameFilterParentNames
    ) -> bool:
        if name is None:
            return True
        if type_ == "schema":
            return not own or name != own or any(s == own for s, _ in declared())
        if type_ != "table":
            return True
        table_schema = parent_names.get("schema_name")
        # Where acti_store's tables are: its schema, else its names in the default schema.
        ours = table_schema == own if own else table_schema is None and is_acti_store_table(name)
        return not ours or (table_schema, name) in declared()

    return include_name


def _declared(metadata: MetaData | Sequence[MetaData]) -> set[tuple[str | None, str]]:
    """The tables ``metadata`` declares, as ``(schema, name)`` (schema None: the default)."""
    every = [metadata] if isinstance(metadata, MetaData) else list(metadata)
    return {(table.schema, table.name) for one in every for table in one.tables.values()}


def _running_target_metadata() -> MetaData | Sequence[MetaData] | None:
    """The ``target_metadata`` of the Alembic ``env.py`` running now, if one is."""
    try:
        running = context.get_context()
    except (NameError, AttributeError):  # no env.py is running: none yet, or one has ended
        return None
    target = running.opts.get("target_metadata")
    return target if isinstance(target, MetaData | Sequence) else None
