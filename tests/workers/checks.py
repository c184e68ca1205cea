"""Invariants the parent verifies after children ran; each function returns a list of problems.

Returning problems (instead of asserting) lets the tests ``assert problems == []`` with a readable
diff and lets ``benchmarks.stress`` print them.

The FIFO check needs every record ever inserted, including the ones the trim deleted: the
scenarios install :func:`install_trim_audit`, a trigger that copies each deleted execution row
(its id and task) into ``trimmed_executions`` in the same transaction. Ids order the history
(newest = highest), so "the 50 newest are kept" becomes exact: the retained rows are the 50
highest ids of retained + trimmed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError

from acti_store import SearchQuery, SqlAgentRepository
from acti_store.documents import (
    DocumentError,
    agent_from_document,
    history_from_document,
    is_history_document,
    loads,
)
from acti_store.models import HISTORY_MAX_RECORDS
from acti_store.schema import agent_tags, agents, executions

from .children import (
    PROMPT_BASE,
    Call,
    crash_update,
    generation_description,
    has_history,
    parse_task,
)

_AUDIT_TABLE = (
    "CREATE TABLE trimmed_executions ("
    "id INTEGER, agent_id INTEGER, agent_name VARCHAR(64), task TEXT)"
)
_AUDIT_SQLITE = (
    "CREATE TRIGGER audit_trim AFTER DELETE ON executions BEGIN "
    "INSERT INTO trimmed_executions VALUES (OLD.id, OLD.agent_id, OLD.agent_name, OLD.task); END"
)
_AUDIT_POSTGRESQL = (
    "CREATE FUNCTION audit_trim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO trimmed_executions VALUES (OLD.id, OLD.agent_id, OLD.agent_name, OLD.task); "
    "RETURN OLD; END $$",
    "CREATE TRIGGER audit_trim AFTER DELETE ON executions "
    "FOR EACH ROW EXECUTE FUNCTION audit_trim()",
)

_AUDIT_MARIADB = (
    "CREATE TRIGGER audit_trim AFTER DELETE ON executions FOR EACH ROW "
    "INSERT INTO trimmed_executions VALUES (OLD.id, OLD.agent_id, OLD.agent_name, OLD.task)"
)
_AUDITS: dict[str, tuple[str, ...]] = {
    "sqlite": (_AUDIT_SQLITE,),
    "postgresql": _AUDIT_POSTGRESQL,
    "mysql": (_AUDIT_MARIADB,),
    "mariadb": (_AUDIT_MARIADB,),
}


def install_trim_audit(engine: Engine) -> None:
    """Keep a copy of every execution row the store deletes (test instrumentation only)."""
    statements = (_AUDIT_TABLE, *_AUDITS[engine.dialect.name])
    with engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)


def _rows(engine: Engine, sql: str, name: str) -> list[tuple[int, str]]:
    with engine.connect() as conn:
        return [(row.id, row.task) for row in conn.execute(text(sql), {"name": name})]


def fifo_problems(repo: SqlAgentRepository, name: str, calls: Sequence[Call]) -> list[str]:
    """Check one agent after ``calls`` (every call made to it, by any worker) all succeeded.

    Exact: the counters equal the calls; every call was inserted once; the retained records are
    the 50 newest inserted; each worker's calls were inserted in the order it made them; and
    ``get_history`` returns the retained records newest first.
    """
    problems: list[str] = []
    agent = repo.get(name)
    meta = agent.metadata
    history = repo.get_history(name, limit=HISTORY_MAX_RECORDS)
    successes = sum(call.success for call in calls)
    expected = {
        "execution_count": len(calls),
        "success_count": successes,
        "error_count": len(calls) - successes,
        "total_executions": len(calls),
    }
    actual = {
        "execution_count": meta.execution_count,
        "success_count": meta.success_count,
        "error_count": meta.error_count,
        "total_executions": history.total_executions,
    }
    if actual != expected:
        problems.append(f"{name}: counters {actual}, expected {expected}")

    retained = _rows(
        repo.engine,
        "SELECT e.id, e.task FROM executions e JOIN agents a ON e.agent_id = a.id "
        "WHERE a.name = :name",
        name,
    )
    trimmed = _rows(
        repo.engine, "SELECT id, task FROM trimmed_executions WHERE agent_name = :name", name
    )
    inserted = sorted(retained + trimmed)
    tasks = Counter(task for _, task in inserted)
    duplicated = sorted(task for task, n in tasks.items() if n > 1)
    missing = sorted({call.task for call in calls} - set(tasks))
    extra = sorted(set(tasks) - {call.task for call in calls})
    if duplicated or missing or extra:
        problems.append(
            f"{name}: inserted records differ from the calls made: duplicated {duplicated[:5]}, "
            f"missing {missing[:5]}, unexpected {extra[:5]}"
        )
    newest = inserted[-HISTORY_MAX_RECORDS:]
    if sorted(retained) != newest:
        kept = sorted(i for i, _ in retained)
        problems.append(
            f"{name}: kept {len(kept)} records, not the {len(newest)} newest: "
            f"kept ids {kept[:3]}..., newest {[i for i, _ in newest][:3]}..."
        )
    last_call: dict[int, int] = defaultdict(lambda: -1)
    for _, task in inserted:
        worker, call = parse_task(task)
        if call <= last_call[worker]:
            problems.append(
                f"{name}: worker {worker} call {call} stored after call {last_call[worker]}"
            )
        last_call[worker] = call
    shown = [record.task for record in history.executions]
    if shown != [task for _, task in reversed(newest)]:
        problems.append(f"{name}: get_history is not the newest records newest first: {shown[:5]}")
    return problems


def history_problems(repo: SqlAgentRepository, name: str) -> list[str]:
    """Check an agent written by ``record_until_killed``: counters agree with the history.

    Run ``n`` has task ``str(n)`` and succeeds when ``n`` is even, so with ``count`` runs committed
    the history must hold exactly runs ``count, count-1, ...`` (at most 50, no gap) and the
    counters must be ``count // 2`` successes and the rest errors.
    """
    meta = repo.get(name).metadata
    history = repo.get_history(name, limit=HISTORY_MAX_RECORDS)
    count = meta.execution_count
    problems: list[str] = []
    counters = (history.total_executions, meta.success_count, meta.error_count)
    if counters != (count, count // 2, count - count // 2):
        problems.append(
            f"{name}: execution_count {count} but (total, successes, errors) = {counters}"
        )
    expected = [str(n) for n in range(count, max(count - HISTORY_MAX_RECORDS, 0), -1)]
    tasks = [record.task for record in history.executions]
    if tasks != expected:
        problems.append(f"{name}: after {count} runs the history holds {tasks[:5]}...")
    with repo.engine.connect() as conn:
        stored: int = conn.execute(
            text(
                "SELECT count(*) FROM executions e JOIN agents a ON e.agent_id = a.id "
                "WHERE a.name = :name"
            ),
            {"name": name},
        ).scalar_one()
    if stored != min(count, HISTORY_MAX_RECORDS):
        problems.append(f"{name}: {stored} execution rows stored after {count} runs")
    return problems


def update_problems(repo: SqlAgentRepository, name: str) -> list[str]:
    """Check an agent written by ``update_until_killed``: every field names the stored version,
    and the tag index holds exactly the agent's tags."""
    agent = repo.get(name)
    version = agent.metadata.version
    problems: list[str] = []
    if version > 1:
        want = crash_update(version)
        got = (agent.description, agent.system_prompt, agent.tags)
        if got != (want.description, want.system_prompt, want.tags):
            problems.append(f"{name}: version {version} holds fields of another update: {got}")
    elif not agent.system_prompt.startswith(PROMPT_BASE):
        problems.append(f"{name}: version 1 holds {agent.system_prompt!r}")
    problems += tag_index_problems(repo, name, agent.tags)
    return problems


