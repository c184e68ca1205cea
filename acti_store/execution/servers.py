"""MCP servers: started in parallel, one session each, held by its own task for the whole run.

Each session is opened and closed by the task that holds it, so the MCP SDK's cancel scopes stay
in the task that opened them. A server that fails to start is reported with the tail of its stderr.
Servers over stdio are started off the event loop (``stdio``); HTTP clients share one TLS context,
made in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Final, TextIO, cast

import httpx
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.sessions import Connection, create_session
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.shared._httpx_utils import (
    MCP_DEFAULT_SSE_READ_TIMEOUT,
    MCP_DEFAULT_TIMEOUT,
    McpHttpClientFactory,
)

from .results import describe_error
from .stdio import stdio_streams

logger = logging.getLogger(__name__)

#: How long stopping the servers may take before their tasks are cancelled.
SHUTDOWN_GRACE: Final = 5.0
#: How many characters of a server's stderr an MCP error text quotes.
STDERR_TAIL: Final = 300


#: The transports whose client is an ``httpx.AsyncClient`` made by ``httpx_client_factory``.
HTTP_TRANSPORTS: Final = frozenset({"sse", "streamable_http", "streamable-http", "http"})


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CA bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``),
    made once: loading the CA bundle takes tens of milliseconds without letting go of the GIL,
    which every new ``httpx.AsyncClient`` would otherwise spend on the event loop."""
    global _tls
    with _tls_lock:  # once, even when many servers connect at the same moment
        if _tls is None:
            _tls = httpx.create_ssl_context()
        return _tls


# Now, with the imports (an HTTP server's first connection would wait for it otherwise); a
# broken certificate setting is reported by the first connection that needs it.
with contextlib.suppress(Exception):
    _tls_context()


def _http_client_factory(tls: ssl.SSLContext) -> McpHttpClientFactory:
    """The MCP SDK's client factory (same timeouts), on a TLS context made beforehand."""

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        if timeout is None:
            timeout = httpx.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        return httpx.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=tls)

    return factory


#: What starting servers gives: the tools of each server that answered, the error of the others.
Started = tuple[dict[str, list[BaseTool]], dict[str, BaseException]]


class ServerFailed(Exception):
    """An MCP server could not be connected to; the message says why (scrub before showing)."""


@asynccontextmanager
async def open_session(connection: Mapping[str, Any], errlog: TextIO) -> AsyncIterator[Any]:
    """An initialised MCP ``ClientSession``. A stdio server's stderr goes to ``errlog``."""
    if connection["transport"] == "stdio":
        params = StdioServerParameters(
            command=connection["command"],
            args=list(connection.get("args", [])),
            env=connection.get("env"),
            cwd=connection.get("cwd"),
            encoding=connection.get("encoding", "utf-8"),
            encoding_error_handler=connection.get("encoding_error_handler", "strict"),
        )
        async with (
            stdio_streams(params, errlog) as (read, write),
            ClientSession(read, write, **(connection.get("session_kwargs") or {})) as session,
        ):
            await session.initialize()
            yield session
    else:
        connection = dict(connection)
        if connection["transport"] in HTTP_TRANSPORTS and not connection.get(
            "httpx_client_factory"
        ):
            tls = await asyncio.to_thread(_tls_context)
            connection["httpx_client_factory"] = _http_client_factory(tls)
        async with create_session(cast(Connection, connection)) as session:
            await session.initialize()
            yield session


def stderr_tail(errlog: TextIO) -> str:
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    tail = " | ".join(lines[-5:])
    return tail if len(tail) <= STDERR_TAIL else "..." + tail[-STDERR_TAIL:]


class ServerPool:
    """Starts MCP servers in parallel; each session lives in its own task until ``close``."""

    def __init__(self) -> None:
        self._closing = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ServerPool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self, connections: Mapping[str, Mapping[str, Any]], timeout: float) -> Started:
        """Connect to every server within ``timeout`` seconds.

        Returns the tools of each server that answered, and for the others the error:
        ``ServerFailed`` (it failed to start) or ``TimeoutError`` (it did not answer in time).
        """
        if self._tasks:
            raise RuntimeError("a ServerPool starts its servers once")
        loop = asyncio.get_running_loop()
        ready: dict[str, asyncio.Future[list[BaseTool]]] = {}
        for name, connection in connections.items():
            ready[name] = loop.create_future()
            self._tasks.append(asyncio.create_task(self._hold(name, connection, ready[name])))
        if ready:
            await asyncio.wait(ready.values(), timeout=timeout)
        tools: dict[str, list[BaseTool]] = {}
        errors: dict[str, BaseException] = {}
        for (name, future), task in zip(ready.items(), self._tasks, strict=True):
            if not future.done():
                future.cancel()
                task.cancel()  # stuck connecting: stop it now, not at close
                errors[name] = TimeoutError(f"no answer within {timeout:.1f}s")
            elif (error := future.exception()) is not None:
                errors[name] = error
            else:
                tools[name] = future.result()
        return tools, errors

    async def _hold(
        self, name: str, connection: Mapping[str, Any], ready: asyncio.Future[list[BaseTool]]
    ) -> None:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with open_session(connection, errlog) as session:
                    ready.set_result(await load_mcp_tools(session, server_name=name))
                    await self._closing.wait()
            except Exception as exc:
                message = describe_error(exc)
                tail = stderr_tail(errlog)
                if tail:
                    message = f"{message} - {tail}"
                if not ready.done():
                    ready.set_exception(ServerFailed(message))
                else:
                    logger.debug("MCP server %r stopped with an error", name)

    async def close(self) -> None:
        """Stop every server: close the sessions, then cancel what did not stop in time."""
        self._closing.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=SHUTDOWN_GRACE)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


@asynccontextmanager
async def started(
    connections: Mapping[str, Mapping[str, Any]], timeout: float
) -> AsyncIterator[Started]:
    """The servers of one run (``ServerPool.start``), stopped when the block is left."""
    async with ServerPool() as pool:
        yield await pool.start(connections, timeout)
