"""``raw_pymysql``'s tables and SQL text: the rows acti_store writes on MariaDB, hand-written.

The tables mirror acti_store's (``acti_store/schema.py`` as created on MariaDB): every one carries
the tenant (acti_store's default tenant, ``TENANT``), which leads the agents' unique name and
their sort indexes; the tags and trigram side tables; the version snapshots
(``agent_versions``), the per-version run counters (``agent_version_stats``), the change feed
(``agent_changes``) and its per-tenant counter (``agent_change_counters``). The write statements
are sent as one ``START TRANSACTION; ...; COMMIT`` batch each (``raw_pymysql``).
"""

from __future__ import annotations

from typing import Final

from .plain import AGENT_COLUMNS, HISTORY_MAX, RECORD_COLUMNS

#: acti_store's default tenant (``acti_store.tenancy.DEFAULT_TENANT``): no tenant given.
TENANT: Final = "default"
#: The trigram positions acti_store indexes (its triggers read MariaDB's ``seq_1_to_600``).
TRIGRAM_SPAN: Final = 600

TABLE_OPTIONS: Final = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
_TENANT_COLUMN: Final = f"tenant VARCHAR(64) NOT NULL DEFAULT '{TENANT}'"
_CASCADE: Final = "FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE"
_CONFIG_COLUMNS: Final = """description MEDIUMTEXT NOT NULL,
        system_prompt MEDIUMTEXT NOT NULL,
        tools TEXT NOT NULL,"""
TABLES: Final = (
    f"""CREATE TABLE IF NOT EXISTS agents (
        id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        {_TENANT_COLUMN},
        name VARCHAR(64) NOT NULL,
        {_CONFIG_COLUMNS}
        tools_mask SMALLINT NOT NULL,
        model VARCHAR(200) NOT NULL,
        stratum VARCHAR(8),
        tags TEXT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        updated_at DATETIME(6) NOT NULL,
        last_executed_at DATETIME(6),
        version INT NOT NULL,
        builder VARCHAR(200) NOT NULL,
        execution_count BIGINT NOT NULL,
        success_count BIGINT NOT NULL,
        error_count BIGINT NOT NULL,
        total_executions BIGINT NOT NULL,
        UNIQUE KEY agents_name (tenant, name),
        KEY agents_created (tenant, created_at DESC, name),
        KEY agents_updated (tenant, updated_at DESC, name),
        KEY agents_runs (tenant, execution_count DESC, name),
        KEY agents_stratum (tenant, stratum, name)
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS executions (
        agent_id BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        {_TENANT_COLUMN},
        agent_name VARCHAR(64) NOT NULL,
        agent_version INT,
        execution_id VARCHAR(64) NOT NULL,
        timestamp DATETIME(6) NOT NULL,
        task MEDIUMTEXT NOT NULL,
        result_summary MEDIUMTEXT NOT NULL,
        success BOOLEAN NOT NULL,
        duration_seconds DOUBLE NOT NULL,
        tool_calls_count INT NOT NULL,
        error_type VARCHAR(100),
        PRIMARY KEY (agent_id, seq),
        CONSTRAINT executions_agent {_CASCADE}
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_tags (
        tag VARCHAR(32) NOT NULL,
        agent_id BIGINT NOT NULL,
        {_TENANT_COLUMN},
        PRIMARY KEY (tag, agent_id),
        KEY agent_tags_agent (agent_id),
        CONSTRAINT agent_tags_agent_fk {_CASCADE}
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_trigrams (
        trigram VARCHAR(3) NOT NULL,
        agent_id BIGINT NOT NULL,
        PRIMARY KEY (trigram, agent_id),
        KEY agent_trigrams_agent (agent_id),
        CONSTRAINT agent_trigrams_agent_fk {_CASCADE}
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_versions (
        agent_id BIGINT NOT NULL,
        version INT NOT NULL,
        {_CONFIG_COLUMNS}
        model VARCHAR(200) NOT NULL,
        stratum VARCHAR(8),
        tags TEXT NOT NULL,
        created_at DATETIME(6) NOT NULL,
        message MEDIUMTEXT,
        {_TENANT_COLUMN},
        PRIMARY KEY (agent_id, version),
        CONSTRAINT agent_versions_agent {_CASCADE}
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_version_stats (
        agent_id BIGINT NOT NULL,
        version INT NOT NULL,
        runs BIGINT NOT NULL,
        successes BIGINT NOT NULL,
        errors BIGINT NOT NULL,
        duration_total DOUBLE NOT NULL,
        last_executed_at DATETIME(6),
        {_TENANT_COLUMN},
        PRIMARY KEY (agent_id, version),
        CONSTRAINT agent_version_stats_agent {_CASCADE}
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_changes (
        {_TENANT_COLUMN},
        seq BIGINT NOT NULL,
        kind VARCHAR(16) NOT NULL,
        agent VARCHAR(64) NOT NULL,
        version INT,
        label VARCHAR(32),
        at DATETIME(6) NOT NULL,
        PRIMARY KEY (tenant, seq)
    ) {TABLE_OPTIONS}""",
    f"""CREATE TABLE IF NOT EXISTS agent_change_counters (
        {_TENANT_COLUMN},
        last_seq BIGINT NOT NULL,
        pruned_through BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant)
    ) {TABLE_OPTIONS}""",
)

