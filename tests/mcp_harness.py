"""Starting the real ``acti-store serve-mcp`` and connecting the official MCP client to it.

``served(transport, url, ...)`` starts the command (over stdio: as the client's subprocess; over
HTTP: as a process listening on a free loopback port) and yields an initialized
``ClientSession``. The server's stderr goes to a file the caller can read (``Served.log``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parent.parent
SCRIPTED = Path(__file__).parent / "mcp_servers" / "scripted_acti_store.py"
TRANSPORTS = ("stdio", "http")


def acti_store(*args: str) -> list[str]:
    """The installed ``acti-store`` command (the console script next to this Python)."""
    script = Path(sys.executable).parent / "acti-store"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "acti_store"]
    return [*head, *args]


def scripted(*args: str) -> list[str]:
    """``serve-mcp`` with a scripted chat model for ``execute_created_agent``."""
    return [sys.executable, str(SCRIPTED), *args]


def server_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Served:
    """A running server: the client's session, the server's stderr file and its endpoint."""

    session: ClientSession
    log: Path
    url: str | None = None

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def http_process(
    argv: Sequence[str], port: int, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The server listening on 127.0.0.1:``port``; stopped (SIGTERM) on exit."""
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [*argv, "--transport", "http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
            env=env or server_env(),
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"serve-mcp exited {process.returncode}: {log.read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"serve-mcp did not listen: {log.read_text()}")
            time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_client(headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    """An HTTP client as the MCP SDK makes one (making it loads TLS certificates: ~50 ms)."""
    return create_mcp_http_client(headers=headers, timeout=httpx.Timeout(60, read=300))


@contextlib.asynccontextmanager
async def http_session(
    url: str,
    headers: dict[str, str] | None = None,
    client: httpx.AsyncClient | None = None,
    **session_options: Any,
) -> AsyncIterator[ClientSession]:
    """An initialized session over streamable HTTP (through ``client``, else a new one)."""
    client = client or http_client(headers)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write, _),
        ClientSession(read, write, **session_options) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def served(
    transport: str,
    argv: Sequence[str],
    log: Path,
    *,
    env: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    **session_options: Any,
) -> AsyncIterator[Served]:
    """``argv`` (a ``serve-mcp`` command line) served over ``transport``, a client connected."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=argv[0], args=list(argv[1:]), env=env or server_env()
        )
        with log.open("w", encoding="utf-8") as errors:
            async with (
                stdio_client(params, errlog=errors) as (read, write),
                ClientSession(read, write, **session_options) as session,
            ):
                await session.initialize()
                yield Served(session, log)
        return
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with http_process(argv, port, log, env):
        async with http_session(url, headers, None, **session_options) as session:
            yield Served(session, log, url)


#: A bare ``initialize`` request, as any HTTP client would send it.
INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def post_initialize(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A bare ``initialize`` POST (``INITIALIZE``)."""
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx.post(url, json=INITIALIZE, headers={**accept, **(headers or {})}, timeout=30)
