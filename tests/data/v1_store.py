"""A store as acti_store 1.x left it: revision 0001_v1 and two agents in the v1 table (string
version, no tags, no counters). The schema upgrade tests start from it."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command

from acti_store.engine import alembic_config

V1_ROWS = [
    {
        "name": "lead_qualifier",
        "description": "Qualifies inbound leads by assessing BANT criteria",
        "system_prompt": "You are a professional lead qualification specialist. Assess budget, "
        "authority, need and timeline.",
        "tools": ["communication", "crm"],
        "model": "anthropic:claude-opus-4-5-20251101",
        "stratum": "RAI",
        "created_at": datetime(2025, 1, 9, 14, 30, 22, 123456, tzinfo=UTC),
        "version": "1.0.0",
        "builder": "acti-agent-builder",
    },
    {
        "name": "web_researcher",
        "description": "Researches topics on the web — naïve ünïcode 日本, 100% _literal_",
        "system_prompt": "You are a research assistant. Search the web and cite every source "
        "you use in the answer.",
        "tools": ["websearch"],
        "model": "openai:gpt-4o",
        "stratum": None,
        "created_at": datetime(2024, 12, 31, 23, 59, 59, tzinfo=UTC),
        "version": "1.2.3",
        "builder": "acti-agent-builder",
    },
]


def create_v1_store(url: str) -> None:
    """Bring the store at ``url`` to revision 0001_v1 and put ``V1_ROWS`` in it."""
    command.upgrade(alembic_config(sa.make_url(url)), "0001_v1")
    v1_agents = sa.table(
        "agents",
        *(sa.column(c) for c in ("name", "description", "system_prompt", "model", "stratum")),
        sa.column("version"),
        sa.column("builder"),
        sa.column("tools", sa.JSON()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    rows = [dict(row) for row in V1_ROWS]
    engine = sa.create_engine(url)
    try:
        if engine.dialect.name == "sqlite":  # v1 on SQLite kept naive UTC
            for row in rows:
                row["created_at"] = row["created_at"].replace(tzinfo=None)
        with engine.begin() as conn:
            conn.execute(sa.insert(v1_agents), rows)
    finally:
        engine.dispose()
