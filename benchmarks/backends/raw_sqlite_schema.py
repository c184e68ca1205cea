"""The hand-written schema and write statements of ``raw_sqlite`` (see its docstring).

The tables, keys and side tables are the ones an acti_store SQLite store has (``acti_store.schema``
after its migrations), written by hand: ``tenant`` on every table and leading every key acti_store
leads with it (``agents (tenant, name)`` unique, the ``(tenant, column)`` filter indexes and the
sort indexes of revision 0012, which carry ``stratum``, ``tools_mask`` and ``created_at``, the
change feed's ``(tenant, seq)``), the version snapshots ``agent_versions``, the per-version run
counters ``agent_version_stats``, the change feed ``agent_changes`` with its per-tenant counter
``agent_change_counters``, and the FTS5 trigram index ``agents_fts`` fed, as acti_store feeds it,
by triggers through the log ``agents_fts_log`` (one log row per agent whose name or description a
write changes; every 256 logged agents are moved into the index, in the write that logs the 256th).
"""

from __future__ import annotations

from typing import Final

from .plain import AGENT_COLUMNS, HISTORY_MAX, RECORD_COLUMNS

#: acti_store's tenant of a store opened without one (``acti_store.tenancy.DEFAULT_TENANT``).
TENANT: Final = "default"
#: The log size at which acti_store's trigger moves the log into the FTS index.
FTS_LOG_FLUSH: Final = 256

SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS agents (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    tools TEXT NOT NULL,
    tools_mask INTEGER NOT NULL,
    model TEXT NOT NULL,
    stratum TEXT,
    tags TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_executed_at TEXT,
    version INTEGER NOT NULL,
    builder TEXT NOT NULL,
    execution_count INTEGER NOT NULL,
    success_count INTEGER NOT NULL,
    error_count INTEGER NOT NULL,
    total_executions INTEGER NOT NULL,
    UNIQUE (tenant, name)
);
CREATE INDEX IF NOT EXISTS ix_agents_tenant_stratum ON agents (tenant, stratum);
CREATE INDEX IF NOT EXISTS ix_agents_tenant_tools_mask ON agents (tenant, tools_mask);
CREATE INDEX IF NOT EXISTS ix_agents_sort_created_at
    ON agents (tenant, created_at, stratum, tools_mask);
CREATE INDEX IF NOT EXISTS ix_agents_sort_updated_at
    ON agents (tenant, updated_at, stratum, tools_mask, created_at);
CREATE INDEX IF NOT EXISTS ix_agents_sort_execution_count
    ON agents (tenant, execution_count, stratum, tools_mask, created_at);
CREATE INDEX IF NOT EXISTS ix_agents_sort_name
    ON agents (tenant, name, stratum, tools_mask, created_at);
