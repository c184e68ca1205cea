"""Helpers for tests and demos that must not call a real model.

``ScriptedChatModel`` answers with a script: scripted ``AIMessage``s (text and tool calls), in
order, or steps that look at the conversation so far and decide (react to a tool result, or raise to
simulate a failing model). It accepts ``bind_tools`` (returning itself) so ``create_deep_agent``
and ``create_agent`` can use it, and remembers what it was shown::

    model = ScriptedChatModel(script=[
        calls(tool_call("crm_lookup_contact", company="Acme Corp")),
        lambda messages: AIMessage(f"Done: {messages[-1].text}"),
    ])
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr, SkipValidation

#: A scripted reply: a message, or a function of the messages so far that returns one.
Step = AIMessage | Callable[[Sequence[BaseMessage]], AIMessage]


def tool_call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call for a scripted ``AIMessage``, with a fresh id."""
    return ToolCall(name=name, args=arguments, id=f"call_{uuid.uuid4().hex[:12]}", type="tool_call")


def calls(*tool_calls: ToolCall, text: str = "") -> AIMessage:
    """An ``AIMessage`` that makes ``tool_calls`` (and says ``text``)."""
    return AIMessage(content=text, tool_calls=list(tool_calls))


class ScriptExhaustedError(RuntimeError):
    """The model was called more often than its script has steps."""


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays ``script``, one step per call.

    ``delay`` (seconds) is waited before each reply, asynchronously in async calls, to simulate a
    slow model. With ``loop=True`` the script starts over when it runs out; otherwise a call past
    its end raises ``ScriptExhaustedError``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: SkipValidation[list[Step]] = Field(default_factory=list)
    delay: float = Field(default=0.0, ge=0)
    loop: bool = False

    _position: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _bound_tools: list[str] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages the model was given, one list per call."""
        return self._calls

    @property
    def bound_tools(self) -> list[str]:
        """Names of the tools last bound with ``bind_tools``."""
        return self._bound_tools

    @property
    def remaining(self) -> int:
        """Steps not yet replayed."""
        return len(self.script) - self._position

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self._bound_tools = [
            tool.name
            if isinstance(tool, BaseTool)
            else convert_to_openai_tool(tool)["function"]["name"]
            for tool in tools
        ]
        return self

    def _next_message(self, messages: list[BaseMessage]) -> AIMessage:
        self._calls.append(list(messages))
        if self._position >= len(self.script):
            if not (self.loop and self.script):
                raise ScriptExhaustedError(
                    f"the script has {len(self.script)} step(s) and all were used"
                )
            self._position = 0
        step = self.script[self._position]
        self._position += 1
        message = step(list(messages)) if callable(step) else step
        reply = message.model_copy(deep=True)
        reply.id = None
        return reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            time.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next_message(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next_message(messages))])


__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "Step", "calls", "tool_call"]
