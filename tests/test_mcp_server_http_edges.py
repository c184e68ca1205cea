"""``serve-mcp --transport http`` at its edges: OAuth discovery, clients that go away, bodies
that are not JSON. The server is the real command in its own process; its log is read after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import types
from mcp.server.streamable_http import EventMessage
from mcp_harness import INITIALIZE, acti_store, free_port, http_process, http_session, server_env

from acti_store.mcp_server.defaults import ENV_TOKEN
from acti_store.mcp_server.events import RecentEvents

# each test starts serve-mcp in a process,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]

TOKEN = "sentinel-edges-token-5e1f"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON_POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass
class Server:
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def server(store_url: str, tmp_path: Path) -> Iterator[Server]:
    """serve-mcp over HTTP on loopback, with a bearer token."""
    port = free_port()
    log = tmp_path / "server.log"
    argv = acti_store("serve-mcp", "--url", store_url)
    with http_process(argv, port, log, server_env(**{ENV_TOKEN: TOKEN})):
        yield Server(f"http://127.0.0.1:{port}/mcp", log)


def settle(server: Server, seconds: float = 1.0) -> str:
    """The server's log once what it does after a request (tasks ending) had time to happen."""
    time.sleep(seconds)
    return server.log_text()


async def test_oauth_discovery_is_not_found(server: Server) -> None:
    base = server.url.removesuffix("/mcp")
    paths = [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
    ]
    async with httpx.AsyncClient(timeout=30) as client:
        found = [await client.get(base + path) for path in paths]
        found += [await client.get(base + paths[0], headers=AUTH)]
        bare = await client.post(server.url, json={}, headers=JSON_POST)

    assert [r.status_code for r in found] == [404] * 4
    assert all("WWW-Authenticate" not in r.headers for r in found)
    assert bare.status_code == 401  # the endpoint itself still needs the token


#: An ``Authorization`` header and the status it gets: the scheme's name in any case passes.
SCHEMES: dict[str, int] = {
    f"bearer {TOKEN}": 200,
    f"BEARER {TOKEN}": 200,
    f"bEaReR {TOKEN}": 200,
    f"Bearer   {TOKEN}": 200,  # 1*SP between the scheme and its token
    f"Basic {TOKEN}": 401,
    f"Bearer{TOKEN}": 401,
    "Bearer": 401,
    f"Bearer {TOKEN.upper()}": 401,  # the token itself is compared exactly
}


def test_the_bearer_scheme_is_named_in_any_case(server: Server) -> None:
    """RFC 9110 section 11.1: the scheme's name is case-insensitive; the token is not."""
    answers = {
        header: httpx.post(
            server.url, json=INITIALIZE, headers={**JSON_POST, "Authorization": header}, timeout=30
        ).status_code
        for header in SCHEMES
    }
    assert answers == SCHEMES


async def test_a_client_that_goes_away_leaves_no_traceback(server: Server) -> None:
    async with http_session(server.url, AUTH) as session:  # ends with DELETE
        assert (await session.list_tools()).tools
    # A stream opened by hand and dropped without a word.
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as client:
        init = await client.post(server.url, headers=JSON_POST, json=INITIALIZE)
        session_id = init.headers["mcp-session-id"]
        headers = {"mcp-session-id": session_id, "Accept": "text/event-stream"}
        async with client.stream("GET", server.url, headers=headers) as stream:
            assert stream.status_code == 200
        await client.delete(server.url, headers={"mcp-session-id": session_id})

    log = settle(server)
    assert "Traceback" not in log and "Error in standalone SSE writer" not in log, log


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"\xff\xfe{", "the body is not UTF-8"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\xc3\x28"}', "the body is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "the JSON is nested too deeply"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "the JSON is nested too deeply"),
    ],
    ids=["utf16-bom", "bad-utf8", "deep-array", "deep-object"],
)
async def test_an_unparsable_body_is_a_parse_error(server: Server, body: bytes, why: str) -> None:
    async with httpx.AsyncClient(timeout=60, headers={**AUTH, **JSON_POST}) as client:
        answer = await client.post(server.url, content=body)
        plain = await client.post(server.url, content=b"{")  # the SDK's own parse error

    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": f"Parse error: {why}"},
    }
    assert plain.status_code == 400 and plain.json()["error"]["code"] == -32700
    async with http_session(server.url, AUTH) as session:  # the server serves on
        assert len((await session.list_tools()).tools) == 10
    log = settle(server, 0.5)
    assert "Traceback" not in log, log


def sse_events(text: str) -> list[dict[str, str]]:
    """The events of an SSE body, each as its fields."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(
            line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
            for line in block.split("\n")
            if line
        )
        if fields:
            events.append(fields)
    return events


async def test_streams_start_with_a_priming_event_and_resume(server: Server) -> None:
    headers = {**AUTH, **JSON_POST}
    async with httpx.AsyncClient(timeout=30, headers=headers) as client:
        init = await client.post(
            server.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "1"},
                },
            },
        )
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = "2025-11-25"
        await client.post(
            server.url,
            headers=session,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        ping = await client.post(
            server.url, headers=session, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}
        )
        priming, answer = sse_events(ping.text)
        # The client lost the answer: it reconnects with the priming event's id and gets it
        # again (the stream then stays open for what comes next: read until the answer).
        resume = {**session, "Accept": "text/event-stream", "Last-Event-ID": priming["id"]}
        replayed = ""
        with anyio.fail_after(30):
            async with client.stream("GET", server.url, headers=resume) as stream:
                async for line in stream.aiter_lines():
                    replayed += line + "\n"
                    if line.startswith("data: {"):
                        break

    assert priming["data"] == "" and priming["retry"] == "1000" and priming["id"]
    assert answer["data"] == '{"jsonrpc":"2.0","id":2,"result":{}}'
    (event,) = [e for e in sse_events(replayed) if e.get("data")]
    assert event["id"] == answer["id"] and event["data"] == answer["data"]


async def test_recent_events_are_bounded_and_kept_per_stream() -> None:
    store = RecentEvents(max_events=3)
    message = types.JSONRPCMessage(types.JSONRPCNotification(jsonrpc="2.0", method="m"))
    first = await store.store_event("a", None)
    other = await store.store_event("b", message)
    mine = await store.store_event("a", message)
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await store.replay_events_after(first, send) == "a"
    assert [e.event_id for e in sent] == [mine]  # not stream b's
    assert await store.replay_events_after("never-given", send) is None
    await store.store_event("a", message)  # a fourth: the first is dropped
    assert await store.replay_events_after(first, send) is None
    assert other != mine and len({first, other, mine}) == 3
