"""The data steps of the revisions when the upgrade is printed as SQL (``migrate --sql``).

A data step reads rows to convert them, which printed SQL cannot do. On an empty database (no
revision yet: ``acti-store migrate --sql`` sets ``NO_ROWS`` in the Alembic config's attributes)
there are no rows, and the step is printed as an SQL comment; anywhere else the revision refuses
(``CommandError``), which ``migrate --sql`` checks before printing anything.
"""

from __future__ import annotations

from typing import Final

from alembic import context, op
from alembic.util import CommandError

#: The key of ``Config.attributes`` saying the upgrade starts from an empty database.
NO_ROWS: Final = "acti_store.no_rows"


def offline_data_step(revision: str, step: str) -> None:
    """In offline mode, the data step ``step`` of ``revision``: an SQL comment on an empty
    database, else ``CommandError`` (run the upgrade online instead)."""
    if context.config.attributes.get(NO_ROWS):
        op.execute(f"-- {revision}: {step}: nothing to do, the database has no rows yet")
        return
    raise CommandError(
        f"revision {revision} {step} from the stored rows and cannot be printed as SQL: run "
        "this upgrade online (acti-store migrate)"
    )
