"""No secret leaves the store: database passwords and API keys never appear in ``repo.location``,
tool texts or artifacts, error messages and tracebacks, CLI output, logs, exported files or rows.

Every test plants sentinel values and searches every output for them. (MCP credentials reaching
agent runs are tested with the execution engine, in ``tests/test_execution*.py``.)
"""

from __future__ import annotations

import logging
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import MYSQL_URL, make_config
from langchain_core.messages import AIMessage
from sqlalchemy.engine import make_url

from acti_store import StoreUnavailableError, export_json, import_json, open_repository
from acti_store.cli import main as cli_main
from acti_store.engine import ENV_URL
from acti_store.execution.catalog import McpCatalog
from acti_store.testing import ScriptedChatModel
from acti_store.tools import make_builder_tools

PASSWORD = "Sentinel-Db-Pw-7f3a"
API_KEY = "sk-ant-Sentinel-Api-Key-91c2"
SECRETS = (PASSWORD, API_KEY)


def leaks(*outputs: object) -> list[str]:
    """The outputs (their ``str``) that hold a sentinel."""
    return [str(o)[:300] for o in outputs if any(s in str(o) for s in SECRETS)]


def with_password(url: str) -> str:
    """``url`` carrying ``PASSWORD`` both ways libpq takes one: user password and ``?password=``."""
    parsed = make_url(url).set(password=PASSWORD).update_query_dict({"password": PASSWORD})
    return parsed.render_as_string(hide_password=False)


