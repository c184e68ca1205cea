"""Run as a script: ``python killed_migration.py URL N ROUTE``. Migrates the store at URL to head
and kills this process (SIGKILL) right after its N-th DDL statement (CREATE, ALTER or DROP, the
migration's own progress marker included); N = 0 migrates to the end and prints how many DDL
statements ran. ROUTE is ``cli`` (``acti-store migrate``, i.e. ``upgrade_schema``) or ``alembic``
(``alembic upgrade head``, i.e. ``migrations/env.py``'s own engine)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from alembic import command
from sqlalchemy import event
from sqlalchemy.engine import Engine

from acti_store.cli import main as cli_main
from acti_store.migrations import alembic_config

DDL = ("CREATE", "ALTER", "DROP")


def main(url: str, kill_after: int, route: str) -> None:
    count = 0

    @event.listens_for(Engine, "after_cursor_execute")
    def counted(*args: Any) -> None:
        nonlocal count
        statement = str(args[2])
        if statement.lstrip().upper().startswith(DDL):
            count += 1
            if count == kill_after:
                os.kill(os.getpid(), signal.SIGKILL)

    if route == "alembic":
        command.upgrade(alembic_config(url), "head")
    elif cli_main(["migrate", "--url", url]) != 0:
        raise SystemExit(1)
    print(count)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
