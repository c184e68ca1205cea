"""Serving over streamable HTTP (``http://HOST:PORT/mcp``), with a bearer token off loopback.

On a loopback address the SDK's DNS-rebinding protection only lets in requests whose ``Host``
(and ``Origin``, when sent) is a loopback one. Any other address needs a token
(``ACTI_STORE_MCP_TOKEN``, or the variable ``--token-env`` names): a request without
``Authorization: Bearer <token>`` gets 401 before it reaches the MCP session, so it touches
nothing. The token is compared in constant time and never written to a log or a text.

``serve-mcp --tokens FILE`` serves several tenants at once (``rotation.TokensApp``): a server
per grant (tenant, read-only or not) and a session manager per token, and a request goes to the
session manager of its token (``BearerTokens``, ``TokenRoutes``), so a session is unknown to any
other token, another tenant's above all.

The OAuth discovery paths (``/.well-known/oauth-*``) answer 404 with or without a token: there is no
OAuth here, and a 401 there would start an OAuth-aware client's authorization flow.

A body the SDK cannot parse without raising (invalid UTF-8, JSON nested deeper than Python
parses) gets the JSON-RPC parse error (HTTP 400) before it reaches the SDK, which would answer
500 and log a traceback; a client that goes away leaves no traceback either (``quiet_sdk_log``).
SSE streams start with a priming event and can be resumed after a broken connection
(``events``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Final

import anyio
import anyio.abc
import anyio.to_thread
import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AgentStoreError
from . import texts
from .defaults import ENV_TOKEN, PATH
from .events import RETRY_MS, RecentEvents
from .server import McpServer

#: Where OAuth-aware clients look for an authorization server (RFC 9728, RFC 8414).
OAUTH_DISCOVERY: Final = "/.well-known/oauth-"
#: The JSON-RPC error code of a body that is not JSON.
PARSE_ERROR: Final = -32700
#: Bodies shorter than this are checked on the event loop (microseconds), longer ones off it.
INLINE_PARSE: Final = 64 * 1024
#: Exceptions that only say the client went away (a stream closed under the SDK's writer).
CLIENT_GONE: Final = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class UnsafeExposureError(AgentStoreError):
    """Serving off loopback without a token, or with a token variable that is not set."""


class ListenError(AgentStoreError):
    """The address cannot be listened on: the port is in use, the host is not this machine's..."""


#: Why ``serve_http`` cannot start; ``IN_USE`` is added when another process has the port.
CANNOT_LISTEN: Final = "cannot serve MCP at {url}: {reason}"
IN_USE: Final = " (another process listens on port {port}: stop it, or choose another port)"


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening (as uvicorn would bind it), or
    ``ListenError`` saying why not."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        reason = str(exc.strerror or exc)
        if exc.errno == errno.EADDRINUSE:
            reason += IN_USE.format(port=port)
        url = endpoint_url(host, port)
        raise ListenError(CANNOT_LISTEN.format(url=url, reason=reason)) from None
    sock.set_inheritable(True)
    return sock


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve to any address
        return False


def endpoint_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{PATH}"


def token_from(environ: Mapping[str, str], host: str, variable: str | None) -> str | None:
    """The bearer token: from ``variable`` (``--token-env``), else ``ACTI_STORE_MCP_TOKEN``.

    Raises ``UnsafeExposureError`` when ``variable`` is named but empty, or when there is no
    token and ``host`` is not a loopback address.
    """
    token = environ.get(variable or ENV_TOKEN) or None
    if variable and token is None:
        raise UnsafeExposureError(texts.TOKEN_UNSET.format(variable=variable))
    if token is None and not is_loopback(host):
        raise UnsafeExposureError(texts.NEEDS_TOKEN.format(host=host, variable=ENV_TOKEN))
    return token


def _security(host: str) -> TransportSecuritySettings:
    if not is_loopback(host):  # the token guards it; the Host header may be any of its names
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


#: Where ``BearerTokens`` puts the session manager a request's token chose, in its scope.
ROUTE: Final = "acti_store.route"


def _digest(header: bytes) -> bytes:
    """What is compared: a fixed-length digest, so that comparing tells nothing of a length."""
    return hashlib.sha256(header).digest()