CREATE TABLE IF NOT EXISTS agent_tags (
    tag TEXT NOT NULL,
    agent_id INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tenant TEXT NOT NULL,
    PRIMARY KEY (tag, agent_id)
);
CREATE INDEX IF NOT EXISTS ix_agent_tags_agent_id ON agent_tags (agent_id);
CREATE TABLE IF NOT EXISTS executions (
    id INTEGER PRIMARY KEY,
    agent_id INTEGER REFERENCES agents (id) ON DELETE SET NULL,
    agent_name TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    task TEXT NOT NULL,
    result_summary TEXT NOT NULL,
    success INTEGER NOT NULL,
    duration_seconds REAL NOT NULL,
    tool_calls_count INTEGER NOT NULL,
    error_type TEXT,
    agent_version INTEGER,
    tenant TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_executions_agent_id_id ON executions (agent_id, id);
CREATE INDEX IF NOT EXISTS ix_executions_agent_name_id ON executions (agent_name, id);
CREATE TABLE IF NOT EXISTS agent_versions (
    agent_id INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    description TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    tools TEXT NOT NULL,
    model TEXT NOT NULL,
    stratum TEXT,
    tags TEXT NOT NULL,
    created_at TEXT NOT NULL,
    message TEXT,
    tenant TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_version_stats (
    agent_id INTEGER NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    duration_total REAL NOT NULL,
    last_executed_at TEXT,
    tenant TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
);
CREATE TABLE IF NOT EXISTS agent_changes (
    tenant TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    agent TEXT NOT NULL,
    version INTEGER,
    label TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS agent_change_counters (
    tenant TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    pruned_through INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE IF NOT EXISTS agents_fts USING fts5(
    name, description, content='agents', content_rowid='id', tokenize='trigram'
);
CREATE TABLE IF NOT EXISTS agents_fts_log (
    agent_id INTEGER PRIMARY KEY, indexed_name TEXT, indexed_description TEXT
);
CREATE TRIGGER IF NOT EXISTS agents_fts_log_insert AFTER INSERT ON agents BEGIN
    INSERT OR IGNORE INTO agents_fts_log (agent_id, indexed_name, indexed_description)
    VALUES (new.id, NULL, NULL);
END;
CREATE TRIGGER IF NOT EXISTS agents_fts_log_update AFTER UPDATE OF name, description ON agents
WHEN old.name IS NOT new.name OR old.description IS NOT new.description BEGIN
    INSERT OR IGNORE INTO agents_fts_log (agent_id, indexed_name, indexed_description)
    VALUES (old.id, old.name, old.description);
END;
CREATE TRIGGER IF NOT EXISTS agents_fts_log_delete AFTER DELETE ON agents BEGIN
    INSERT OR IGNORE INTO agents_fts_log (agent_id, indexed_name, indexed_description)
    VALUES (old.id, old.name, old.description);
END;
CREATE TRIGGER IF NOT EXISTS agents_fts_log_move AFTER INSERT ON agents_fts_log
WHEN (SELECT count(*) FROM agents_fts_log) >= {FTS_LOG_FLUSH} BEGIN
    INSERT INTO agents_fts (agents_fts, rowid, name, description)
    SELECT 'delete', agent_id, indexed_name, indexed_description FROM agents_fts_log
    WHERE indexed_name IS NOT NULL;
    INSERT INTO agents_fts (rowid, name, description)
    SELECT a.id, a.name, a.description FROM agents_fts_log l JOIN agents a ON a.id = l.agent_id;
    DELETE FROM agents_fts_log;
END;
"""

INSERT_AGENT: Final = (
    "INSERT INTO agents (tenant, name, description, system_prompt, tools, tools_mask, model, "
    "stratum, tags, created_at, updated_at, last_executed_at, version, builder, execution_count, "
    "success_count, error_count, total_executions) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
)
UPDATE_AGENT: Final = (
    "UPDATE agents SET description = ?, system_prompt = ?, tools = ?, tools_mask = ?, model = ?, "
    "stratum = ?, tags = ?, updated_at = ?, version = ? WHERE id = ?"
)
INSERT_TAG: Final = "INSERT INTO agent_tags (tag, agent_id, tenant) VALUES (?, ?, ?)"
#: The version snapshot: the agent's configuration as of ``version``, stamped with the instant
#: that version was made (its ``updated_at``); ``message`` is ``'imported'`` on import, else NULL.
INSERT_VERSION: Final = (
    "INSERT INTO agent_versions (agent_id, version, description, system_prompt, tools, model, "
    "stratum, tags, created_at, message, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_RECORD: Final = (
    f"INSERT INTO executions (agent_id, agent_name, {RECORD_COLUMNS}, agent_version, tenant) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
BUMP: Final = (
    "UPDATE agents SET execution_count = execution_count + 1, "
    "total_executions = total_executions + 1, success_count = success_count + ?, "
    "error_count = error_count + ?, last_executed_at = CASE "
    "WHEN last_executed_at IS NULL OR last_executed_at < ? THEN ? ELSE last_executed_at END "
    "WHERE tenant = ? AND name = ? RETURNING id, version"
)
#: The per-version run counter of the version that ran (the one ``BUMP`` returned).
BUMP_VERSION_STATS: Final = (
    "INSERT INTO agent_version_stats (agent_id, version, runs, successes, errors, duration_total, "
    "last_executed_at, tenant) VALUES (?, ?, 1, ?, ?, ?, ?, ?) "
    "ON CONFLICT (agent_id, version) DO UPDATE SET runs = runs + 1, "
    "successes = successes + excluded.successes, errors = errors + excluded.errors, "
    "duration_total = duration_total + excluded.duration_total, last_executed_at = CASE "
    "WHEN last_executed_at IS NULL OR last_executed_at < excluded.last_executed_at "
    "THEN excluded.last_executed_at ELSE last_executed_at END"
)
TRIM: Final = (
    "DELETE FROM executions WHERE agent_id = ? AND id <= "
    f"(SELECT id FROM executions WHERE agent_id = ? ORDER BY id DESC LIMIT 1 OFFSET {HISTORY_MAX})"
)
#: Takes ``n`` numbers of the tenant's change feed; returns the last one taken.
BUMP_CHANGE_COUNTER: Final = (
    "INSERT INTO agent_change_counters (tenant, last_seq, pruned_through) VALUES (?, ?, 0) "
    "ON CONFLICT (tenant) DO UPDATE SET last_seq = last_seq + excluded.last_seq RETURNING last_seq"
)
INSERT_CHANGE: Final = (
    "INSERT INTO agent_changes (tenant, seq, kind, agent, version, label, at) "
    "VALUES (?, ?, ?, ?, ?, NULL, ?)"
)
GET: Final = f"SELECT {AGENT_COLUMNS} FROM agents WHERE tenant = ? AND name = ?"
GET_FOR_UPDATE: Final = f"SELECT id, {AGENT_COLUMNS} FROM agents WHERE tenant = ? AND name = ?"
HISTORY: Final = (
    "SELECT a.total_executions, "
    + ", ".join(f"e.{c.strip()}" for c in RECORD_COLUMNS.split(","))
    + " FROM agents a LEFT JOIN executions e ON e.agent_id = a.id "
    "WHERE a.tenant = ? AND a.name = ? ORDER BY e.id DESC LIMIT ?"
)
EXPORT_AGENTS: Final = (
    f"SELECT id, total_executions, {AGENT_COLUMNS} FROM agents WHERE tenant = ? ORDER BY name"
)
EXPORT_RECORDS: Final = (
    f"SELECT {RECORD_COLUMNS} FROM executions WHERE agent_id = ? ORDER BY id DESC"
)
SORTS: Final = {
    "name": "name",
    "created_at": "created_at DESC, name",
    "updated_at": "updated_at DESC, name",
    "execution_count": "execution_count DESC, name",
}
