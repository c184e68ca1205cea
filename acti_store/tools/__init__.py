"""The ACTi Agent Builder's tools: LangChain tools over the store, and the builder agent.

``BUILDER_TOOLS`` and ``ASYNC_TOOLS`` are bound to the default store (``open_repository()``,
opened on first use); ``make_builder_tools(repo)`` binds the same ten tools to another store.
"""

from .agent import BUILDER_SYSTEM_PROMPT, create_builder_agent
from .defaults import ASYNC_TOOLS, BUILDER_TOOLS
from .specs import make_builder_tools

__all__ = [
    "ASYNC_TOOLS",
    "BUILDER_SYSTEM_PROMPT",
    "BUILDER_TOOLS",
    "create_builder_agent",
    "make_builder_tools",
]
