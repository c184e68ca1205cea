"""Warm MCP sessions: kept open after a run and shared by the runs that need the same server.

A long-lived ``AgentRunner`` (``keep_servers=``) takes its servers from this pool instead of
starting them per run. A session is keyed by its tool category and a fingerprint of the resolved
connection and of the category's own variables: two runs share a session only when the server
would have been started exactly alike. A server therefore only ever holds the credentials it was
started with, and two credential sets never share one. The fingerprint is an HMAC under a key
made per process: it tells nothing about the values, and only its first characters are shown.

One session per key carries the requests of every run at once: MCP multiplexes requests over a
session and the SDK's server handles each in a task of its own. Measured with the test CRM
server: 20 concurrent calls of a 0.5 s tool through one session take 0.57 s in all, and 100 quick
calls take as long through one session as spread over three; a pool of sessions per server would
only start more processes.

A server's life:

- the first run that needs it starts it; runs that arrive meanwhile wait for the same start (20
  concurrent runs start it once). A start nobody waits for any more (each waiter's connect
  timeout ran out) is cancelled, which stops a hanging server as a one-shot run does;
- each run leases it while it runs, and pings it first: a server that died (killed process,
  closed stream) or does not answer is dropped and started again, once, within that run's
  connect timeout;
- it is closed ``keep`` seconds after its last run let go, when the pool closes, or (one that was
  dropped) as soon as its last run lets go. A runner left open at interpreter exit has its
  servers stopped then, with an ``UnclosedRunnerWarning``.

Everything happens on the runs' loop (``background``); each session is held by a task of its own,
as in ``servers``, so that the MCP SDK's cancel scopes stay in the task that opened them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import warnings
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Self, TextIO

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.tools import load_mcp_tools

from ..errors import AgentStoreError
from .background import EXIT_GRACE, in_background, wait_in_background
from .results import describe_error
from .servers import SHUTDOWN_GRACE, ServerFailed, Started, open_session, stderr_tail

logger = logging.getLogger(__name__)

#: The longest a warm session's ping may take (also at most half the run's connect time left).
PING_TIMEOUT: Final = 5.0
#: How many hexadecimal digits of a fingerprint logs and reprs show.
FINGERPRINT_SHOWN: Final = 12

_FINGERPRINT_KEY: Final = secrets.token_bytes(32)


class RunnerClosedError(AgentStoreError, RuntimeError):
    """The runner was closed (``aclose``, ``close``, or its ``async with`` block ended)."""

    def __init__(self) -> None:
        super().__init__(
            "this AgentRunner is closed: its MCP servers are stopped and it runs nothing more; "
            "make a new one"
        )


class UnclosedRunnerWarning(RuntimeWarning):
    """A runner keeping servers warm was never closed: its servers were stopped at exit."""


def _opaque(value: object) -> str:
    """What a fingerprint takes of a value JSON cannot hold (an HTTP client factory): which
    object it is."""
    return f"<{type(value).__qualname__} at {id(value):#x}>"


@dataclass(frozen=True)
class SessionKey:
    """Which server a session is: a tool category and the fingerprint of how it was started."""

    category: str
    fingerprint: str = field(repr=False)

    def __str__(self) -> str:
        return f"{self.category}@{self.fingerprint[:FINGERPRINT_SHOWN]}"

    def __repr__(self) -> str:
        return f"SessionKey({self.category!r}, {self.fingerprint[:FINGERPRINT_SHOWN]}...)"


def session_key(
    category: str, connection: Mapping[str, Any], variables: Mapping[str, str]
) -> SessionKey:
    """The key of the server of ``category`` started with ``connection`` (resolved) and the
    category's own ``variables``."""
    document = json.dumps(
        {"connection": connection, "variables": variables}, sort_keys=True, default=_opaque
    )
    digest = hmac.new(
        _FINGERPRINT_KEY, document.encode("utf-8", "surrogatepass"), hashlib.sha256
    ).hexdigest()
    return SessionKey(category, digest)


