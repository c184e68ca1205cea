"""acti_store's Alembic migrations, for an application that runs Alembic itself.

In the installed wheel this package also holds the Alembic scripts (``env.py``, ``versions/``),
so a minimal ini needs only::

    [alembic]
    script_location = acti_store:migrations
    sqlalchemy.url = sqlite:///store.db
    # PostgreSQL, in a schema of its own (or alembic -x schema=acti, or ACTI_STORE_SCHEMA):
    # acti_store_schema = acti

In a source checkout the scripts are the top-level ``migrations/`` folder (``alembic.ini``).
acti_store records its revision in ``acti_store_alembic_version``, never in ``alembic_version``.
An application with its own Alembic in the same database passes ``ignore_acti_store(...)`` as its
``include_name``, so its autogenerate and ``alembic check`` leave acti_store's tables alone.
"""

from __future__ import annotations

from alembic.config import Config
from sqlalchemy.engine import URL

from ..engine import VERSION_TABLE, resolve_url
from ..engine import alembic_config as _alembic_config
from .names import ignore_acti_store

__all__ = ["VERSION_TABLE", "alembic_config", "ignore_acti_store"]


def alembic_config(url: str | URL | None = None, schema: str | None = None) -> Config:
    """An Alembic ``Config`` for acti_store's migrations, no ini file needed:
    ``alembic.command.upgrade(alembic_config(url), "head")``.

    ``url`` is checked as ``open_repository`` checks it (``StoreUrlError``); without it the
    migrations use ``ACTI_STORE_URL``, else the default store. ``schema`` is the PostgreSQL
    schema of the store, as ``open_repository(schema=...)`` takes it (checked the same way;
    None: ``ACTI_STORE_SCHEMA`` when Alembic runs; ``""``: the default schema).
    """
    return _alembic_config(None if url is None else resolve_url(url), schema)
