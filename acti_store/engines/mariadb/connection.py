"""MariaDB and MySQL (``mysql+pymysql://`` or ``mariadb+pymysql://``): the connection policy.

Every session of a store runs ``session_sql`` first: lock waits end within the lock timeout
(InnoDB counts them in whole seconds: a write waits the whole seconds left and tries again for
the rest, ``first_lock_wait``), timestamps are UTC, the SQL mode is strict (a value that does
not fit is refused, never cut), transactions run at READ COMMITTED, as on PostgreSQL (a
snapshot read asks for REPEATABLE READ: ``engines.mariadb.statements``), and a read-only store's
transactions are read-only. The pool rolls back a connection given back only when its
transaction may still be open (``reset``): a round trip less per operation.

``schema=`` names a database of its own on this engine (MariaDB and MySQL have no schemas
inside a database): the store's URL is pointed at it (``store_url``).
"""

from __future__ import annotations

import math
import re
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.pool import PoolResetState

from ...connections import ENDED
from ...engine import SessionPolicy, create_store_engine
from ...errors import StoreUrlError

#: The oldest MariaDB acti_store runs on: the first with ``INSERT ... RETURNING``.
MIN_MARIADB: Final = (10, 5)

#: InnoDB's longest lock wait (seconds): ``innodb_lock_wait_timeout``'s maximum.
_LOCK_WAIT_MAX: Final = 1_073_741_824
#: The SQL mode of a store's sessions: strict (too long or out of range is an error), no zero
#: dates, no silent engine change.
SQL_MODE: Final = "STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,NO_ENGINE_SUBSTITUTION"
#: How long a pooled connection is kept (seconds), well within the server's ``wait_timeout``
#: (8 hours by default), after which the server drops it.
POOL_RECYCLE: Final = 3600


def make(policy: SessionPolicy, kwargs: dict[str, Any]) -> Engine:
    """The engine of the store's database (``schema``: a database of its own): each session
    set up by ``session_sql``, each connection given back reset by ``reset``."""
    statements = session_sql(policy.lock_timeout, read_only=policy.read_only)
    engine = create_store_engine(store_url(policy.url, policy.schema), options(kwargs))
    event.listen(engine, "connect", lambda c, _r: connect(c, statements), insert=True)
    event.listen(engine, "reset", reset)
    return engine


def store_file(url: URL) -> Path | None:
    """None: a server keeps the store."""
    return None


def migrating(conn: Connection) -> nullcontext[None]:
    """Nothing to hold around a migration."""
    return nullcontext()


def migrated(conn: Connection) -> None:
    """Nothing to do after a migration."""


def lock_wait_seconds(seconds: float) -> int:
    """A write's lock wait as InnoDB takes it: whole seconds, rounded down (never past the
    deadline). Under a second it is 0: InnoDB does not wait, and the deadline's retries
    (``repository.deadline``) try again, paused, until the time left is spent."""
    return min(_LOCK_WAIT_MAX, max(0, math.floor(seconds)))


def session_lock_wait_seconds(lock_timeout: float) -> int:
    """A session's own lock wait: ``lock_wait_seconds``, but at least 1 (a migration's DDL
    and InnoDB's own statistics must not fail at once on a lock held for a moment)."""
    return max(1, lock_wait_seconds(lock_timeout))


def lock_wait_sql(seconds: float) -> str:
    """The statement after which this session's lock waits give up after ``seconds``."""
    return f"SET SESSION innodb_lock_wait_timeout = {lock_wait_seconds(seconds)}"


def first_lock_wait(lock_timeout: float) -> float | None:
    """A write's first lock wait, when the session's (``session_lock_wait_seconds``) would
    outlast ``lock_timeout`` (under a second): None, the session's, otherwise."""
    return lock_timeout if lock_timeout < 1 else None


def session_sql(lock_timeout: float, *, read_only: bool = False) -> list[str]:
    """What every session of a store runs first."""
    statements = [
        f"SET SESSION innodb_lock_wait_timeout = {session_lock_wait_seconds(lock_timeout)}",
        "SET SESSION time_zone = '+00:00'",
        f"SET SESSION sql_mode = '{SQL_MODE}'",
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    ]
    if read_only:
        statements.append("SET SESSION TRANSACTION READ ONLY")
    return statements


def check_server(version: str) -> None:
    """Refuse (``StoreUrlError``) a server that is not MariaDB 10.5 or later (``version`` as
    the server gives it, e.g. ``10.11.19-MariaDB-0+deb12u1``): the store writes with
    ``INSERT ... RETURNING``, which MariaDB has since 10.5 and MySQL does not."""
    # MariaDB's protocol may prefix "5.5.5-" to its own version (old clients' compatibility).
    numbers = re.search(r"(\d+)\.(\d+)\.\d+-MariaDB", version, re.IGNORECASE)
    if numbers is None or (int(numbers[1]), int(numbers[2])) < MIN_MARIADB:
        raise StoreUrlError(
            f"acti_store runs on MariaDB {MIN_MARIADB[0]}.{MIN_MARIADB[1]} or later; this "
            f"server is {version[:60]!r}, which lacks INSERT ... RETURNING. Use MariaDB, "
            "PostgreSQL or SQLite"
        )


def connect(dbapi_connection: Any, statements: list[str]) -> None:
    """Check the server (``check_server``), run ``statements`` on a new connection, commit."""
    check_server(str(dbapi_connection.get_server_info()))
    cursor = dbapi_connection.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
    finally:
        cursor.close()
    dbapi_connection.commit()


def store_url(url: URL, schema: str | None) -> URL:
    """``url`` pointed at the database ``schema`` (None: the URL's own), in utf8mb4."""
    if schema is not None:
        url = url.set(database=schema)
    if "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    return url


def options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The engine options of a store: ``kwargs`` with the pool's recycle time, and the pool's
    reset on check-in left to ``reset``."""
    return {"pool_recycle": POOL_RECYCLE, "pool_reset_on_return": None, **kwargs}


def reset(dbapi_connection: Any, record: Any, state: PoolResetState) -> None:
    """The pool's reset of a connection given back (``PoolEvents.reset``): a ROLLBACK, which
    PyMySQL sends as a round trip even with no transaction open, unless the transaction has
    ended already: the repository ended it (``connections.ENDED``) or SQLAlchemy's own
    ``Connection`` did. A host's own use of ``repo.engine`` may leave a transaction open
    (a raw DBAPI cursor): that one is rolled back, or a snapshot read on the connection could
    not set its isolation (``engines.mariadb.statements``)."""
    ended = record is not None and record.info.pop(ENDED, False)
    if ended or state.transaction_was_reset or not state.asyncio_safe:
        return
    dbapi_connection.rollback()