class _Server:
    """One warm server: its session, held by a task of its own, and how many runs lease it."""

    def __init__(self, key: SessionKey, connection: Mapping[str, Any]) -> None:
        self.key = key
        self.ready: asyncio.Future[list[BaseTool]] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
        self.leases = 0
        self.retired = False
        self.idle: asyncio.TimerHandle | None = None
        self._session: Any = None
        self._errlog: TextIO | None = None
        self._closing = asyncio.Event()
        self.task = asyncio.create_task(self._hold(connection), name=f"mcp-server {key}")

    @property
    def usable(self) -> bool:
        return self.ready.done() and not self.ready.cancelled() and self.ready.exception() is None

    async def _hold(self, connection: Mapping[str, Any]) -> None:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            self._errlog = errlog
            try:
                async with open_session(connection, errlog) as session:
                    tools = await load_mcp_tools(session, server_name=self.key.category)
                    self._session = session
                    self.ready.set_result(tools)
                    await self._closing.wait()
            except Exception as exc:
                message = describe_error(exc)
                if tail := stderr_tail(errlog):
                    message = f"{message} - {tail}"
                if not self.ready.done():
                    self.ready.set_exception(ServerFailed(message))
                else:
                    logger.debug("MCP server %s stopped with an error", self.key)
            finally:
                self._session = None
                self._errlog = None
                if not self.ready.done():
                    self.ready.cancel()

    async def alive(self, timeout: float) -> bool:
        """Whether the server answers a ping within ``timeout`` seconds."""
        session = self._session
        if session is None or self.task.done():
            return False
        try:
            async with asyncio.timeout(timeout):
                await session.send_ping()
        except Exception:  # closed streams, "Connection closed", no answer in time
            return False
        return True

    def forget_stderr(self) -> None:
        """Empty the file collecting the server's stderr (only a failed start quotes it), so
        that a talkative server kept for days does not fill the disk."""
        if self._errlog is not None:
            with contextlib.suppress(OSError, ValueError):
                self._errlog.seek(0)
                self._errlog.truncate()

    def close(self) -> None:
        """Stop the server: its start is cancelled, or its session closed."""
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        if self.ready.done():
            self._closing.set()
        else:
            self.task.cancel()


#: Pools with servers that may still run: stopped at interpreter exit (with a warning).
_OPEN: weakref.WeakSet[WarmPool] = weakref.WeakSet()


