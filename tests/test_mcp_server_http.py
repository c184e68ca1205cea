"""``serve-mcp --transport http``: loopback by default, a bearer token anywhere else.

The server is the real command in its own process. Binding to 0.0.0.0 (every address) is the
non-loopback case; the test's requests still go to 127.0.0.1 only.
"""

from __future__ import annotations

import subprocess
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from mcp_harness import (
    acti_store,
    free_port,
    http_process,
    http_session,
    post_initialize,
    server_env,
)

from acti_store import open_repository
from acti_store.mcp_server import texts
from acti_store.mcp_server.defaults import ENV_TOKEN

TOKEN = "sentinel-mcp-bearer-7d41c0"
CREATE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "create_agent_config",
        "arguments": {
            "name": "sneaky_agent",
            "description": "Created without the token",
            "system_prompt": "You should never be created: the request had no bearer token.",
        },
    },
}

# each test starts serve-mcp (or runs agents) in processes,
# each on a store at head (the migrations are tested on their own)
pytestmark = [pytest.mark.slow, pytest.mark.store_at_head]


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        acti_store(*args), env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_off_loopback_without_a_token_refuses_to_start(store_url: str) -> None:
    env = server_env()
    env.pop(ENV_TOKEN, None)
    serve = ["serve-mcp", "--url", store_url, "--transport", "http", "--host", "0.0.0.0"]

    done = run(*serve, "--port", str(free_port()), env=env)
    named = run(*serve, "--port", str(free_port()), "--token-env", "MY_MCP_TOKEN", env=env)

    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "error: " + texts.NEEDS_TOKEN.format(
        host="0.0.0.0", variable=ENV_TOKEN
    )
    assert named.returncode == 1
    assert named.stderr.strip() == "error: " + texts.TOKEN_UNSET.format(variable="MY_MCP_TOKEN")


@pytest.mark.parametrize("variable", [ENV_TOKEN, "MY_MCP_TOKEN"])
async def test_off_loopback_every_request_needs_the_token(
    store_url: str, tmp_path: Path, variable: str
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = acti_store("serve-mcp", "--url", store_url, "--host", "0.0.0.0")
    if variable != ENV_TOKEN:
        argv += ["--token-env", variable]
    log = tmp_path / "server.log"
    with http_process(argv, port, log, server_env(**{variable: TOKEN})):
        bare = post_initialize(url)
        wrong = post_initialize(url, {"Authorization": "Bearer not-the-token"})
        sneaky = httpx.post(url, json=CREATE, timeout=30)
        async with http_session(url, {"Authorization": f"Bearer {TOKEN}"}) as session:
            tools = (await session.list_tools()).tools
            created = await session.call_tool(
                "create_agent_config",
                {**CREATE["params"]["arguments"], "name": "real_agent"},  # type: ignore[index]
            )
            texts_seen = [c.text for c in created.content if hasattr(c, "text")]
            listing = await session.call_tool("list_created_agents", {})
            texts_seen += [c.text for c in listing.content if hasattr(c, "text")]

    for response in (bare, wrong, sneaky):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert TOKEN not in response.text
    assert len(tools) == 10 and not created.isError
    with closing(open_repository(store_url)) as repo:
        assert [a.name for a in repo.list_agents()] == ["real_agent"]  # the 401 touched nothing
    assert all(TOKEN not in text for text in texts_seen)
    assert TOKEN not in log.read_text(encoding="utf-8", errors="replace")


async def test_loopback_refuses_another_host_header(store_url: str, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = server_env()
    env.pop(ENV_TOKEN, None)
    with http_process(acti_store("serve-mcp", "--url", store_url), port, tmp_path / "log", env):
        rebound = post_initialize(url, {"Host": "attacker.example"})
        local = post_initialize(url)
    assert rebound.status_code == 421
    assert local.status_code == 200


async def test_a_token_on_loopback_is_required_too(store_url: str, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = acti_store("serve-mcp", "--url", store_url)
    with http_process(argv, port, tmp_path / "log", server_env(**{ENV_TOKEN: TOKEN})):
        bare = post_initialize(url)
        good = post_initialize(url, {"Authorization": f"Bearer {TOKEN}"})
    assert bare.status_code == 401 and good.status_code == 200