def tag_index_problems(repo: SqlAgentRepository, name: str, tags: Iterable[str]) -> list[str]:
    """The ``agent_tags`` index holds exactly ``tags`` for ``name`` and search finds it by each."""
    with repo.engine.connect() as conn:
        indexed: set[str] = set(
            conn.execute(
                text(
                    "SELECT t.tag FROM agent_tags t JOIN agents a ON t.agent_id = a.id "
                    "WHERE a.name = :name"
                ),
                {"name": name},
            ).scalars()
        )
    problems = []
    if indexed != set(tags):
        problems.append(f"{name}: tag index {sorted(indexed)} but agent tags {sorted(tags)}")
    for tag in tags:
        found = [a.name for a in repo.search(SearchQuery(query=name, tags=[tag], limit=100))]
        if name not in found:
            problems.append(f"{name}: search by tag {tag!r} does not find it")
    return problems


#: Revision 0004's hand-over of the text index's log, then FTS5's check of the index against the
#: agents table: run in a transaction that is rolled back, it proves "index + log = agents".
_TEXT_INDEX_CHECK = (
    "INSERT INTO agents_fts(agents_fts, rowid, name, description) "
    "SELECT 'delete', agent_id, indexed_name, indexed_description FROM agents_fts_log "
    "WHERE indexed_name IS NOT NULL",
    "INSERT INTO agents_fts(rowid, name, description) "
    "SELECT a.id, a.name, a.description FROM agents_fts_log l JOIN agents a ON a.id = l.agent_id",
    "INSERT INTO agents_fts(agents_fts, rank) VALUES ('integrity-check', 1)",
)


