"""The chat model of a run: the runner's own, its factory's, or ``init_chat_model``'s after the
provider's API key is checked; else the report saying why there is none (not a run)."""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models import BaseChatModel

from ..models import DEFAULT_MODEL
from . import texts
from .outcome import Outcome, RunState
from .redaction import MODEL_API_KEYS
from .results import MODEL_ERROR, describe_error

#: What ``AgentRunner(model=...)`` may be instead of a chat model: a callable taking the agent's
#: model string and returning its chat model.
ModelFactory = Callable[[str], BaseChatModel]


def resolve_model(
    state: RunState,
    model: BaseChatModel | ModelFactory | None,
    calls: texts.RunCalls,
    init: ModelFactory,
) -> BaseChatModel | Outcome:
    """The chat model for this run, or the report saying why there is none (not a run).

    ``model`` is the runner's: a chat model, a factory, or ``None`` for ``init`` (the runner's
    ``init_chat_model``), called once the provider's API key is found in the run's environment.
    """
    agent = state.agent
    try:
        if isinstance(model, BaseChatModel):
            return model
        if model is not None:
            return model(agent.model)
        provider = agent.model.split(":", 1)[0]
        keys = MODEL_API_KEYS.get(provider, ())
        if keys and not any(state.environ.get(k) for k in keys):
            problem = texts.MODEL_MISSING_KEY.format(variables=" or ".join(keys))
            fix = texts.MODEL_FIX_KEY.format(variable=keys[0])
            return model_error(state, problem, fix, calls)
        return init(agent.model)
    except ImportError as exc:
        return model_error(state, describe_error(exc), texts.MODEL_FIX_INSTALL, calls)
    except Exception as exc:
        fix = texts.MODEL_FIX_NAME.format(example=DEFAULT_MODEL)
        return model_error(state, describe_error(exc), fix, calls)


def model_error(state: RunState, problem: str, fix: str, calls: texts.RunCalls) -> Outcome:
    """The report of a run without a chat model: ``problem``, and ``fix`` to do next."""
    agent = state.agent
    result = state.result(success=False, error=problem, error_type=MODEL_ERROR)
    return Outcome(
        result,
        lambda r: texts.render_model_unavailable(
            agent.name, agent.model, r.error or "", fix, calls
        ),
        recorded=False,
    )
