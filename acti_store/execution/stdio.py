"""The stdio transport of MCP servers, with the process started off the event loop.

The MCP SDK's ``stdio_client`` starts a server with ``asyncio.create_subprocess_exec``, which
forks, waits for the exec and starts a child-watcher thread, all on the event loop: tens of
milliseconds per server on a busy machine, and one loop iteration does that for every run that got
there at the same time. Here the process is started in a worker thread (``subprocess.Popen``); its
pipes are read and written through the loop, and its exit is polled. The rest is the SDK's:
newline-delimited JSON-RPC messages, the server in a session (process group) of its own, the
SDK's default environment when the connection names none, and its shutdown: close stdin, wait, then
SIGTERM the process group, then SIGKILL.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final, TextIO

import anyio
import anyio.lowlevel
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

#: How long a server may take to exit once its stdin is closed, then once it got SIGTERM.
EXIT_GRACE: Final = 2.0
#: The most a read of a server's stdout takes at once.
READ_CHUNK: Final = 1 << 16

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def _spawn(params: StdioServerParameters, errlog: TextIO) -> subprocess.Popen[bytes]:
    environment = get_default_environment()
    if params.env is not None:
        environment.update(params.env)
    return subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=environment,
        cwd=params.cwd,
        bufsize=0,
        start_new_session=True,
    )


def _discard(spawn: asyncio.Future[subprocess.Popen[bytes]]) -> None:
    """A server started for a caller that is gone (cancelled meanwhile): kill it and reap it."""
    if spawn.cancelled() or spawn.exception() is not None:
        return
    process = spawn.result()
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    asyncio.get_running_loop().run_in_executor(None, process.wait)


async def _start(params: StdioServerParameters, errlog: TextIO) -> subprocess.Popen[bytes]:
    """The server's process, started in a worker thread; never left running if we are cancelled."""
    spawn = asyncio.ensure_future(asyncio.to_thread(_spawn, params, errlog))
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        spawn.add_done_callback(_discard)
        raise


async def _exited(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the process exited (and was reaped) within ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pause = 0.005
    while process.poll() is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.1)
    return True


async def _group_gone(group: int, timeout: float) -> bool:
    """Whether every process of ``group`` is gone within ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.05)


async def _stop(process: subprocess.Popen[bytes]) -> None:
    """The SDK's shutdown, with stdin already closed: wait, SIGTERM the group, SIGKILL it."""
    if await _exited(process, EXIT_GRACE):
        return
    group = process.pid  # start_new_session: the server leads its own process group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM)
        if not (await _exited(process, EXIT_GRACE) and await _group_gone(group, EXIT_GRACE)):
            os.killpg(group, signal.SIGKILL)
    if not await _exited(process, EXIT_GRACE):
        logger.warning("MCP server process %d did not exit after SIGKILL", process.pid)


@asynccontextmanager
async def stdio_streams(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[Streams]:
    """The read and write streams of a server over stdio, for ``mcp.ClientSession``.

    The server's stderr goes to ``errlog``. The server is stopped when the block is left.
    """
    process = await _start(params, errlog)
    assert process.stdin is not None and process.stdout is not None
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader()
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), process.stdout
        )
        write_transport, write_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, process.stdin
        )
    except BaseException:
        process.kill()
        await _exited(process, EXIT_GRACE)
        raise
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)

    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](
        0
    )
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def stdout_reader() -> None:
        decoder = codecs.getincrementaldecoder(params.encoding)(params.encoding_error_handler)
        try:
            async with read_stream_writer:
                buffer = ""
                while chunk := await reader.read(READ_CHUNK):
                    lines = (buffer + decoder.decode(chunk)).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        try:
                            message = types.JSONRPCMessage.model_validate_json(line)
                        except Exception as exc:
                            logger.exception("Failed to parse JSONRPC message from server")
                            await read_stream_writer.send(exc)
                            continue
                        await read_stream_writer.send(SessionMessage(message))
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async def stdin_writer() -> None:
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_none=True)
                    writer.write(
                        (json + "\n").encode(params.encoding, params.encoding_error_handler)
                    )
                    await writer.drain()
        except (anyio.ClosedResourceError, ConnectionError):
            # A server that exited: the reader sees the end of its output ("Connection closed").
            await anyio.lowlevel.checkpoint()

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stdout_reader)
            tasks.start_soon(stdin_writer)
            try:
                yield read_stream, write_stream
            finally:
                writer.close()  # the server's stdin ends: the MCP way to ask it to exit
                await _stop(process)
                for stream in (read_stream, write_stream, read_stream_writer, write_stream_reader):
                    await stream.aclose()
                tasks.cancel_scope.cancel()  # a grandchild may hold stdout open: stop reading
    finally:
        read_transport.close()
        write_transport.close()
        if process.poll() is None:  # cancelled while stopping it
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            await asyncio.shield(asyncio.to_thread(process.wait))