@contextmanager
def mariadb_user_with_password(url: str) -> Iterator[str]:
    """``url`` as a MariaDB user of its own whose password is ``PASSWORD`` (given both ways, as
    ``with_password`` does), with every privilege on the store's database; dropped afterwards.
    The server's root of the test URL has no password, so a user is made that needs one."""
    assert MYSQL_URL is not None
    user, database = f"acti_pw_{uuid.uuid4().hex[:12]}", make_url(url).database
    admin = sa.create_engine(MYSQL_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY '{PASSWORD}'"))
        conn.execute(sa.text(f"GRANT ALL ON `{database}`.* TO '{user}'@'%'"))
    try:
        yield with_password(make_url(url).set(username=user).render_as_string(hide_password=False))
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP USER IF EXISTS '{user}'@'%'"))
        admin.dispose()


@pytest.fixture
def url_with_password(store_url: str) -> Iterator[str]:
    """The store's URL carrying ``PASSWORD`` (SQLite has none to carry)."""
    backend = make_url(store_url).get_backend_name()
    if backend == "sqlite":
        yield store_url
    elif backend == "mysql":
        with mariadb_user_with_password(store_url) as url:
            yield url
    else:  # The test PostgreSQL trusts local connections, so it ignores the password it is given.
        yield with_password(store_url)


@pytest.fixture(autouse=True)
def secrets_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """API keys a deployment has in its environment; the store must never copy one anywhere."""
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(variable, API_KEY)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every log record of every logger, SQLAlchemy's statements and parameters included."""
    caplog.set_level(logging.DEBUG)
    return caplog


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://acti:{PASSWORD}@db.example.com:5432/agents",
        f"postgresql+psycopg://acti@db.example.com/agents?password={PASSWORD}",
        f"postgresql+psycopg://acti@db.example.com/agents?sslpassword={PASSWORD}&sslmode=require",
        "postgresql+psycopg://acti:Sentinel-Db-Pw-7f3a%40%2F%3A@db.example.com/agents",
    ],
    ids=["user-password", "query-password", "query-sslpassword", "escaped-password"],
)
def test_location_shows_no_password(url: str) -> None:
    repo = open_repository(url, migrate=False)
    try:
        assert leaks(repo.location, repo.location_of("lead_qualifier")) == []
        assert "db.example.com" in repo.location  # still says where the store is
    finally:
        repo.close()


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://acti:{PASSWORD}@127.0.0.1:1/agents",
        f"postgresql+psycopg://acti@127.0.0.1:1/agents?password={PASSWORD}",
        f"postgresql+psycopg://acti:{PASSWORD}@no-such-host.invalid/agents",
    ],
    ids=["refused", "refused-query-password", "unknown-host"],
)
def test_unreachable_store_errors_show_no_password(
    url: str,
    logs: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(StoreUnavailableError) as refused:
        open_repository(url)
    assert "cannot open the store" in str(refused.value)
    # Neither the message, nor any exception of the chain, nor their tracebacks.
    assert leaks(str(refused.value), *traceback.format_exception(refused.value)) == []

    assert cli_main(["migrate", "--url", url]) == 1
    assert cli_main(["list", "--url", url]) == 1
    monkeypatch.setenv(ENV_URL, url)
    assert cli_main(["list"]) == 1
    out, err = capsys.readouterr()
    assert "cannot open the store" in err
    assert leaks(out, err, logs.text) == []


def run_every_tool(repo: Any) -> list[Any]:
    """Call the ten builder tools with valid arguments; return each text and artifact."""
    tools = {
        tool.name: tool
        for tool in make_builder_tools(
            repo,
            model=ScriptedChatModel(script=[AIMessage("Qualified: HIGH priority.")], loop=True),
            mcp_catalog=McpCatalog({}),
        )
    }
    config = make_config("secret_keeper", tools=[]).model_dump()
    # Each call and whether it must fail: only the lookup of a missing agent does.
    calls: list[tuple[str, dict[str, Any], bool]] = [
        ("create_agent_config", config, False),
        ("get_agent_config", {"name": "secret_keeper"}, False),
        ("update_agent_config", {"name": "secret_keeper", "tags": ["secure"]}, False),
        ("clone_agent_config", {"source_name": "secret_keeper", "new_name": "secret_copy"}, False),
        ("list_available_tools", {}, False),
        ("list_created_agents", {}, False),
        ("search_agents", {"query": "secret"}, False),
        ("execute_created_agent", {"agent_name": "secret_keeper", "task": "Qualify Acme"}, False),
        ("get_agent_history", {"name": "secret_keeper"}, False),
        ("delete_agent_config", {"name": "secret_copy", "confirm": True}, False),
        ("get_agent_config", {"name": "no_such_agent"}, True),
    ]
    outputs = []
    for name, arguments, fails in calls:
        message = tools[name].invoke(
            {"type": "tool_call", "name": name, "args": arguments, "id": "1"}
        )
        assert message.content.startswith("ERROR") == fails, message
        assert message.artifact["status"] == ("error" if fails else "success"), message
        outputs += [message.content, message.artifact]
    return outputs


def test_a_working_store_keeps_passwords_and_keys_out_of_every_output(
    url_with_password: str,
    tmp_path: Path,
    logs: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = url_with_password
    export, mirror = tmp_path / "export", tmp_path / "mirror"
    repo = open_repository(url, export_dir=mirror)
    try:
        outputs = [repo.location, *run_every_tool(repo)]
        outputs.append(export_json(repo, export))
        outputs.append(import_json(repo, export, on_conflict="replace"))
        for command in (["list"], ["show", "secret_keeper"], ["history", "secret_keeper"]):
            assert cli_main([*command, "--url", url]) == 0
        with repo.engine.connect() as conn:
            quote = conn.dialect.identifier_preparer.quote_identifier
            for table in ("agents", "agent_tags", "executions", "acti_store_alembic_version"):
                outputs += conn.execute(sa.text(f"SELECT * FROM {quote(table)}")).all()
    finally:
        repo.close()
    files = [p.read_text(encoding="utf-8") for p in tmp_path.rglob("*.json")]
    assert len(files) >= 4  # both folders hold the agent and its history

    assert logs.records  # the capture works: migrations and the engine log at DEBUG
    assert leaks(*outputs, *files, *capsys.readouterr(), logs.text) == []