def _bearer_token(header: bytes) -> bytes | None:
    """The token of an ``Authorization`` header of the Bearer scheme (its name in any case,
    then one or more spaces: RFC 9110 section 11.4), else None."""
    scheme, _, token = header.partition(b" ")
    token = token.lstrip(b" ")
    return token if scheme.lower() == b"bearer" and token else None


class TokenRoutes:
    """The tokens let in, each with the session manager of its sessions; replaced whole when the
    token file is read again (``replace``: a request sees the old set or the new one, never a
    mix). Only the tokens' digests are kept.

    The presented token is compared with every token, each in constant time and without
    stopping at a match, so the time taken says nothing of which token, if any, matched.
    """

    def __init__(self, routes: Mapping[str, StreamableHTTPSessionManager]) -> None:
        self._routes: list[tuple[bytes, StreamableHTTPSessionManager]] = []
        self.replace(routes)

    def replace(self, routes: Mapping[str, StreamableHTTPSessionManager]) -> None:
        self._routes = [(_digest(token.encode()), manager) for token, manager in routes.items()]

    def find(self, token: bytes) -> StreamableHTTPSessionManager | None:
        """The session manager of ``token``, or None when it is not one of the tokens."""
        given = _digest(token)
        chosen = None
        for expected, manager in self._routes:
            if hmac.compare_digest(given, expected):
                chosen = manager
        return chosen


