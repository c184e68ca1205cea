"""The ``a``-prefixed coroutine twins of ``AgentRepository``'s methods, derived from the port.

Each twin is one line, ``aget = twin(RepositoryPort.get)``: a coroutine that runs the sync
method's own code through ``acall`` (``iteration``: an async iterator through ``aiterate``),
made from the method's signature as its line would be written by hand, so it has the sync
method's parameters (for a call, for ``inspect``, and for type checkers, which read them
through ``ParamSpec``), result and errors, and its docstring; no rule, statement or signature
exists twice. A new store operation gets its twin here, in one line.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .port import RepositoryPort

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def twin(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The coroutine twin of the port's ``method``: ``await self.acall(...)`` of it."""
    signature = inspect.signature(method)
    made: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]] = _made(
        method, signature, "async def", "await self.acall"
    )
    return made


def iteration(
    method: Callable[Concatenate[Any, P], Iterator[T]],
) -> Callable[Concatenate[Any, P], AsyncIterator[T]]:
    """The async iterator twin of the port's iterator ``method`` (``aiterate`` of it)."""
    signature = inspect.signature(method)
    returns = f"Async{signature.return_annotation}"  # Iterator[X] -> AsyncIterator[X]
    made: Callable[Concatenate[Any, P], AsyncIterator[T]] = _made(
        method, signature.replace(return_annotation=returns), "def", "self.aiterate"
    )
    return made


class _Default:
    """A parameter's default in the twin's source: the name it is bound to there."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _made(method: Callable[..., Any], signature: inspect.Signature, define: str, run: str) -> Any:
    """The twin of ``method``, written as its one line would be by hand (``async def aget(self,
    name): return await self.acall(lambda repo: repo.get(name))``) and compiled once: its
    parameters are the method's, so a call with wrong arguments fails where it is made, as the
    method's own call would, and nothing is added to a call's cost. Named, documented and signed
    (``inspect.signature``) as ``method``'s twin."""
    name = method.__name__
    defaults: dict[str, Any] = {}
    parameters, arguments = [], []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.default is not parameter.empty:
            defaults[f"_d{index}"] = parameter.default
            parameter = parameter.replace(default=_Default(f"_d{index}"))
        parameters.append(parameter.replace(annotation=parameter.empty))
        if index == 0:  # self
            continue
        kind = parameter.kind
        arguments.append(
            f"*{parameter.name}"
            if kind is parameter.VAR_POSITIONAL
            else f"**{parameter.name}"
            if kind is parameter.VAR_KEYWORD
            else f"{parameter.name}={parameter.name}"
            if kind is parameter.KEYWORD_ONLY
            else parameter.name
        )
    bare = signature.replace(parameters=parameters, return_annotation=signature.empty)
    source = (
        f"{define} a{name}{bare}:\n"
        f"    return {run}(lambda repo: repo.{name}({', '.join(arguments)}))\n"
    )
    namespace = dict(defaults)
    exec(compile(source, f"<twin of {name}>", "exec"), namespace)
    function = namespace[f"a{name}"]
    function.__qualname__ = f"AsyncTwins.a{name}"
    function.__module__ = __name__
    function.__doc__ = method.__doc__
    function.__signature__ = signature
    return function


class AsyncTwins:
    """The coroutine twins, mixed into ``AgentRepository`` (which defines ``acall``)."""

    if TYPE_CHECKING:

        async def acall(self, work: Callable[[RepositoryPort], T]) -> T: ...

        def aiterate(self, start: Callable[[RepositoryPort], Iterator[T]]) -> AsyncIterator[T]: ...

    acreate = twin(RepositoryPort.create)
    aget = twin(RepositoryPort.get)
    aexists = twin(RepositoryPort.exists)
    alist_agents = twin(RepositoryPort.list_agents)
    alist_names = twin(RepositoryPort.list_names)
    aupdate = twin(RepositoryPort.update)
    aupdate_returning_previous = twin(RepositoryPort.update_returning_previous)
    adelete = twin(RepositoryPort.delete)
    aclone = twin(RepositoryPort.clone)
    asearch = twin(RepositoryPort.search)
    acount = twin(RepositoryPort.count)
    asearch_page = twin(RepositoryPort.search_page)
    aiter_agents = iteration(RepositoryPort.iter_agents)
    acount_by_stratum = twin(RepositoryPort.count_by_stratum)
    afirst_by_stratum = twin(RepositoryPort.first_by_stratum)
    arecord_execution = twin(RepositoryPort.record_execution)
    aget_history = twin(RepositoryPort.get_history)
    aget_with_history = twin(RepositoryPort.get_with_history)
    aexecution_stats = twin(RepositoryPort.execution_stats)
    aarchived_history = twin(RepositoryPort.archived_history)
    aiter_export = iteration(RepositoryPort.iter_export)
    aiter_export_versions = iteration(RepositoryPort.iter_export_versions)
    abulk_put = twin(RepositoryPort.bulk_put)
    abulk_put_stream = twin(RepositoryPort.bulk_put_stream)
    aversions = twin(RepositoryPort.versions)
    aget_version = twin(RepositoryPort.get_version)
    adiff = twin(RepositoryPort.diff)
    arollback = twin(RepositoryPort.rollback)
    aset_label = twin(RepositoryPort.set_label)
    arollback_label = twin(RepositoryPort.rollback_label)
    alabel_weights = twin(RepositoryPort.label_weights)
    aresolve = twin(RepositoryPort.resolve)
    acompare_versions = twin(RepositoryPort.compare_versions)
    aprotect_label = twin(RepositoryPort.protect_label)
    aunprotect_label = twin(RepositoryPort.unprotect_label)
    alabel_gates = twin(RepositoryPort.label_gates)
    aremove_label = twin(RepositoryPort.remove_label)
    alabels = twin(RepositoryPort.labels)
    alabel_history = twin(RepositoryPort.label_history)
    aversion_stats = twin(RepositoryPort.version_stats)
    aversion_log = twin(RepositoryPort.version_log)
    aprune_versions = twin(RepositoryPort.prune_versions)
    achanges = twin(RepositoryPort.changes)
    alast_change = twin(RepositoryPort.last_change)
    aprune_changes = twin(RepositoryPort.prune_changes)
    acheckpoint = twin(RepositoryPort.checkpoint)
    asave_checkpoint = twin(RepositoryPort.save_checkpoint)
