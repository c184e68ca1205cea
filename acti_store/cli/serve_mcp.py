"""``acti-store serve-mcp``: serve the store's tools, agents and prompt to MCP clients.

Over stdio (the default: a desktop client starts the command) or streamable HTTP
(``http://HOST:PORT/mcp``). Needs the ``agents`` extra (the MCP SDK); without it the command
says what to install and exits 1.

``--tokens FILE`` serves several tenants over one HTTP server: each bearer token of the file
(``mcp_server.tokens``) reaches a server of its own grant's store, opened for that tenant
(and read-only when the grant says so). The file is checked as the command line is parsed: a
file that breaks a rule is a usage error (status 2) saying which. While serving, the file is
read again on SIGHUP and when it changes (``mcp_server.rotation``): a new grant's store is
opened as at startup, a store no token has any more is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import anyio

from ..bootstrap import open_repository
from ..execution.environment import ENV_CONFIG
from ..mcp_server.defaults import DEFAULT_HOST, DEFAULT_PORT, ENV_TOKEN, PATH
from ..mcp_server.tokens import MIN_TOKEN_LENGTH, Grant, TokenFile, TokenFileError
from ..repository import SqlAgentRepository
from ..tools.builder import BuilderTools
from ..tools.texts import INSTALL_AGENTS_EXTRA
from .options import (
    CommandFailed,
    add_read_only_option,
    add_url_option,
    open_from_args,
    package_version,
)

if TYPE_CHECKING:
    from ..mcp_server.resources import Notifier
    from ..mcp_server.rotation import Rotation
    from ..mcp_server.server import McpServer

TRANSPORTS: Final = ("stdio", "http")
#: What ``serve-mcp`` prints (on stderr) when the MCP SDK is not installed.
NEEDS_MCP: Final = f"serve-mcp needs the MCP SDK ({{problem}}): {INSTALL_AGENTS_EXTRA}"
#: ``--tokens`` with what it cannot go with.
TOKENS_OVER_STDIO: Final = "--tokens serves over HTTP: leave out --transport stdio"
TOKENS_AND_TOKEN: Final = (
    f"--tokens names every token: unset {ENV_TOKEN} (its single token would be ignored)"
)
TOKENS_AND_TENANT: Final = "--tokens names each token's tenant: leave out --tenant"


def serve(args: argparse.Namespace, *, model: Any = None) -> int:
    """Serve the store ``args`` name until the client leaves (stdio) or Ctrl-C (HTTP).

    ``model`` goes to the runner of ``execute_created_agent`` (default: each agent's model).
    """
    stdio = args.tokens is None and (args.transport or "stdio") == "stdio"
    try:  # over stdio, the SDK's server alone: no HTTP server (uvicorn, starlette) loaded
        if stdio:
            from ..mcp_server.server import serve_stdio
        else:
            from ..mcp_server.http import serve_http, token_from
    except ImportError as exc:
        raise CommandFailed(NEEDS_MCP.format(problem=exc)) from None
    if args.tokens is not None:
        return _serve_tenants(args, args.tokens, model)
    token = None if stdio else token_from(os.environ, args.host, args.token_env)
    repo = open_from_args(args)
    try:
        # One client over stdio: the agent stack loads at its first request, after its
        # ``initialize`` is answered; over HTTP, before the first of many sessions.
        server = _server(repo, args, model, read_only=args.read_only, stack_later=stdio)
        if stdio:
            _run(functools.partial(serve_stdio, server))
        else:
            _run(functools.partial(serve_http, server, host=args.host, port=args.port, token=token))
    finally:
        repo.close()
    return 0


def _serve_tenants(args: argparse.Namespace, token_file: TokenFile, model: Any) -> int:
    """Serve every tenant of the token file over HTTP: a store and a server per grant, the file
    read again on SIGHUP and when it changes."""
    from ..mcp_server.http import serve_app
    from ..mcp_server.rotation import TokensApp, watch_tokens

    if args.transport == "stdio":
        raise CommandFailed(TOKENS_OVER_STDIO)
    if os.environ.get(ENV_TOKEN):
        raise CommandFailed(TOKENS_AND_TOKEN)
    if getattr(args, "tenant", None) is not None:
        raise CommandFailed(TOKENS_AND_TENANT)
    stores = _GrantStores(args, model)
    try:
        app = TokensApp(stores.servers(token_file.grants), host=args.host)

        async def rotate(grants: Mapping[str, Grant]) -> Rotation:
            servers = await asyncio.to_thread(stores.servers, grants)
            rotation = await app.replace(servers)  # the removed tokens' sessions ended first
            await asyncio.to_thread(stores.keep_only, servers)
            return rotation

        async def main() -> None:
            async with anyio.create_task_group() as group:
                count = len(token_file.grants)
                await group.start(watch_tokens, token_file.path, count, rotate)
                await serve_app(app, host=args.host, port=args.port)
                group.cancel_scope.cancel()

        _run(main)
    finally:
        stores.close()
    return 0


class _GrantStores:
    """The store and the MCP server of every grant ``serve-mcp --tokens`` serves: opened when
    a grant first appears (at startup, or in a file read again), closed once no token has it.
    A tenant's servers (reading only or not) share one notifier: they tell each other's
    sessions of their writes."""

    def __init__(self, args: argparse.Namespace, model: Any) -> None:
        self._args = args
        self._model = model
        self._notifiers: dict[str, Notifier] = {}
        self._servers: dict[Grant, McpServer] = {}
        self._repos: dict[Grant, SqlAgentRepository] = {}

    def servers(self, grants: Mapping[str, Grant]) -> dict[str, McpServer]:
        """Each token's server (every grant read-only with ``--read-only``), the stores of the
        grants not served yet opened; when one cannot be, those this call opened are closed
        and the error raised (``AgentStoreError``)."""
        granted = {
            token: replace(grant, read_only=grant.read_only or self._args.read_only)
            for token, grant in grants.items()
        }
        # The writing grants first: the first opening brings the store's schema up to date,
        # which a read-only opening needs.
        new = sorted(
            set(granted.values()) - self._servers.keys(), key=lambda g: (g.read_only, g.tenant)
        )
        opened: list[Grant] = []
        try:
            for grant in new:
                self._open(grant)
                opened.append(grant)
        except BaseException:
            for grant in opened:
                self._close(grant)
            raise
        return {token: self._servers[grant] for token, grant in granted.items()}

    def keep_only(self, servers: Mapping[str, McpServer]) -> None:
        """Close the stores of the grants whose server is not among ``servers`` any more."""
        used = {id(server) for server in servers.values()}
        for grant in [g for g, server in self._servers.items() if id(server) not in used]:
            self._close(grant)

    def close(self) -> None:
        for grant in list(self._servers):
            self._close(grant)

    def _open(self, grant: Grant) -> None:
        from ..mcp_server.resources import Notifier

        args = self._args
        repo = open_repository(
            args.url,
            schema=args.schema,
            tenant=grant.tenant,
            read_only=grant.read_only,
            pooler=args.pooler,
            listen_url=args.listen_url,
        )
        notifier = self._notifiers.setdefault(grant.tenant, Notifier())
        self._repos[grant] = repo
        self._servers[grant] = _server(
            repo, args, self._model, read_only=grant.read_only, notifier=notifier
        )

    def _close(self, grant: Grant) -> None:
        del self._servers[grant]
        self._repos.pop(grant).close()


def _server(
    repo: SqlAgentRepository,
    args: argparse.Namespace,
    model: Any,
    *,
    read_only: bool,
    notifier: Notifier | None = None,
    stack_later: bool = False,
) -> McpServer:
    """The MCP server of ``repo``, its runs on ``model`` and ``--mcp-config``'s catalog
    (``stack_later``: ``McpServerOptions.agent_stack_later``)."""
    from ..mcp_server.server import McpServerOptions, build_server

    builder = BuilderTools(lambda: repo, model=model, mcp_catalog=args.mcp_config)
    options = McpServerOptions(
        read_only=read_only,
        version=package_version(),
        versions=args.with_versions,
        agent_stack_later=stack_later,
    )
    return build_server(builder, options, notifier)


def _run(main: Callable[[], Awaitable[None]]) -> None:
    """Serve with ``main`` until it returns, the startup's objects frozen first: a long-running
    server's startup objects (the agent stack's imports) leave the collector's full passes,
    each of which stops every thread, the event loop's too."""
    gc.collect()
    gc.freeze()
    anyio.run(main)


