"""The composition root: ``open_repository`` wires the engine, the schema and the JSON mirror.

The one module that knows every adapter; nothing below it knows how they are put together.
"""

from __future__ import annotations

import os
from typing import Any, Final

from sqlalchemy.engine import URL

from .engine import LOCK_TIMEOUT_DEFAULT, make_engine, upgrade_schema
from .interchange import JsonMirror
from .repository import Clock, Mirror, SqlAgentRepository

#: Directory of the JSON mirror (``{name}.json`` rewritten after each write); unset: no mirror.
ENV_EXPORT_DIR: Final = "ACTI_STORE_EXPORT_DIR"


def open_repository(
    url: str | URL | None = None,
    *,
    migrate: bool = True,
    clock: Clock | None = None,
    mirror: Mirror | None = None,
    export_dir: str | os.PathLike[str] | None = None,
    engine_options: dict[str, Any] | None = None,
    lock_timeout: float = LOCK_TIMEOUT_DEFAULT,
) -> SqlAgentRepository:
    """Open the store at ``url`` (else ``ACTI_STORE_URL``, else ``outputs/acti_store.db``).

    Brings the schema to Alembic head unless ``migrate=False``. ``clock`` (a callable returning an
    aware UTC datetime) sets every timestamp the store writes; tests pass a fixed one.
    Unless a ``mirror`` is given, ``export_dir`` (else ``ACTI_STORE_EXPORT_DIR``; ``""`` for none)
    names a directory whose JSON files are rewritten after each committed write.
    ``lock_timeout`` (seconds) is how long one call may wait in all for a lock another writer
    holds, retries included; then it fails with a ``StoreUnavailableError`` saying so.
    """
    if not lock_timeout > 0:
        raise ValueError(f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}")
    if mirror is None:
        directory = os.environ.get(ENV_EXPORT_DIR) if export_dir is None else export_dir
        if directory:
            mirror = JsonMirror(directory)
    engine = make_engine(url, lock_timeout=lock_timeout, **(engine_options or {}))
    try:
        if migrate:
            upgrade_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    return SqlAgentRepository(engine, clock=clock, mirror=mirror, lock_timeout=lock_timeout)
