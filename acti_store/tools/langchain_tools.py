"""The LangChain tools of ``specs``' declarations: ``BuilderTool`` and the functions that make them.

Apart from ``specs`` so that what only reads the declarations (the MCP server's tools, the
CLI) does not import LangChain: ``specs`` gives these names on first use (PEP 562).
"""

from __future__ import annotations

import contextlib
import importlib
from types import MethodType
from typing import TYPE_CHECKING, Any, Final

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ValidationError

from ..repository import AgentRepository
from .builder import BuilderTools
from .outcomes import Result, arguments_refused
from .specs import TOOL_SPECS, VERSION_TOOL_SPECS, StoreBound, ToolSpec, tool_coroutine
from .version_tools import VersionTools

if TYPE_CHECKING:
    from ..execution import AgentRunner

#: What LangChain imports on the first call of any tool (its tracing callbacks): imported with the
#: tools, so that the first ``ainvoke`` does not spend tens of ms importing on the event loop.
FIRST_CALL_IMPORTS: Final = (
    "langchain_core.tracers.context",
    "langchain_core.tracers.langchain",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
    "langsmith.run_helpers",
    "tenacity.asyncio",
)
for _module in FIRST_CALL_IMPORTS:
    with contextlib.suppress(ImportError):  # private modules of a dependency may move
        importlib.import_module(_module)

#: Keyword arguments ``BuilderTool`` passes from parsing to running, next to the tool's own (no
#: tool argument can have these names: they are not identifiers).
_REFUSAL: Final = "<refusal>"
_CALL_ID: Final = "<tool_call_id>"


class BuilderTool(StructuredTool):
    """A structured tool whose every answer is ``(text, artifact)``, refusals included.

    Arguments the args schema refuses (a required one missing, no mapping at all) are answered by
    the tool, not by LangChain's ``handle_validation_error``: the same ERROR text, with its
    artifact. Invoked with a tool call, an ERROR answer is a ``ToolMessage`` with
    ``status="error"`` (what LangGraph's ``ToolNode`` and agents read); invoked with plain
    arguments, the text as before.
    """

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        try:
            args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        except ValidationError as exc:
            args, kwargs = (), {_REFUSAL: arguments_refused(self.name, exc)}
        return args, {**kwargs, _CALL_ID: tool_call_id}

    def _answer(self, result: Result, call_id: str | None) -> tuple[Any, dict[str, Any]]:
        """``result``, its text as an error ``ToolMessage`` when it refuses a tool call."""
        text, artifact = result
        if call_id is None or artifact.get("status") != "error":
            return result
        message = ToolMessage(
            text, artifact=artifact, tool_call_id=call_id, name=self.name, status="error"
        )
        return message, artifact

    def _run(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        call_id = kwargs.pop(_CALL_ID, None)
        result = kwargs.pop(_REFUSAL, None) or super()._run(
            *args, config=config, run_manager=run_manager, **kwargs
        )
        return self._answer(result, call_id)

    async def _arun(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        call_id = kwargs.pop(_CALL_ID, None)
        result = kwargs.pop(_REFUSAL, None) or await super()._arun(
            *args, config=config, run_manager=run_manager, **kwargs
        )
        return self._answer(result, call_id)


def builder_tools(builder: BuilderTools) -> list[BaseTool]:
    """The ten tools of ``builder``, in the contract's order."""
    return _structured_tools(builder, TOOL_SPECS)


def _structured_tools(owner: StoreBound, specs: tuple[ToolSpec, ...]) -> list[BaseTool]:
    """The LangChain tools of ``specs``, their methods bound to ``owner``."""
    return [
        BuilderTool.from_function(
            func=MethodType(spec.method, owner),
            coroutine=tool_coroutine(owner, spec),
            name=spec.name,
            description=spec.description,
            args_schema=spec.args_schema,
            response_format="content_and_artifact",
        )
        for spec in specs
    ]


def make_builder_tools(
    repo: AgentRepository,
    *,
    model: Any = None,
    mcp_catalog: Any = None,
    runner: AgentRunner | None = None,
) -> list[BaseTool]:
    """The ten builder tools bound to ``repo``, in the contract's order.

    ``model`` and ``mcp_catalog`` go to the runner of ``execute_created_agent`` (created on first
    use): the chat model to run agents with (default: each agent's configured model) and the MCP
    server catalog. Or ``runner``: an ``AgentRunner`` of ``repo`` that runs the agents, e.g. one
    keeping MCP servers warm (``keep_servers``; its owner closes it); it has its own model and
    catalog, so it comes without ``model`` and ``mcp_catalog``.
    """
    if runner is not None:
        if model is not None or mcp_catalog is not None:
            raise ValueError("give model and mcp_catalog to the runner, not with it")
        if runner.repo is not repo:
            raise ValueError("the runner records runs in another repository than repo")
    return builder_tools(
        BuilderTools(lambda: repo, model=model, mcp_catalog=mcp_catalog, runner=runner)
    )


def make_version_tools(repo: AgentRepository) -> list[BaseTool]:
    """The six version tools bound to ``repo``: ``list_agent_versions``,
    ``diff_agent_versions``, ``rollback_agent_config``, ``set_agent_label`` (a version, or a
    weighted split), ``rollback_agent_label`` and ``compare_agent_versions``. ``TypeError``
    for a store without the ``versions`` part of the port (``RepositoryPort.parts``)."""
    parts = getattr(type(repo), "parts", None)  # a port's; tools bound to no store yet: None
    if parts is not None and "versions" not in parts:
        raise TypeError(
            f"{type(repo).__name__} keeps no configuration versions (it has no 'versions' "
            "part): the version tools need a store that has"
        )
    return version_tools(BuilderTools(lambda: repo))


def version_tools(builder: BuilderTools) -> list[BaseTool]:
    """The six version tools over the repository of ``builder``."""
    return _structured_tools(VersionTools(builder), VERSION_TOOL_SPECS)