def sqlite_integrity_problems(engine: Engine) -> list[str]:
    """``PRAGMA integrity_check``, ``foreign_key_check``, and the text index in step with the
    agents table (nothing to check on PostgreSQL)."""
    if engine.dialect.name != "sqlite":
        return []
    with engine.connect() as conn:
        integrity = [row[0] for row in conn.exec_driver_sql("PRAGMA integrity_check")]
        orphans = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    problems = [] if integrity == ["ok"] else [f"integrity_check: {integrity[:5]}"]
    if orphans:
        problems.append(f"foreign_key_check: {orphans[:5]}")
    with engine.connect() as conn, conn.begin() as transaction:
        try:
            for statement in _TEXT_INDEX_CHECK:
                conn.exec_driver_sql(statement)
        except DBAPIError as exc:
            problems.append(f"text index out of step with the agents table: {exc.orig}")
        transaction.rollback()
    return problems


# -- generations: import and export kill cycles (see children.write_generation) -------------------


def store_generation_problems(
    repo: SqlAgentRepository, names: list[str], allowed: set[int]
) -> list[str]:
    """The agents ``names`` were imported all together or not at all (an import is one
    transaction): all absent, or all at one generation of ``allowed`` (their version), each with
    that generation's description, tags, tag index rows and history. Three queries in all."""
    with repo.engine.connect() as conn:
        rows = conn.execute(
            select(
                agents.c.id,
                agents.c.name,
                agents.c.description,
                agents.c.version,
                agents.c.tags,
                agents.c.total_executions,
            ).where(agents.c.name.in_(names))
        ).all()
        ids = [row.id for row in rows]
        indexed: dict[int, set[str]] = defaultdict(set)
        for tag_row in conn.execute(
            select(agent_tags.c.agent_id, agent_tags.c.tag).where(agent_tags.c.agent_id.in_(ids))
        ):
            indexed[tag_row.agent_id].add(tag_row.tag)
        tasks: dict[int, list[str]] = defaultdict(list)
        for run in conn.execute(
            select(executions.c.agent_id, executions.c.task)
            .where(executions.c.agent_id.in_(ids))
            .order_by(executions.c.agent_id, executions.c.id.desc())
        ):
            tasks[run.agent_id].append(run.task)
    if not rows:
        return [] if 0 in allowed else [f"none of the {len(names)} agents is in the store"]
    if len(rows) != len(names):
        return [f"{len(rows)} of {len(names)} agents imported: a partial import"]
    generations = {row.version for row in rows}
    if len(generations) != 1:
        return [f"a mix of generations {sorted(generations)}: a partial import"]
    if not generations <= allowed:
        return [f"agents at generation {generations}, expected one of {sorted(allowed)}"]
    (generation,) = generations
    problems: list[str] = []
    for row in rows:
        expected = (
            generation_description(generation, row.name),
            ["crash-test", f"gen-{generation}"],
        )
        if (row.description, row.tags) != expected:
            problems.append(f"{row.name}: version {generation} holds {row.description!r}")
        if indexed[row.id] != set(row.tags):
            problems.append(f"{row.name}: tag index {sorted(indexed[row.id])}, tags {row.tags}")
        history = [f"g{generation}-run{n}" for n in (3, 2, 1)] if has_history(row.name) else []
        total = generation + 3 if has_history(row.name) else 0
        if (tasks[row.id], row.total_executions) != (history, total):
            problems.append(f"{row.name}: history {tasks[row.id]}, total {row.total_executions}")
    return problems


def export_folder_problems(folder: Path, names: list[str], allowed: set[int]) -> list[str]:
    """Every ``*.json`` file of an export ``folder`` is a whole, valid document, and each agent
    file is of a generation in ``allowed`` (files are replaced atomically: old or new, never a
    part or a mix)."""
    problems: list[str] = []
    for file in sorted(folder.glob("*.json")):
        try:
            document = loads(file.read_bytes())
            if is_history_document(document):
                history_from_document(document)
                continue
            generation = int(agent_from_document(document).description.split()[1])
        except (DocumentError, ValueError, IndexError) as exc:
            problems.append(f"{file.name}: not a whole document: {exc}")
            continue
        if generation not in allowed:
            problems.append(f"{file.name}: generation {generation}, expected {sorted(allowed)}")
    missing = [n for n in names if not (folder / f"{n}.json").exists()]
    if missing and 0 not in allowed:
        problems.append(f"{len(missing)} agent files missing, e.g. {missing[:3]}")
    return problems
