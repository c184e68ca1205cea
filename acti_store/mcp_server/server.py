"""The MCP server of one store: its tools, resources and prompt, on the SDK's low-level server.

Why the low-level ``Server`` and not ``FastMCP``: FastMCP derives a tool's input schema from a
Python signature and validates the arguments itself, answering a wrong value with its own error;
here the schema is the declared args schema and a wrong value must reach the tool, which refuses
it with the contract's text. The low-level server also returns a ``CallToolResult`` as given
(text, artifact and ``isError`` together), which FastMCP builds itself. Resource templates,
notifications and elicitation are the same session calls in both.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import McpError

from ..errors import AgentStoreError
from ..tools import render
from ..tools.builder import BuilderTools
from ..tools.outcomes import Result
from . import approval, prompts, texts
from .completions import Completions
from .resources import RUN_TOOLS, Notifier, Resources, changed_by, templates
from .tools import ServedTool, builder_declarations, served_tools, tool_result


class McpServer(Server[Any, Any]):
    """The SDK's low-level server, telling clients that it notifies about resources."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The capabilities, with resource subscriptions and ``list_changed`` notifications
        (every transport, the SDK's HTTP session manager included, asks here)."""
        init = super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True),
            experimental_capabilities,
        )
        if init.capabilities.resources is not None:
            init.capabilities.resources.subscribe = True
        return init


@dataclass(frozen=True)
class McpServerOptions:
    """What ``serve-mcp``'s options change in the server."""

    #: Serve only the tools that only read (the store is opened read-only too).
    read_only: bool = False
    #: The version the server reports to clients (acti-store's).
    version: str | None = None
    #: Serve the version tools too (``serve-mcp --with-versions``): versions, diffs, rollbacks,
    #: labels (splits, label rollbacks) and comparisons.
    versions: bool = False
    #: Load the agent stack (``execute_created_agent``'s) at the first request handled, not as
    #: the server is built: a client over stdio has its ``initialize`` answered seconds sooner.
    agent_stack_later: bool = False


