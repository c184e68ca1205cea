"""Serving over streamable HTTP (``http://HOST:PORT/mcp``), with a bearer token off loopback.

On a loopback address the SDK's DNS-rebinding protection only lets in requests whose ``Host``
(and ``Origin``, when sent) is a loopback one. Any other address needs a token
(``ACTI_STORE_MCP_TOKEN``, or the variable ``--token-env`` names): a request without
``Authorization: Bearer <token>`` gets 401 before it reaches the MCP session, so it touches
nothing. The token is compared in constant time and never written to a log or a text.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import ipaddress
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Final

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import AgentStoreError
from . import texts
from .defaults import ENV_TOKEN, PATH
from .server import McpServer


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


class BearerToken:
    """ASGI middleware: a request without ``Authorization: Bearer <token>`` gets 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    def _authorized(self, scope: Scope) -> bool:
        given = dict(scope.get("headers", ())).get(b"authorization", b"")
        return hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            response = JSONResponse(
                {"error": "unauthorized", "error_description": texts.UNAUTHORIZED},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="acti-store"'},
            )
            await response(scope, receive, send)
            return
        await self._app(scope, receive, send)


class _Sessions:
    """The SDK's session manager as the ASGI endpoint of ``PATH``."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def http_app(server: McpServer, *, host: str, token: str | None) -> ASGIApp:
    """The ASGI app: the MCP endpoint at ``PATH``, behind the token when there is one."""
    manager = StreamableHTTPSessionManager(app=server, security_settings=_security(host))
    sessions = _Sessions(manager)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with sessions.manager.run():
            yield

    app: ASGIApp = Starlette(routes=[Route(PATH, endpoint=sessions)], lifespan=lifespan)
    return app if token is None else BearerToken(app, token)


async def serve_http(server: McpServer, *, host: str, port: int, token: str | None) -> None:
    """Serve at ``http://host:port/mcp`` until interrupted (Ctrl-C, SIGTERM).

    The port is bound before anything is said: ``ListenError`` when it cannot be (in use...),
    and the "serving at" line only once clients can connect.
    """
    if token is None and not is_loopback(host):
        raise UnsafeExposureError(texts.NEEDS_TOKEN.format(host=host, variable=ENV_TOKEN))
    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    with listen(host, port) as sock:
        print(texts.SERVING.format(url=endpoint_url(host, port)), file=sys.stderr, flush=True)
        await uvicorn.Server(config).serve(sockets=[sock])
