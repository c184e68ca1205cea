"""The contract's module exports, bound to the default store: ``BUILDER_TOOLS`` and ``ASYNC_TOOLS``.

The default store is ``open_repository()`` (``ACTI_STORE_URL``, else the SQLite file), opened on
first use: importing this module opens nothing. ``default_repository.close()`` forgets it, so the
next use opens it again (e.g. after a change of ``ACTI_STORE_URL``).

Taking ``ASYNC_TOOLS`` (or a ``*_async`` name) from ``acti_store.tools`` also imports the agent
stack (``load_agent_stack``), so that an async app pays for it at startup, not on its loop.
"""

from __future__ import annotations

import importlib
import threading
from typing import Final

from langchain_core.tools import BaseTool

from ..bootstrap import open_repository
from ..repository import AgentRepository
from .builder import BuilderTools
from .langchain_tools import builder_tools
from .specs import AsyncVariant, async_variants


class _LazyRepository:
    """``open_repository()`` on first use (importing this module opens nothing)."""

    def __init__(self) -> None:
        self._repo: AgentRepository | None = None
        self._lock = threading.Lock()

    def __call__(self) -> AgentRepository:
        with self._lock:
            if self._repo is None:
                self._repo = open_repository()
            return self._repo

    def opened(self) -> AgentRepository | None:
        """The default store if it is open (``BuilderTools.arepo`` opens it in a thread)."""
        return self._repo

    def close(self) -> None:
        """Close the default store; the next use opens it again (e.g. a new ACTI_STORE_URL)."""
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None


def load_agent_stack() -> None:
    """Import what running an agent needs (deepagents, LangChain, the MCP client), if installed.

    That takes seconds and holds the GIL for long stretches, even in a worker thread (a full
    garbage collection of the new objects alone takes 0.1-0.3 s): left to an event loop's first
    ``execute_created_agent``, it would stall the loop for hundreds of milliseconds.
    """
    try:
        importlib.import_module("acti_store.execution.runner")
    except ModuleNotFoundError as exc:  # the ``agents`` extra is missing: refused when used
        if (exc.name or "").partition(".")[0] == "acti_store":
            raise  # a module of ours: a bug, not a missing extra


default_repository: Final = _LazyRepository()
_DEFAULT: Final = BuilderTools(default_repository)

#: The ten tools of the builder agent, bound to the default store, in the contract's order.
BUILDER_TOOLS: Final[list[BaseTool]] = builder_tools(_DEFAULT)

#: The contract's async variants (for FastAPI), bound to the default store: the tool's text.
ASYNC_TOOLS: Final[dict[str, AsyncVariant]] = async_variants(_DEFAULT)


def __getattr__(name: str) -> AsyncVariant:
    """The contract's names of the async variants: ``create_agent_config_async``, ..."""
    variant = ASYNC_TOOLS.get(name.removesuffix("_async")) if name.endswith("_async") else None
    if variant is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load_agent_stack()
    return variant


__all__ = ["ASYNC_TOOLS", "BUILDER_TOOLS", "default_repository", "load_agent_stack"]
