"""The engines the repository runs on, one module each, behind ``EngineStrategy`` (``base``).

``strategy_for`` is the one place an engine is chosen by name, and the one place an unknown
engine is refused: the code above never asks which engine it runs on (STYLE.md 11). A new
engine is a module here with a subclass of ``EngineStrategy`` (its transactions, run recording,
export reads, text index, bulk loading), entered in ``_ENGINES``; its connection policy goes to
``acti_store.engine`` and its error codes to ``acti_store.dberrors``.
"""

from __future__ import annotations

import importlib
from typing import Final

from ...errors import StoreUrlError
from .base import EngineStrategy, TextIndex

#: The module and class of each engine's strategy, by SQLAlchemy dialect name
#: (``Dialect.name``): a module is imported when its engine is first used, so a SQLite store
#: never loads SQLAlchemy's PostgreSQL or MySQL dialect (``tests/test_cold_start.py``).
_ENGINES: Final = {
    "sqlite": ("sqlite", "SqliteEngine"),
    "postgresql": ("postgresql", "PostgresqlEngine"),
    "mysql": ("mysql", "MysqlEngine"),
    "mariadb": ("mysql", "MariadbEngine"),
}
#: The dialect names of the engines the repository runs on.
ENGINE_NAMES: Final = frozenset(_ENGINES)
#: The strategies made so far (one per engine and process).
_STRATEGIES: Final[dict[str, EngineStrategy]] = {}


def strategy_for(dialect_name: str) -> EngineStrategy:
    """The strategy of the engine ``dialect_name`` names; ``StoreUrlError`` for one the
    repository does not run on (``acti_store.engine.resolve_url`` refuses its URLs first)."""
    strategy = _STRATEGIES.get(dialect_name)
    if strategy is not None:
        return strategy
    try:
        module, name = _ENGINES[dialect_name]
    except KeyError:
        supported = ", ".join(sorted(_ENGINES))
        raise StoreUrlError(
            f"acti_store does not support {dialect_name} databases (it runs on {supported})"
        ) from None
    made: EngineStrategy = getattr(importlib.import_module(f".{module}", __name__), name)()
    return _STRATEGIES.setdefault(dialect_name, made)


__all__ = ["ENGINE_NAMES", "EngineStrategy", "TextIndex", "strategy_for"]
