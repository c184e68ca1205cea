"""``acti-store serve-mcp``: serve the store's tools, agents and prompt to MCP clients.

Over stdio (the default: a desktop client starts the command) or streamable HTTP
(``http://HOST:PORT/mcp``). Needs the ``agents`` extra (the MCP SDK); without it the command
says what to install and exits 1.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
from typing import Any, Final

import anyio

from ..execution.catalog import ENV_CONFIG
from ..mcp_server.defaults import DEFAULT_HOST, DEFAULT_PORT, ENV_TOKEN, PATH
from ..tools.builder import BuilderTools
from ..tools.texts import INSTALL_AGENTS_EXTRA
from .options import (
    CommandFailed,
    add_read_only_option,
    add_url_option,
    open_from_args,
    package_version,
)

TRANSPORTS: Final = ("stdio", "http")
#: What ``serve-mcp`` prints (on stderr) when the MCP SDK is not installed.
NEEDS_MCP: Final = f"serve-mcp needs the MCP SDK ({{problem}}): {INSTALL_AGENTS_EXTRA}"


def serve(args: argparse.Namespace, *, model: Any = None) -> int:
    """Serve the store ``args`` name until the client leaves (stdio) or Ctrl-C (HTTP).

    ``model`` goes to the runner of ``execute_created_agent`` (default: each agent's model).
    """
    try:
        from ..mcp_server.http import serve_http, token_from
        from ..mcp_server.server import McpServerOptions, build_server, serve_stdio
    except ImportError as exc:
        raise CommandFailed(NEEDS_MCP.format(problem=exc)) from None
    token = token_from(os.environ, args.host, args.token_env) if args.transport == "http" else None
    repo = open_from_args(args)
    try:
        builder = BuilderTools(lambda: repo, model=model, mcp_catalog=args.mcp_config)
        options = McpServerOptions(read_only=args.read_only, version=package_version())
        server = build_server(builder, options)
        # A long-running server's startup objects (the agent stack's imports) leave the
        # collector's full passes, each of which stops every thread, the event loop's too.
        gc.collect()
        gc.freeze()
        if args.transport == "stdio":
            anyio.run(serve_stdio, server)
        else:
            anyio.run(
                functools.partial(serve_http, server, host=args.host, port=args.port, token=token)
            )
    finally:
        repo.close()
    return 0


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
        "MCP clients. With --read-only, only the tools that read are served.",
    )
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="stdio",
        help="stdio: a client starts this command; http: streamable HTTP at "
        f"http://HOST:PORT{PATH} (default: %(default)s)",
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
    parser.add_argument(
        "--token-env",
        default=None,
        metavar="NAME",
        help=f"the environment variable holding the bearer token HTTP clients must send "
        f"(default: {ENV_TOKEN}); with a token set, every request needs "
        "'Authorization: Bearer <token>'",
    )
    parser.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help="MCP catalog (TOML) execute_created_agent runs agents with (default: "
        f"${ENV_CONFIG}, else the providers' servers)",
    )
    add_read_only_option(parser)
    add_url_option(parser)
    parser.set_defaults(func=serve)
