"""The ACTi Agent Builder's tools: LangChain tools over the store, and the builder agent.

``BUILDER_TOOLS`` and ``ASYNC_TOOLS`` are bound to the default store (``open_repository()``,
opened on first use); ``make_builder_tools(repo)`` binds the same ten tools to another store, and
``make_version_tools(repo)`` the six version tools.

The exports load on first use: the tools' logic (``builder``, ``schemas``, ``render``) works
without importing LangChain's tool classes, so commands that never build a LangChain tool (the
CLI's ``migrate``, ``export``, ...) do not pay for them. ``ASYNC_TOOLS`` also loads the agent
stack that ``execute_created_agent`` runs on (``defaults.load_agent_stack``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .agent import BUILDER_SYSTEM_PROMPT, create_builder_agent
    from .defaults import ASYNC_TOOLS, BUILDER_TOOLS
    from .langchain_tools import make_builder_tools, make_version_tools

#: Each export and the module that defines it.
_EXPORTS: Final = {
    "ASYNC_TOOLS": "defaults",
    "BUILDER_SYSTEM_PROMPT": "agent",
    "BUILDER_TOOLS": "defaults",
    "create_builder_agent": "agent",
    "make_builder_tools": "langchain_tools",
    "make_version_tools": "langchain_tools",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    exports = importlib.import_module(f".{module}", __name__)
    if name == "ASYNC_TOOLS":  # an async app: the agent stack now, not on its event loop
        exports.load_agent_stack()
    return getattr(exports, name)


__all__ = [
    "ASYNC_TOOLS",
    "BUILDER_SYSTEM_PROMPT",
    "BUILDER_TOOLS",
    "create_builder_agent",
    "make_builder_tools",
    "make_version_tools",
]