class BearerTokens:
    """ASGI middleware: a request without ``Authorization: Bearer <token>``, one of the tokens,
    gets 401; one with a token goes on with that token's session manager (``ROUTE``).

    The scheme's name is case-insensitive (``bearer``, ``BEARER``: RFC 9110 section 11.1).
    """

    def __init__(self, app: ASGIApp, routes: TokenRoutes) -> None:
        self._app = app
        self._routes = routes

    def _route(self, scope: Scope) -> StreamableHTTPSessionManager | None:
        token = _bearer_token(dict(scope.get("headers", ())).get(b"authorization", b""))
        return None if token is None else self._routes.find(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if scope["path"].startswith(OAUTH_DISCOVERY):
            await JSONResponse({"error": "not_found"}, status_code=404)(scope, receive, send)
            return
        route = self._route(scope)
        if route is None:
            response = JSONResponse(
                {"error": "unauthorized", "error_description": texts.UNAUTHORIZED},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="acti-store"'},
            )
            await response(scope, receive, send)
            return
        await self._app({**scope, ROUTE: route}, receive, send)


def _unparsable(body: bytes) -> str | None:
    """Why ``body`` cannot be parsed as the SDK parses it without raising, or None."""
    try:
        json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    except RecursionError:
        return "the JSON is nested too deeply"
    except ValueError:
        return None  # not JSON: the SDK answers it with its own parse error
    return None


class ParsableBody:
    """ASGI middleware: a POST whose body the SDK cannot parse gets a JSON-RPC parse error."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if len(body) < INLINE_PARSE:
            problem = _unparsable(body)
        else:  # a long body parses in a worker thread, the event loop kept free: CPU work,
            # not the store's (that goes through the store's async API), so on anyio's threads.
            problem = await anyio.to_thread.run_sync(_unparsable, body)
        if problem is not None:
            error = {"code": PARSE_ERROR, "message": f"Parse error: {problem}"}
            answer = {"jsonrpc": "2.0", "id": None, "error": error}
            await JSONResponse(answer, status_code=400)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._app(scope, replay, send)


class _ClientGone(logging.Filter):
    """Drops the SDK's tracebacks of a stream closed because its client went away."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, CLIENT_GONE)


_CLIENT_GONE: Final = _ClientGone()


def quiet_sdk_log() -> None:
    """The SDK's HTTP transport logs no traceback for a client that went away (it logs one
    when its SSE writer finds its stream closed: a disconnect, or a session ended by DELETE)."""
    logger = logging.getLogger("mcp.server.streamable_http")
    if _CLIENT_GONE not in logger.filters:
        logger.addFilter(_CLIENT_GONE)


def session_manager(server: McpServer, host: str) -> StreamableHTTPSessionManager:
    """The SDK's session manager of ``server`` on ``host``, its sessions resumable
    (``RecentEvents``)."""
    return StreamableHTTPSessionManager(
        app=server,
        security_settings=_security(host),
        event_store=RecentEvents(),
        retry_interval=RETRY_MS,
    )


@dataclass
class _Running:
    """One session manager's run: set ``stop`` to end it; ``done`` is set once it ended."""

    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    started: bool = False


class SessionManagers:
    """The session managers an app runs, each in a task of its own: one can be started or
    stopped (every session of it ended) while the others serve on. A manager added before the
    app runs starts with it (``running``: the app's lifespan)."""

    def __init__(self, managers: tuple[StreamableHTTPSessionManager, ...] = ()) -> None:
        self._runs: dict[StreamableHTTPSessionManager, _Running] = {m: _Running() for m in managers}
        self._group: anyio.abc.TaskGroup | None = None

    async def start(self, manager: StreamableHTTPSessionManager) -> None:
        """Run ``manager`` (now, when the app runs; else with the app)."""
        run = self._runs[manager] = _Running()
        if self._group is not None:
            await self._group.start(self._run, manager, run)

    async def stop(self, manager: StreamableHTTPSessionManager) -> None:
        """End ``manager``'s run, and with it every session it serves (their open streams
        closed, their servers' lifespans left)."""
        run = self._runs.pop(manager)
        run.stop.set()
        if run.started:
            await run.done.wait()

    async def _run(
        self,
        manager: StreamableHTTPSessionManager,
        run: _Running,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        run.started = True
        try:
            async with manager.run():
                task_status.started()
                await run.stop.wait()
        finally:
            run.done.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Every manager run until the app stops."""
        async with anyio.create_task_group() as group:
            for manager, run in list(self._runs.items()):
                await group.start(self._run, manager, run)
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()


class _Sessions:
    """The ASGI endpoint of ``PATH``: the session manager the request's token chose (``ROUTE``;
    ``default`` without tokens). A session lives in one manager: its id means nothing to
    another."""

    def __init__(self, default: StreamableHTTPSessionManager | None = None) -> None:
        self._default = default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = scope.get(ROUTE, self._default)
        assert manager is not None, "a request without a token's session manager"
        await manager.handle_request(scope, receive, send)


def mcp_app(
    managers: SessionManagers, default: StreamableHTTPSessionManager | None = None
) -> ASGIApp:
    """The MCP endpoint at ``PATH``, its session managers run for as long as the app runs;
    without ``default``, every request must come with its manager (``BearerTokens``)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with managers.running():
            yield

    quiet_sdk_log()
    starlette = Starlette(routes=[Route(PATH, endpoint=_Sessions(default))], lifespan=lifespan)
    return ParsableBody(starlette)


def http_app(server: McpServer, *, host: str, token: str | None) -> ASGIApp:
    """The ASGI app: the MCP endpoint at ``PATH``, behind the token when there is one."""
    manager = session_manager(server, host)
    app = mcp_app(SessionManagers((manager,)), manager if token is None else None)
    return app if token is None else BearerTokens(app, TokenRoutes({token: manager}))


async def serve_http(server: McpServer, *, host: str, port: int, token: str | None) -> None:
    """Serve at ``http://host:port/mcp`` until interrupted (Ctrl-C, SIGTERM)."""
    if token is None and not is_loopback(host):
        raise UnsafeExposureError(texts.NEEDS_TOKEN.format(host=host, variable=ENV_TOKEN))
    await serve_app(http_app(server, host=host, token=token), host=host, port=port)


async def serve_app(app: ASGIApp, *, host: str, port: int) -> None:
    """Serve ``app`` (``http_app``, ``rotation.TokensApp``) at ``http://host:port/mcp`` until
    interrupted (Ctrl-C, SIGTERM).

    The port is bound before anything is said: ``ListenError`` when it cannot be (in use...),
    and the "serving at" line only once clients can connect.
    """
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    with listen(host, port) as sock:
        print(texts.SERVING.format(url=endpoint_url(host, port)), file=sys.stderr, flush=True)
        await uvicorn.Server(config).serve(sockets=[sock])
