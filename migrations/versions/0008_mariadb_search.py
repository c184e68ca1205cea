"""MariaDB: a substring index of the agents' name and description, the trigrams of each.

MariaDB has no trigram index, and its FULLTEXT index matches words, not substrings. From this
revision ``agent_trigrams`` holds, per agent, every distinct trigram (three characters) of its
lower-cased name and of its lower-cased description (none across the two, none holding a space:
a search word holds no space). Triggers on ``agents`` keep it exact in the transaction of every
write: an insert adds the agent's trigrams, an update of the name or the description replaces
them, a delete removes them (the foreign key's cascade). The trigrams are made in one statement
per trigger by a join with MariaDB's SEQUENCE engine (``seq_1_to_<n>``: the positions of the
text). Existing agents are indexed by the upgrade.

The trigram column compares as ``agents.description`` does (its collation, read here): a word
the search's ``LIKE`` finds in the text, in that collation, then holds only trigrams the index
holds for the agent. Search (``engines.mariadb.statements.MariadbTrigramIndex``) asks the index
for the agents that hold every trigram of the query's words, then tests those with ``LIKE``.

A search walks its sort's index and stops at its limit (``repository.search``), but a sort
other than the name's orders by ``column DESC, name``, which the one-column index does not give:
MariaDB read every agent and sorted them (35-140 ms at 100,000 agents, with or without a text
query). ``ix_agents_sort_<column>`` on ``(column DESC, name)`` gives that order.

Other engines are not touched. The table is made with raw SQL, outside the ORM metadata, and
kept out of ``alembic check`` like 0003's (``acti_store.migrations.names.SEARCH_INDEX_PREFIXES``).
Downgrade: the indexes, the triggers and the table are dropped.

Revision ID: 0008_mariadb_search
Revises: 0007_postgres_search
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from acti_store.column_types import MYSQL_DIALECTS

revision: str = "0008_mariadb_search"
down_revision: str | None = "0007_postgres_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The positions a trigram may start at: a text of up to this many characters is indexed whole
#: (a name holds at most 64, a description at most 500: ``acti_store.models``; and a space).
_POSITIONS = "seq_1_to_600"
_INSERT = "INSERT IGNORE INTO agent_trigrams (trigram, agent_id) "


def _trigrams(agent_id: str, name: str, description: str, source: str = "") -> str:
    """Insert the trigrams of ``name`` and ``description`` (SQL expressions) of agent
    ``agent_id``, for each row of ``source`` (a FROM item: ``agents AS a``, or none in a
    trigger), lower-cased and without those holding a space: the two are indexed as one text
    joined by a space, so no trigram spans them. Repeats are left to ``INSERT IGNORE``. No
    ``%`` in it (printed as SQL for ``--sql``)."""
    text = f"CONCAT({name}, ' ', {description})"
    gram = f"SUBSTRING(LOWER({text}), p.seq, 3)"
    joined = f"{source} JOIN {_POSITIONS} AS p ON" if source else f"{_POSITIONS} AS p WHERE"
    return (
        f"{_INSERT} SELECT {gram}, {agent_id} FROM {joined} "
        f"p.seq <= CHAR_LENGTH({text}) - 2 AND LOCATE(' ', {gram}) = 0"
    )


#: A trigger's statement that indexes the new row's text.
_NEW_TRIGRAMS = _trigrams("NEW.id", "NEW.name", "NEW.description")

#: The sorts but the name's, each ``column DESC, name``: their indexes (below).
_SORTED = ("created_at", "updated_at", "execution_count")
_TRIGGERS = (
    "CREATE TRIGGER agent_trigrams_insert AFTER INSERT ON agents FOR EACH ROW BEGIN "
    + _NEW_TRIGRAMS
    + "; END",
    "CREATE TRIGGER agent_trigrams_update AFTER UPDATE ON agents FOR EACH ROW BEGIN "
    "IF NOT (OLD.name <=> NEW.name AND OLD.description <=> NEW.description) THEN "
    "DELETE FROM agent_trigrams WHERE agent_id = OLD.id; " + _NEW_TRIGRAMS + "; END IF; END",
)


def _text_collation() -> str:
    """The collation ``agents.description`` compares in (the trigrams compare in it too)."""
    found = op.get_bind().scalar(
        sa.text(
            "SELECT collation_name FROM information_schema.columns WHERE table_schema = "
            "DATABASE() AND table_name = 'agents' AND column_name = 'description'"
        )
    )
    return str(found or "utf8mb4_bin")


def upgrade() -> None:
    if op.get_context().dialect.name not in MYSQL_DIALECTS:
        return
    collation = "utf8mb4_bin" if op.get_context().as_sql else _text_collation()
    op.execute(
        "CREATE TABLE agent_trigrams ("
        f"trigram VARCHAR(3) CHARACTER SET utf8mb4 COLLATE {collation} "
        "NOT NULL, agent_id INTEGER NOT NULL, "
        "CONSTRAINT pk_agent_trigrams PRIMARY KEY (trigram, agent_id), "
        "INDEX ix_agent_trigrams_agent_id (agent_id), "
        "CONSTRAINT fk_agent_trigrams_agent_id_agents FOREIGN KEY (agent_id) "
        "REFERENCES agents (id) ON DELETE CASCADE"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )
    op.execute(_trigrams("a.id", "a.name", "a.description", "agents AS a"))
    for trigger in _TRIGGERS:
        op.execute(trigger)
    for column in _SORTED:
        op.execute(f"CREATE INDEX ix_agents_sort_{column} ON agents ({column} DESC, name)")


def downgrade() -> None:
    if op.get_context().dialect.name not in MYSQL_DIALECTS:
        return
    for column in _SORTED:
        op.execute(f"DROP INDEX ix_agents_sort_{column} ON agents")
    for name in ("update", "insert"):
        op.execute(f"DROP TRIGGER IF EXISTS agent_trigrams_{name}")
    op.execute("DROP TABLE IF EXISTS agent_trigrams")
