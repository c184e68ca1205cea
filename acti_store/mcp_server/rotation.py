"""``serve-mcp --tokens FILE``: the tokens served, rotated without a restart.

``TokensApp`` is the HTTP app of the token file: each token has a session manager of its own
over its grant's server (tokens of one grant share the server, its store and its notifier), so
a session belongs to the token that opened it and ``TokensApp.replace`` ends a removed token's
sessions while every other session goes on, with its id.

``watch_tokens`` reads the file again on SIGHUP and when it changes (its inode, size, times:
looked at every ``RELOAD_EVERY`` seconds), and hands the new grants to the server (``Rotate``);
a file that breaks a rule of ``tokens``, or a grant whose store cannot be opened, is refused
and the tokens in use are kept. Each reload writes one line on stderr (``texts.RELOADED``,
``texts.RELOAD_REFUSED``), which names tokens by their number only, never by their text.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from ..errors import AgentStoreError
from . import texts
from .http import BearerTokens, SessionManagers, TokenRoutes, mcp_app, session_manager
from .server import McpServer
from .tokens import Grant, read_grants

#: How often the token file is looked at for a change, in seconds.
RELOAD_EVERY: Final = 1.0
#: Why a reload happened, as its line says it.
ON_SIGNAL: Final = "SIGHUP"
ON_CHANGE: Final = "the file changed"


@dataclass(frozen=True)
class Rotation:
    """What a reload did to the tokens: how many came, went (their sessions ended) and stayed
    (their sessions kept). A token whose grant changed went and came."""

    added: int
    removed: int
    kept: int


class TokensApp:
    """The ASGI app of ``serve-mcp --tokens``: a request goes to the session manager of its
    bearer token; one without one of the tokens gets 401 (``http.BearerTokens``)."""

    def __init__(self, servers: Mapping[str, McpServer], *, host: str) -> None:
        self._host = host
        self._tokens = {token: self._served(server) for token, server in servers.items()}
        self._managers = SessionManagers(tuple(m for _, m in self._tokens.values()))
        self._routes = TokenRoutes({token: m for token, (_, m) in self._tokens.items()})
        self._app = BearerTokens(mcp_app(self._managers), self._routes)

    def _served(self, server: McpServer) -> tuple[McpServer, StreamableHTTPSessionManager]:
        return server, session_manager(server, self._host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def replace(self, servers: Mapping[str, McpServer]) -> Rotation:
        """Serve ``servers`` (token -> its grant's server) from now on: a token kept with the
        same server keeps its sessions; a token that is new, or whose server changed, gets a
        session manager of its own; a removed token is refused from now on, then its sessions
        are ended."""
        old = self._tokens
        kept = {t: old[t] for t, server in servers.items() if t in old and old[t][0] is server}
        added = {t: self._served(server) for t, server in servers.items() if t not in kept}
        for _, manager in added.values():
            await self._managers.start(manager)
        self._tokens = {token: kept.get(token) or added[token] for token in servers}
        self._routes.replace({token: m for token, (_, m) in self._tokens.items()})
        removed = [manager for token, (_, manager) in old.items() if token not in kept]
        for manager in removed:
            await self._managers.stop(manager)
        return Rotation(added=len(added), removed=len(removed), kept=len(kept))


#: What serves a reloaded file's grants (token -> grant), and says what it did.
Rotate = Callable[[Mapping[str, Grant]], Awaitable[Rotation]]


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What changes when the file is written, replaced or has its permissions changed; None
    while there is no file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class TokenFileWatcher:
    """Reads the token file again when told (``reload``), on SIGHUP (``on_signal``) and when it
    changes (``poll``); one reload at a time."""

    def __init__(self, path: Path, tokens: int, rotate: Rotate) -> None:
        self._path = path
        self._tokens = tokens  # in use
        self._rotate = rotate
        self._stamp = _stamp(path)
        self._lock = anyio.Lock()

    async def reload(self, why: str) -> None:
        """Serve the file's tokens, or keep those in use and say why the file was refused."""
        async with self._lock:
            self._stamp = _stamp(self._path)  # before reading: a later write is seen again
            try:
                grants = await anyio.to_thread.run_sync(read_grants, self._path)
                rotation = await self._rotate(grants)
            except AgentStoreError as exc:  # TokenFileError, or a store that cannot be opened
                refused = texts.RELOAD_REFUSED.format(why=why, tokens=self._tokens, reason=exc)
                _say(refused)
                return
            self._tokens = len(grants)
            _say(
                texts.RELOADED.format(
                    path=self._path, why=why, tokens=self._tokens, **vars(rotation)
                )
            )

    async def on_signal(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Reload on every SIGHUP (on a system that has it), started once it is listened for."""
        hangup = getattr(signal, "SIGHUP", None)
        if hangup is None:
            task_status.started()
            return
        with anyio.open_signal_receiver(hangup) as signals:
            task_status.started()
            async for _ in signals:
                await self.reload(ON_SIGNAL)

    async def poll(self, every: float = RELOAD_EVERY) -> None:
        """Reload whenever the file changed since it was last read, looking every ``every`` s."""
        while True:
            await anyio.sleep(every)
            if _stamp(self._path) != self._stamp:
                await self.reload(ON_CHANGE)


async def watch_tokens(
    path: Path,
    tokens: int,
    rotate: Rotate,
    every: float = RELOAD_EVERY,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Until cancelled, reload the token file at ``path`` (``tokens`` in use) on SIGHUP and
    when it changes; started (``TaskGroup.start``) once SIGHUP is listened for."""
    watcher = TokenFileWatcher(path, tokens, rotate)
    async with anyio.create_task_group() as group:
        await group.start(watcher.on_signal)
        group.start_soon(watcher.poll, every)
        task_status.started()
