"""SQLite: the substring index takes agent changes through a short log, indexed 256 at a time.

FTS5 writes its pending terms out as a new index segment at the end of every statement that
touches it, so with the 0003 triggers each created or edited agent cost a segment of its own
(about eight extra pages per write, half the cost of a create). From this revision the triggers
only append the agent's id to ``agents_fts_log``, in the same transaction as the write, with the
text the index holds for it (NULL when it holds none). When the log reaches 256 entries, a
trigger on the log moves all of them into the index in one statement (one segment) and empties
it: still the same transaction as the write that filled it.

Invariant (what ``search`` relies on): an agent whose id is not in the log is in the index with
its current name and description; an id in the log is indexed with the logged text, or not at
all. Search therefore asks the index for the agents not in the log and checks the (at most 255)
logged agents' current text directly. PostgreSQL is unchanged (its GIN indexes have their own
pending list).

Revision ID: 0004_search_log
Revises: 0003_search
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_search_log"
down_revision: str | None = "0003_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Log entries that trigger the move into the index. A search checks at most this many
#: agents' text directly; a write pays for one index segment per this many changes.
LOG_CAPACITY = 256

_0003_TRIGGERS = ("agents_fts_insert", "agents_fts_delete", "agents_fts_update")

# The first change of an agent since the last move is the one that counts: INSERT OR IGNORE keeps
# the logged text, which is what the index still holds for that id.
_LOG = (
    "INSERT OR IGNORE INTO agents_fts_log (agent_id, indexed_name, indexed_description) "
    "VALUES ({values})"
)
#: Move the log into the index: take out the text it holds for logged ids, put in the current
#: text of those that still exist, empty the log. One statement fires it, so FTS5 writes one
#: segment for all of them.
_MOVE = (
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "SELECT 'delete', agent_id, indexed_name, indexed_description FROM agents_fts_log "
    "WHERE indexed_name IS NOT NULL",
    "INSERT INTO agents_fts(rowid, name, description) "
    "SELECT a.id, a.name, a.description FROM agents_fts_log l JOIN agents a ON a.id = l.agent_id",
    "DELETE FROM agents_fts_log",
)

_UP = (
    *(f"DROP TRIGGER {name}" for name in _0003_TRIGGERS),
    # Keyed by the agent's id (its rowid: no separate index to write).
    "CREATE TABLE agents_fts_log ("
    "agent_id INTEGER PRIMARY KEY, indexed_name TEXT, indexed_description TEXT)",
    "CREATE TRIGGER agents_fts_log_insert AFTER INSERT ON agents BEGIN "
    + _LOG.format(values="new.id, NULL, NULL")
    + "; END",
    "CREATE TRIGGER agents_fts_log_delete AFTER DELETE ON agents BEGIN "
    + _LOG.format(values="old.id, old.name, old.description")
    + "; END",
    "CREATE TRIGGER agents_fts_log_update AFTER UPDATE OF name, description ON agents "
    "WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN "
    + _LOG.format(values="old.id, old.name, old.description")
    + "; END",
    "CREATE TRIGGER agents_fts_log_move AFTER INSERT ON agents_fts_log "
    f"WHEN (SELECT count(*) FROM agents_fts_log) >= {LOG_CAPACITY} BEGIN "
    + "; ".join(_MOVE)
    + "; END",
)

#: Revision 0003's triggers, restored by the downgrade after the log is moved into the index.
_0003_UP = (
    "CREATE TRIGGER agents_fts_insert AFTER INSERT ON agents BEGIN "
    "INSERT INTO agents_fts(rowid, name, description) VALUES (new.id, new.name, new.description); "
    "END",
    "CREATE TRIGGER agents_fts_delete AFTER DELETE ON agents BEGIN "
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "VALUES ('delete', old.id, old.name, old.description); "
    "END",
    "CREATE TRIGGER agents_fts_update AFTER UPDATE OF name, description ON agents "
    "WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN "
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "VALUES ('delete', old.id, old.name, old.description); "
    "INSERT INTO agents_fts(rowid, name, description) VALUES (new.id, new.name, new.description); "
    "END",
)


def _is_sqlite() -> bool:
    return bool(op.get_bind().dialect.name == "sqlite")


def upgrade() -> None:
    if _is_sqlite():
        for statement in _UP:
            op.execute(sa.text(statement))


def downgrade() -> None:
    if _is_sqlite():
        for statement in _MOVE:
            op.execute(sa.text(statement))
        for name in ("move", "update", "delete", "insert"):
            op.execute(sa.text(f"DROP TRIGGER agents_fts_log_{name}"))
        op.execute(sa.text("DROP TABLE agents_fts_log"))
        for statement in _0003_UP:
            op.execute(sa.text(statement))
