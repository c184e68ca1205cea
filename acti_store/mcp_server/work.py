"""Where the server's store work runs: in worker threads, never on the event loop.

The one place the MCP server leaves its loop: every tool call, resource read and check of the
store goes through ``off_loop``. A tool with a native coroutine (``execute_created_agent``'s) is
awaited instead: it keeps its own store work off the loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")


async def off_loop(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread (anyio's pool, 40 at a time), awaited."""
    return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs))
