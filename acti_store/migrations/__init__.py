"""acti_store's Alembic migrations, for an application that runs Alembic itself.

In the installed wheel this package also holds the Alembic scripts (``env.py``, ``versions/``),
so a minimal ini needs only::

    [alembic]
    script_location = acti_store:migrations
    sqlalchemy.url = sqlite:///store.db

In a source checkout the scripts are the top-level ``migrations/`` folder (``alembic.ini``).
acti_store records its revision in ``acti_store_alembic_version``, never in ``alembic_version``.
"""

from __future__ import annotations

from alembic.config import Config
from sqlalchemy.engine import URL

from ..engine import VERSION_TABLE, resolve_url
from ..engine import alembic_config as _alembic_config

__all__ = ["VERSION_TABLE", "alembic_config"]


def alembic_config(url: str | URL | None = None) -> Config:
    """An Alembic ``Config`` for acti_store's migrations, no ini file needed:
    ``alembic.command.upgrade(alembic_config(url), "head")``.

    ``url`` is checked as ``open_repository`` checks it (``StoreUrlError``); without it the
    migrations use ``ACTI_STORE_URL``, else the default store.
    """
    return _alembic_config(None if url is None else resolve_url(url))