INSERT_AGENT_COLUMNS: Final = (
    "name, description, system_prompt, tools, tools_mask, model, stratum, tags, created_at, "
    "updated_at, last_executed_at, version, builder, execution_count, success_count, "
    "error_count, total_executions, tenant"
)
_SNAPSHOT_COLUMNS: Final = "description, system_prompt, tools, model, stratum, tags"
#: The agent named ``%(name)s`` of ``%(tenant)s`` (acti_store's key: tenant, name).
BY_NAME: Final = "tenant = %(tenant)s AND name = %(name)s"
INSERT_AGENT_WITH_ID: Final = (
    f"INSERT INTO agents (id, {INSERT_AGENT_COLUMNS}) VALUES ({', '.join(['%s'] * 19)})"
)
INSERT_RECORD: Final = (
    f"INSERT INTO executions (agent_id, seq, tenant, agent_name, agent_version, {RECORD_COLUMNS}) "
    f"VALUES ({', '.join(['%s'] * 13)})"
)
INSERT_TAG: Final = "INSERT INTO agent_tags (tag, agent_id, tenant) VALUES (%s, %s, %s)"
#: A snapshot of an imported agent (acti_store's ``bulk_put``: its message is ``imported``).
INSERT_IMPORTED_VERSION: Final = (
    f"INSERT INTO agent_versions (agent_id, version, created_at, message, {_SNAPSHOT_COLUMNS}, "
    "tenant) SELECT id, version, updated_at, 'imported', "
    f"{_SNAPSHOT_COLUMNS}, tenant FROM agents WHERE tenant = %s AND id >= %s"
)
INSERT_CHANGE: Final = (
    "INSERT INTO agent_changes (tenant, seq, kind, agent, version, label, at) "
    "VALUES (%s, %s, 'created', %s, %s, NULL, %s)"
)
GET: Final = f"SELECT {AGENT_COLUMNS} FROM agents WHERE {BY_NAME}"


def trigrams_of(agents: str) -> str:
    """Index the trigrams of ``LOWER(name || ' ' || description)`` of the agents ``agents``
    selects (a ``WHERE`` on ``agents``): acti_store's trigger, as one statement."""
    text = "LOWER(CONCAT(a.name, ' ', a.description))"
    return (
        "INSERT IGNORE INTO agent_trigrams (trigram, agent_id) "
        f"SELECT SUBSTRING({text}, p.seq, 3), a.id FROM agents a "
        f"JOIN seq_1_to_{TRIGRAM_SPAN} p ON p.seq <= CHAR_LENGTH({text}) - 2 "
        f"WHERE {agents} AND LOCATE(' ', SUBSTRING({text}, p.seq, 3)) = 0"
    )


#: The snapshot of the agent's configuration as of its version (acti_store's ``agent_versions``).
SNAPSHOT: Final = (
    f"INSERT INTO agent_versions (agent_id, version, {_SNAPSHOT_COLUMNS}, created_at, message, "
    f"tenant) SELECT id, version, {_SNAPSHOT_COLUMNS}, updated_at, NULL, tenant "
    f"FROM agents WHERE {BY_NAME}"
)
#: The tenant's change counter moved by one (the row lock orders the tenant's writers); nothing
#: when there is no such agent.
BUMP_COUNTER: Final = (
    "INSERT INTO agent_change_counters (tenant, last_seq, pruned_through) "
    f"SELECT tenant, 1, 0 FROM agents WHERE {BY_NAME} "
    "ON DUPLICATE KEY UPDATE last_seq = agent_change_counters.last_seq + 1"
)
#: The change row, numbered with the counter just moved.
CHANGE: Final = (
    "INSERT INTO agent_changes (tenant, seq, kind, agent, version, label, at) "
    "SELECT c.tenant, c.last_seq, %(kind)s, a.name, a.version, NULL, %(at)s "
    "FROM agent_change_counters c JOIN agents a ON a.tenant = c.tenant AND a.name = %(name)s "
    "WHERE c.tenant = %(tenant)s"
)
_VERSIONED: Final = f"{SNAPSHOT}; {BUMP_COUNTER}; {CHANGE}"

_AGENT_VALUES: Final = ", ".join(f"%({c.strip()})s" for c in INSERT_AGENT_COLUMNS.split(","))


