"""``serve-mcp --tokens FILE`` rotates tokens without a restart (issue 49, item 3).

The real command in its own process, the official MCP client (and bare HTTP where a session's
end is watched) on a store with two tenants. The file is edited while clients are connected: a
token kept keeps its session (the same id), a removed token is refused and its session ends,
a token whose grant turned read-only gets a new session that only reads, a token of a tenant
the server did not serve yet works; a broken file is refused in one line, the tokens in use
kept; SIGHUP and a change of the file each reload it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from conftest import make_config
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp_harness import (
    INITIALIZE,
    acti_store,
    free_port,
    http_client,
    http_process,
    server_env,
)

from acti_store import open_repository
from acti_store.mcp_server.defaults import ENV_TOKEN

# each test starts serve-mcp in a process,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

KEEP = "keep-sentinel-token-7d21c0a9e4f3"
DROP = "drop-sentinel-token-1b8e6f3c2a90"
TURN = "turn-sentinel-token-5e0c4d7a9b12"
NEW = "new-sentinel-token-c3f98a1e6d04"
TOKENS = (KEEP, DROP, TURN, NEW)
BEFORE = {
    KEEP: {"tenant": "acme", "read_only": False},
    DROP: {"tenant": "acme", "read_only": False},
    TURN: {"tenant": "globex", "read_only": False},
}
AFTER = {
    KEEP: {"tenant": "acme", "read_only": False},
    TURN: {"tenant": "globex", "read_only": True},
    NEW: {"tenant": "initech", "read_only": False},
}
PROMPT = "You help Initech's staff file their TPS reports, one report at a time."
ACCEPT = {"Accept": "application/json, text/event-stream"}
#: How long a reload may take to be logged: a poll (1 s) and a store opened on a loaded machine.
RELOAD_WAIT = 60.0


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def write_tokens(path: Path, document: Any) -> None:
    """``document`` as the token file (JSON unless bytes), readable by its owner only."""
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    path.write_bytes(raw)
    path.chmod(0o600)


@dataclass
class Server:
    url: str
    tokens: Path
    log: Path
    process: subprocess.Popen[bytes]

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()

    def reload_lines(self) -> list[str]:
        return [
            line
            for line in self.lines()
            if line.startswith(("acti-store: reloaded", "acti-store: kept the"))
        ]

    async def next_reload(self, seen: int) -> str:
        """The reload line after the first ``seen`` ones, once the server wrote it."""
        with anyio.fail_after(RELOAD_WAIT):
            while len(lines := self.reload_lines()) <= seen:
                assert self.process.poll() is None, "\n".join(self.lines())
                await anyio.sleep(0.05)
        return lines[seen]

    async def hang_up(self) -> str:
        """SIGHUP, and the reload line it made."""
        seen = len(self.reload_lines())
        self.process.send_signal(signal.SIGHUP)
        return await self.next_reload(seen)


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[Server]:
    """``serve-mcp --tokens`` on loopback over a store where acme and globex have an agent."""
    for tenant in ("acme", "globex"):
        with closing(open_repository(store_url, tenant=tenant)) as repo:
            repo.create(make_config(f"{tenant}_agent"))
    tokens, log = tmp_path / "tokens.json", tmp_path / "server.log"
    write_tokens(tokens, BEFORE)
    port = free_port()
    env = server_env()
    env.pop(ENV_TOKEN, None)
    argv = acti_store("serve-mcp", "--url", store_url, "--tokens", str(tokens))
    with http_process(argv, port, log, env) as process:
        yield Server(f"http://127.0.0.1:{port}/mcp", tokens, log, process)


async def bare_session(client: httpx.AsyncClient, url: str, token: str) -> str:
    """A session opened over bare HTTP (initialize, then initialized): its id."""
    opened = await client.post(url, json=INITIALIZE, headers={**ACCEPT, **auth(token)})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**ACCEPT, **auth(token), "mcp-session-id": session}
    assert (await client.post(url, json=initialized, headers=headers)).status_code == 202
    return session


async def stream_until_closed(
    client: httpx.AsyncClient, url: str, token: str, session: str, ended: anyio.Event
) -> None:
    """The session's server-to-client stream (GET), read until the server closes it."""
    headers = {"Accept": "text/event-stream", **auth(token), "mcp-session-id": session}
    async with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        async for _ in response.aiter_bytes():
            pass
    ended.set()


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def test_a_reload_keeps_kept_tokens_sessions_and_ends_removed_ones(
    server: Server, store_url: str
) -> None:
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    ended = {DROP: anyio.Event(), TURN: anyio.Event()}
    keeper_ids: list[str | None] = []
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=None)) as bare,
        http_client(auth(KEEP)) as keeper_http,
        streamable_http_client(server.url, http_client=keeper_http) as (read, write, session_id),
        ClientSession(read, write) as keeper,
        anyio.create_task_group() as streams,
    ):
        await keeper.initialize()
        keeper_ids.append(session_id())
        sessions = {token: await bare_session(bare, server.url, token) for token in ended}
        for token, session in sessions.items():
            streams.start_soon(stream_until_closed, bare, server.url, token, session, ended[token])
        await anyio.sleep(0.5)  # the streams are open
        assert not any(event.is_set() for event in ended.values())

        write_tokens(server.tokens, AFTER)
        reloaded = await server.hang_up()  # (or the poll saw the change first: the same reload)
        with anyio.fail_after(10):  # the removed tokens' sessions end with the reload
            for event in ended.values():
                await event.wait()

        kept = await keeper.call_tool("list_created_agents", {})
        keeper_ids.append(session_id())
        dropped = await bare.post(
            server.url,
            json=listing,
            headers={**ACCEPT, **auth(DROP), "mcp-session-id": sessions[DROP]},
        )
        turned_old = await bare.post(
            server.url,
            json=listing,
            headers={**ACCEPT, **auth(TURN), "mcp-session-id": sessions[TURN]},
        )
        async with (
            http_client(auth(TURN)) as turn_http,
            streamable_http_client(server.url, http_client=turn_http) as (r, w, _),
            ClientSession(r, w) as turned,
        ):
            await turned.initialize()
            turned_tools = [t.name for t in (await turned.list_tools()).tools]
            with pytest.raises(McpError) as refused:
                await turned.call_tool(
                    "create_agent_config",
                    {"name": "globex_new", "description": "Not made", "system_prompt": PROMPT},
                )
        async with (
            http_client(auth(NEW)) as new_http,
            streamable_http_client(server.url, http_client=new_http) as (r, w, _),
            ClientSession(r, w) as newcomer,
        ):
            await newcomer.initialize()
            created = await newcomer.call_tool(
                "create_agent_config",
                {
                    "name": "tps_reporter",
                    "description": "Files TPS reports",
                    "system_prompt": PROMPT,
                },
            )

    assert reloaded.startswith(f"acti-store: reloaded {server.tokens} (")
    assert reloaded.endswith("3 tokens, 2 added, 2 removed (their sessions ended), 1 kept")
    assert not kept.isError and "acme_agent" in text_of(kept)
    assert keeper_ids[0] is not None and keeper_ids == [keeper_ids[0]] * 2  # the same session
    assert dropped.status_code == 401
    assert turned_old.status_code == 404  # the token still gets in; its old session is gone
    assert "create_agent_config" not in turned_tools and "get_agent_config" in turned_tools
    assert refused.value.error.message.startswith(
        "Tool 'create_agent_config' writes, and this session is read-only (its token is read-only"
    )
    assert not created.isError, text_of(created)
    with closing(open_repository(store_url, tenant="initech")) as initech:
        assert initech.list_names() == ["tps_reporter"]
    with closing(open_repository(store_url, tenant="globex")) as globex:
        assert globex.list_names() == ["globex_agent"]
    text = "\n".join(server.lines())
    assert all(token not in text for token in TOKENS) and "Traceback" not in text