def build_server(
    builder: BuilderTools,
    options: McpServerOptions | None = None,
    notifier: Notifier | None = None,
) -> McpServer:
    """The MCP server of ``builder``'s store; ``notifier`` when servers of one store (one
    tenant's, reading only or not) tell each other's sessions of their writes.

    While a session is served (the server's lifespan, entered per session by every transport),
    the store's change feed is followed (``Notifier.feed``): a subscribed session hears of the
    changes every process makes, this one's included, each once (``Notifier``)."""
    options = options or McpServerOptions()
    declarations = builder_declarations(builder, versions=options.versions)
    tools = served_tools(declarations, read_only=options.read_only)
    # The tools that write, not served read-only: a call says so, not "unknown tool".
    withheld = {spec.name for specs, _ in declarations for spec in specs} - tools.keys()
    # LangChain and deepagents come with execute_created_agent: a server without it loads
    # neither. Seconds of imports holding the GIL: as the server is built, or (later) at the
    # first request, before any run, never in a client's first run.
    stack_due = "execute_created_agent" in tools
    if stack_due and not options.agent_stack_later:
        stack_due = _load_agent_stack()
    resources = Resources(builder)
    completions = Completions(builder)
    notifier = Notifier() if notifier is None else notifier

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any, Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            repo = await builder.arepo()
        except AgentStoreError:  # served without the feed: the tools say what is wrong
            yield {}
            return
        async with notifier.feed.following(repo):
            yield {}

    server = McpServer(
        texts.SERVER_NAME,
        version=options.version,
        instructions=texts.SERVER_INSTRUCTIONS,
        lifespan=lifespan,
    )

    def session() -> ServerSession:
        """The session of the request being handled, remembered for notifications (and, on
        the first request of a server built with ``agent_stack_later``, the agent stack)."""
        nonlocal stack_due
        if stack_due:
            stack_due = _load_agent_stack()
            gc.freeze()  # its objects leave the collector's full passes, as the startup's do
        current: ServerSession = server.request_context.session
        notifier.seen(current)
        return current

    async def list_tools(_: types.ListToolsRequest) -> types.ServerResult:
        session()
        return types.ServerResult(
            types.ListToolsResult(tools=[tool.definition() for tool in tools.values()])
        )

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        client = session()
        name, arguments = request.params.name, request.params.arguments or {}
        tool = tools.get(name)
        if tool is None:
            text = texts.READ_ONLY_TOOL if name in withheld else texts.UNKNOWN_TOOL
            message = text.format(name=name, names=", ".join(tools))
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=message))
        request_id = server.request_context.request_id
        result = await approval.refusal(client, request_id, tool, arguments)
        if result is None:  # (a refusal changed nothing)
            result = await (
                tool.call(arguments) if tool.spec.reads_only else write(tool, arguments)
            )
        return types.ServerResult(tool_result(result))

    async def write(tool: ServedTool, arguments: dict[str, Any]) -> Result:
        """A writing tool's call, then its notifications (before its answer)."""
        if tool.name in RUN_TOOLS:  # a run's record: no change of the feed
            result = await tool.call(arguments)
            uris, listing = changed_by(tool.name, result[1])
            await notifier.changed(uris, listing=listing)
            return result
        async with notifier.writing():  # the feed's change of this write waits until it is
            result = await tool.call(arguments)  # marked as notified (``Notifier.covers``)
            uris, listing = changed_by(tool.name, result[1])
            await notifier.covers(await builder.arepo(), uris, listing=listing)
            await notifier.changed(uris, listing=listing)
        return result

    async def list_resources(request: types.ListResourcesRequest) -> types.ServerResult:
        session()
        cursor = request.params.cursor if request.params else None
        return types.ServerResult(await resources.page(cursor))

    async def list_templates(_: types.ListResourceTemplatesRequest) -> types.ServerResult:
        session()
        return types.ServerResult(types.ListResourceTemplatesResult(resourceTemplates=templates()))

    async def read_resource(request: types.ReadResourceRequest) -> types.ServerResult:
        session()
        uri = str(request.params.uri)
        contents = [
            types.TextResourceContents(uri=request.params.uri, mimeType=c.mime_type, text=c.content)
            for c in await resources.read(uri)
            if isinstance(c.content, str)
        ]
        return types.ServerResult(types.ReadResourceResult(contents=list(contents)))

    async def subscribe(request: types.SubscribeRequest) -> types.ServerResult:
        notifier.subscribe(session(), str(request.params.uri))
        return types.ServerResult(types.EmptyResult())

    async def unsubscribe(request: types.UnsubscribeRequest) -> types.ServerResult:
        notifier.unsubscribe(session(), str(request.params.uri))
        return types.ServerResult(types.EmptyResult())

    async def list_prompts(_: types.ListPromptsRequest) -> types.ServerResult:
        session()
        return types.ServerResult(types.ListPromptsResult(prompts=[prompts.PROMPT]))

    async def get_prompt(request: types.GetPromptRequest) -> types.ServerResult:
        session()
        return types.ServerResult(
            prompts.build_agent(request.params.name, request.params.arguments)
        )

    async def set_level(_: types.SetLevelRequest) -> types.ServerResult:
        # Accepted so that clients that set a level on connecting can: the server sends no log
        # notifications (its answers say what went wrong).
        session()
        return types.ServerResult(types.EmptyResult())

    async def complete(request: types.CompleteRequest) -> types.ServerResult:
        session()
        params = request.params
        try:
            found = await completions.complete(
                params.ref, params.argument.name, params.argument.value
            )
        except AgentStoreError as exc:
            message = render.store_error(exc)
            raise McpError(types.ErrorData(code=types.INTERNAL_ERROR, message=message)) from None
        return types.ServerResult(types.CompleteResult(completion=found))

    server.request_handlers.update(
        {
            types.ListToolsRequest: list_tools,
            types.CallToolRequest: call_tool,
            types.ListResourcesRequest: list_resources,
            types.ListResourceTemplatesRequest: list_templates,
            types.ReadResourceRequest: read_resource,
            types.SubscribeRequest: subscribe,
            types.UnsubscribeRequest: unsubscribe,
            types.ListPromptsRequest: list_prompts,
            types.GetPromptRequest: get_prompt,
            types.SetLevelRequest: set_level,
            types.CompleteRequest: complete,
        }
    )
    return server


def _load_agent_stack() -> bool:
    """Import the agent stack (``tools.defaults.load_agent_stack``); False: no longer due."""
    from ..tools.defaults import load_agent_stack

    load_agent_stack()
    return False


async def serve_stdio(server: McpServer) -> None:
    """Serve over stdin/stdout until the client closes stdin.

    The protocol gets its own copies of the two descriptors (the SDK closes what it was given),
    and ``print`` goes to stderr meanwhile: a stray line on stdout would break the protocol.
    """
    protocol_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    reader = anyio.wrap_file(io.TextIOWrapper(protocol_in, encoding="utf-8", errors="replace"))
    writer = anyio.wrap_file(io.TextIOWrapper(protocol_out, encoding="utf-8"))
    with contextlib.redirect_stdout(sys.stderr):
        try:
            async with stdio_server(reader, writer) as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            for stream in (protocol_in, protocol_out):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