def create_sql(tags: int) -> str:
    """One round trip: the agent, its ``tags`` tags, its trigrams, its snapshot, its change."""
    sql = (
        f"START TRANSACTION; INSERT INTO agents ({INSERT_AGENT_COLUMNS}) VALUES ({_AGENT_VALUES}); "
    )
    if tags:
        rows = ", ".join(f"(%(tag{i})s, LAST_INSERT_ID(), %(tenant)s)" for i in range(tags))
        sql += f"INSERT INTO agent_tags (tag, agent_id, tenant) VALUES {rows}; "
    return sql + f"{trigrams_of('a.id = LAST_INSERT_ID()')}; {_VERSIONED}; COMMIT"


_UPDATE_AGENT: Final = (
    "UPDATE agents SET description = COALESCE(%(description)s, description), "
    "system_prompt = COALESCE(%(system_prompt)s, system_prompt), "
    "tools = COALESCE(%(tools)s, tools), tools_mask = COALESCE(%(tools_mask)s, tools_mask), "
    "model = COALESCE(%(model)s, model), stratum = COALESCE(%(stratum)s, stratum), "
    "tags = COALESCE(%(tags)s, tags), updated_at = %(at)s, version = version + 1 "
    f"WHERE {BY_NAME}"
)
_THE_AGENT: Final = f"(SELECT id FROM agents WHERE {BY_NAME})"


def update_sql(tags: int | None, described: bool) -> str:
    """One round trip: the update, its tags replaced (``tags`` new ones, ``None``: unchanged),
    its trigrams re-indexed when its description is given, its snapshot, its change, the row
    read back under its lock (the last result but the ``COMMIT``'s)."""
    sql = f"START TRANSACTION; {_UPDATE_AGENT}; {_VERSIONED}; "
    if tags is not None:
        sql += f"DELETE FROM agent_tags WHERE agent_id = {_THE_AGENT}; "
        for i in range(tags):
            sql += (
                "INSERT INTO agent_tags (tag, agent_id, tenant) "
                f"SELECT %(tag{i})s, id, tenant FROM agents WHERE {BY_NAME}; "
            )
    if described:
        sql += f"DELETE FROM agent_trigrams WHERE agent_id = {_THE_AGENT}; "
        sql += f"{trigrams_of('a.tenant = %(tenant)s AND a.name = %(name)s')}; "
    return sql + f"{GET}; COMMIT"


#: One round trip: counters bumped (the row lock orders concurrent runs of one agent), the
#: record numbered with the new total and tagged with the agent's version, that version's run
#: counters upserted, the FIFO trimmed, one commit.
RECORD: Final = (
    "START TRANSACTION; "
    "UPDATE agents SET execution_count = execution_count + 1, "
    "total_executions = total_executions + 1, success_count = success_count + %(ok)s, "
    "error_count = error_count + %(failed)s, "
    "last_executed_at = GREATEST(COALESCE(last_executed_at, %(at)s), %(at)s) "
    f"WHERE {BY_NAME}; "
    "INSERT INTO executions (agent_id, seq, tenant, agent_name, agent_version, "
    f"{RECORD_COLUMNS}) SELECT id, total_executions, tenant, name, version, %(execution_id)s, "
    "%(at)s, %(task)s, %(result_summary)s, %(success)s, %(duration_seconds)s, "
    f"%(tool_calls_count)s, %(error_type)s FROM agents WHERE {BY_NAME}; "
    "INSERT INTO agent_version_stats (agent_id, version, runs, successes, errors, "
    "duration_total, last_executed_at, tenant) SELECT id, version, 1, %(ok)s, %(failed)s, "
    f"%(duration_seconds)s, %(at)s, tenant FROM agents WHERE {BY_NAME} "
    "ON DUPLICATE KEY UPDATE runs = agent_version_stats.runs + 1, "
    "successes = agent_version_stats.successes + VALUES(successes), "
    "errors = agent_version_stats.errors + VALUES(errors), "
    "duration_total = agent_version_stats.duration_total + VALUES(duration_total), "
    "last_executed_at = GREATEST(COALESCE(agent_version_stats.last_executed_at, "
    "VALUES(last_executed_at)), VALUES(last_executed_at)); "
    "DELETE e FROM executions e JOIN agents a ON a.id = e.agent_id "
    f"WHERE a.tenant = %(tenant)s AND a.name = %(name)s "
    f"AND e.seq <= a.total_executions - {HISTORY_MAX}; "
    "COMMIT"
)
HISTORY: Final = (
    "SELECT a.total_executions, "
    + ", ".join(f"e.{c.strip()}" for c in RECORD_COLUMNS.split(","))
    + " FROM agents a LEFT JOIN executions e ON e.agent_id = a.id "
    "WHERE a.tenant = %s AND a.name = %s ORDER BY e.seq DESC LIMIT %s"
)
EXPORT_PAGE: Final = 2_000
SORTS: Final = {
    "name": "name",
    "created_at": "created_at DESC, name",
    "updated_at": "updated_at DESC, name",
    "execution_count": "execution_count DESC, name",
}