async def test_a_broken_file_is_refused_in_one_line_and_the_tokens_in_use_kept(
    server: Server,
) -> None:
    async with (
        http_client(auth(KEEP)) as keeper_http,
        streamable_http_client(server.url, http_client=keeper_http) as (read, write, session_id),
        ClientSession(read, write) as keeper,
    ):
        await keeper.initialize()
        opened = session_id()
        broken = b'{"' + NEW.encode() + b'": {"tenant": '
        write_tokens(server.tokens, broken)
        refused = await server.hang_up()
        await anyio.sleep(2.5)  # the poll does not refuse the same file again
        after_refusal = server.reload_lines()
        still = await keeper.call_tool("get_agent_config", {"name": "acme_agent"})
        hangup = await server.hang_up()  # unchanged: read again all the same, the process lives
        same = session_id()
    outsider = httpx.post(server.url, json=INITIALIZE, headers={**ACCEPT, **auth(NEW)})

    column = len(broken) + 1  # where the value is missing
    assert refused.startswith("acti-store: kept the 3 tokens in use (")  # SIGHUP, or the poll
    assert refused.endswith(
        f"{server.tokens} is not JSON: Expecting value (line 1, column {column})"
    )
    assert after_refusal == [refused]
    assert not still.isError and opened == same
    assert hangup.startswith("acti-store: kept the 3 tokens in use (SIGHUP): ")  # still broken
    assert outsider.status_code == 401
    assert server.process.poll() is None


async def test_an_edited_file_is_reloaded_without_a_signal(server: Server) -> None:
    before = len(server.reload_lines())
    write_tokens(server.tokens, AFTER)
    started = time.monotonic()
    reloaded = await server.next_reload(before)
    took = time.monotonic() - started
    answers = {
        token: httpx.post(server.url, json=INITIALIZE, headers={**ACCEPT, **auth(token)})
        for token in TOKENS
    }

    assert reloaded == (
        f"acti-store: reloaded {server.tokens} (the file changed): 3 tokens, 2 added, 2 removed "
        "(their sessions ended), 1 kept"
    )
    assert took < RELOAD_WAIT
    assert {t: a.status_code for t, a in answers.items()} == {
        KEEP: 200,
        DROP: 401,
        TURN: 200,
        NEW: 200,
    }
