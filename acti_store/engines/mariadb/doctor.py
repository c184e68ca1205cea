"""The doctor's MariaDB checks: the server's version (``make_engine`` refuses a server acti_store
does not run on as it connects: ``mariadb.check_server``) and the session's isolation level."""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from ...doctor.findings import EngineChecks, Finding, Target, ok, warning

#: The isolation level every session of a store runs at (``acti_store.mariadb.session_sql``).
ISOLATION: Final = "READ-COMMITTED"


def _version(conn: Connection) -> str:
    return str(conn.execute(text("SELECT VERSION()")).scalar_one())


def isolation(target: Target) -> list[Finding]:
    """The store's sessions read committed rows (its writes lock what they change): a proxy
    that drops the session's settings would leave them at the server's default."""
    with target.engine.connect() as conn:
        level = str(conn.execute(text("SELECT @@SESSION.tx_isolation")).scalar_one())
    if level.upper() == ISOLATION:
        return [ok("isolation", f"sessions run at {level}")]
    return [
        warning(
            "isolation",
            f"sessions run at {level}, not {ISOLATION}: something between this process and "
            "the server dropped the session's settings",
            "connect to the server directly, or through a proxy that keeps session settings",
        )
    ]


CHECKS: Final = EngineChecks(label="MariaDB", version=_version, checks=(("isolation", isolation),))