class WarmPool:
    """Warm MCP sessions by ``SessionKey``, each closed ``keep`` seconds after its last use."""

    def __init__(self, keep: float) -> None:
        self._keep = keep
        self._servers: dict[SessionKey, _Server] = {}
        self._all: set[_Server] = set()  # every server still running, dropped ones included
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = os.getpid()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._all)} server(s)"
        return f"WarmPool(keep={self._keep}, {state}, {sorted(map(str, self._servers))})"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def keys(self) -> list[SessionKey]:
        """The keys of the servers runs can use now (not those being stopped)."""
        return list(self._servers)

    def _on_loop(self) -> asyncio.AbstractEventLoop:
        if self._closed:
            raise RunnerClosedError()
        loop = asyncio.get_running_loop()
        if self._pid != os.getpid():  # a forked child: the parent's servers are not ours
            self._servers, self._all, self._loop, self._pid = {}, set(), None, os.getpid()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("a WarmPool is used from the runs' loop only")
        return loop

    @asynccontextmanager
    async def lease(
        self,
        connections: Mapping[str, Mapping[str, Any]],
        timeout: float,
        *,
        variables: Mapping[str, Mapping[str, str]],
    ) -> AsyncIterator[Started]:
        """The servers of one run, warm or started within ``timeout`` seconds (as
        ``ServerPool.start``); let go of when the block is left."""
        loop = self._on_loop()
        deadline = loop.time() + timeout
        held: list[_Server] = []
        categories = list(connections)
        try:
            outcomes = await asyncio.gather(
                *(
                    self._acquire(
                        session_key(c, connections[c], variables.get(c, {})),
                        connections[c],
                        deadline,
                        held,
                    )
                    for c in categories
                ),
                return_exceptions=True,
            )
            tools: dict[str, list[BaseTool]] = {}
            errors: dict[str, BaseException] = {}
            for category, outcome in zip(categories, outcomes, strict=True):
                if isinstance(outcome, TimeoutError):
                    errors[category] = TimeoutError(f"no answer within {timeout:.1f}s")
                elif isinstance(outcome, BaseException):
                    errors[category] = outcome
                else:
                    tools[category] = outcome
            yield tools, errors
        finally:
            for server in held:
                self._release(server)

    async def _acquire(
        self,
        key: SessionKey,
        connection: Mapping[str, Any],
        deadline: float,
        held: list[_Server],
    ) -> list[BaseTool]:
        loop = asyncio.get_running_loop()
        server = self._servers.get(key)
        if server is not None and server.usable:
            self._take(server, held)
            if await server.alive(max(min(PING_TIMEOUT, (deadline - loop.time()) / 2), 0.0)):
                return server.ready.result()
            logger.warning("warm MCP server %s did not answer a ping: starting it again", key)
            held.remove(server)
            self._retire(server)
            self._release(server)
        server = self._servers.get(key)  # a run at the same moment may have started it again
        if server is None:
            server = self._start(key, connection)
        self._take(server, held)
        await asyncio.wait([server.ready], timeout=max(deadline - loop.time(), 0.0))
        if server.usable:
            return server.ready.result()
        held.remove(server)  # let go now: a start nobody waits for is stopped at once
        self._release(server)
        if not server.ready.done():
            raise TimeoutError
        if server.ready.cancelled():
            raise ServerFailed("the runner was closed while the server started")
        raise ServerFailed(str(server.ready.exception()))  # one error per run: its own trace

    def _start(self, key: SessionKey, connection: Mapping[str, Any]) -> _Server:
        server = _Server(key, connection)
        self._servers[key] = server
        self._all.add(server)
        _OPEN.add(self)
        server.task.add_done_callback(lambda _: self._all.discard(server))
        server.ready.add_done_callback(lambda _: None if server.usable else self._retire(server))
        logger.info("starting MCP server %s", key)
        return server

    def _take(self, server: _Server, held: list[_Server]) -> None:
        server.leases += 1
        held.append(server)
        if server.idle is not None:
            server.idle.cancel()
            server.idle = None

    def _release(self, server: _Server) -> None:
        server.leases -= 1
        if server.leases:
            return
        if server.retired or not server.usable or not self._keep:
            self._retire(server)
        else:
            server.forget_stderr()
            assert self._loop is not None
            server.idle = self._loop.call_later(self._keep, self._expire, server)

    def _expire(self, server: _Server) -> None:
        server.idle = None
        if not server.leases:
            logger.info("MCP server %s idle for %ss: stopping it", server.key, self._keep)
            self._retire(server)

    def _retire(self, server: _Server) -> None:
        """No new run gets ``server``; it stops once no run holds it."""
        server.retired = True
        if self._servers.get(server.key) is server:
            del self._servers[server.key]
        if not server.leases:
            server.close()

    async def _shutdown(self) -> None:
        self._closed = True
        _OPEN.discard(self)
        if self._pid != os.getpid():
            return
        self._servers.clear()
        servers = list(self._all)
        for server in servers:
            server.retired = True
            server.close()
        tasks = [server.task for server in servers]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every server (runs still going lose their tools); the pool serves no more."""
        if self._loop is None:  # never started a server: nothing runs on the runs' loop
            self._closed = True
            return
        await in_background(self._shutdown())

    def close(self) -> None:
        """``aclose`` from synchronous code."""
        if self._loop is None:
            self._closed = True
            return
        wait_in_background(self._shutdown())


class KeepsServers:
    """The closing of a runner that may keep servers warm (``warm``): ``async with``, ``with``,
    ``aclose()`` and ``close()``. Nothing to close without a pool."""

    def __init__(self, warm: WarmPool | None) -> None:
        self._warm = warm

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def aclose(self) -> None:
        """Stop the warm servers; afterwards a run raises ``RunnerClosedError``."""
        if self._warm is not None:
            await self._warm.aclose()

    def close(self) -> None:
        """``aclose`` from synchronous code."""
        if self._warm is not None:
            self._warm.close()


def _stop_forgotten() -> None:
    """At exit, before the runs' loop stops: stop the servers of pools nobody closed."""
    for pool in list(_OPEN):
        if pool.closed or pool._pid != os.getpid() or not pool._all:
            continue
        warnings.warn(
            f"an AgentRunner keeping MCP servers warm was not closed; stopping its "
            f"{len(pool._all)} server(s) at exit. Use `async with AgentRunner(...)`, "
            "`await runner.aclose()` or `runner.close()`",
            UnclosedRunnerWarning,
            stacklevel=1,
        )
        with contextlib.suppress(Exception):
            wait_in_background(pool._shutdown(), timeout=EXIT_GRACE)


# Registered after ``background``'s own exit handler, so it runs first (atexit is last in,
# first out): the runs' loop is still there to stop the servers on.
atexit.register(_stop_forgotten)


__all__ = [
    "PING_TIMEOUT",
    "KeepsServers",
    "RunnerClosedError",
    "SessionKey",
    "UnclosedRunnerWarning",
    "WarmPool",
    "session_key",
]