def _tokens(path: str) -> TokenFile:
    """``--tokens``' value: the file and its tokens' grants; a file that breaks a rule is a
    usage error saying which (``tokens``)."""
    try:
        return TokenFile.read(path)
    except TokenFileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535)")
    return port


def register(subparsers: Any) -> None:
    """Add ``serve-mcp`` to the command line (always: it reports a missing extra when run)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve-mcp",
        help="serve the builder tools and the agents to MCP clients",
        description="Serve the builder's tools, the agents (as resources) and the build_agent "
        "prompt over the Model Context Protocol, to desktop assistants, IDE agents and other "
        "MCP clients. With --read-only, only the tools that read are served. With --tokens, "
        "one HTTP server serves several tenants, each token seeing only its own.",
    )
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default=None,
        help="stdio: a client starts this command; http: streamable HTTP at "
        f"http://HOST:PORT{PATH} (default: stdio; http with --tokens)",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="the address to listen on with --transport http; any but a loopback address "
        "needs a bearer token (default: %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        metavar="N",
        help="the port to listen on with --transport http, 1-65535 (default: %(default)s)",
    )
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument(
        "--token-env",
        default=None,
        metavar="NAME",
        help=f"the environment variable holding the bearer token HTTP clients must send "
        f"(default: {ENV_TOKEN}); with a token set, every request needs "
        "'Authorization: Bearer <token>'",
    )
    tokens.add_argument(
        "--tokens",
        type=_tokens,
        default=None,
        metavar="FILE",
        help="serve several tenants over HTTP at once: FILE is a JSON object mapping each "
        'bearer token to its grant, {"<token>": {"tenant": "acme", "read_only": false}}; a '
        "client sees and touches only its token's tenant, reading only with read_only true "
        f"(or --read-only). Tokens have at least {MIN_TOKEN_LENGTH} characters; FILE must be "
        "readable by its owner only (chmod 600). FILE is read again on SIGHUP and when it "
        "changes: a removed token's sessions end, the others' go on; a broken FILE is refused "
        f"and the tokens in use kept. Not with {ENV_TOKEN} or --tenant",
    )
    parser.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help="MCP catalog (TOML) execute_created_agent runs agents with (default: "
        f"${ENV_CONFIG}, else the providers' servers)",
    )
    parser.add_argument(
        "--with-versions",
        action="store_true",
        help="serve the version tools too: list_agent_versions, diff_agent_versions, "
        "rollback_agent_config, set_agent_label (a version or a weighted split), "
        "rollback_agent_label and compare_agent_versions; a client that can ask its user "
        "(elicitation) asks before a confirmed rollback or a move of production",
    )
    add_read_only_option(parser)
    add_url_option(parser)
    parser.set_defaults(func=serve)
