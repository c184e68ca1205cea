"""The engines the repository runs on, one module each, behind ``EngineStrategy`` (``base``).

``strategy_for`` is the one place an engine is chosen by name, and the one place an unknown
engine is refused: the code above never asks which engine it runs on (STYLE.md 11). A new
engine is a module here with a subclass of ``EngineStrategy`` (its transactions, run recording,
export reads, text index, bulk loading), entered in ``_ENGINES``; its connection policy goes to
``acti_store.engine`` and its error codes to ``acti_store.dberrors``.
"""

from __future__ import annotations

from typing import Final

from ...errors import StoreUrlError
from .base import EngineStrategy, TextIndex
from .mysql import MariadbEngine, MysqlEngine
from .postgresql import PostgresqlEngine
from .sqlite import SqliteEngine

#: The strategy of each engine, by SQLAlchemy dialect name (``Dialect.name``).
_ENGINES: Final[dict[str, EngineStrategy]] = {
    strategy.name: strategy
    for strategy in (SqliteEngine(), PostgresqlEngine(), MysqlEngine(), MariadbEngine())
}
#: The dialect names of the engines the repository runs on.
ENGINE_NAMES: Final = frozenset(_ENGINES)


def strategy_for(dialect_name: str) -> EngineStrategy:
    """The strategy of the engine ``dialect_name`` names; ``StoreUrlError`` for one the
    repository does not run on (``acti_store.engine.resolve_url`` refuses its URLs first)."""
    try:
        return _ENGINES[dialect_name]
    except KeyError:
        supported = ", ".join(sorted(_ENGINES))
        raise StoreUrlError(
            f"acti_store does not support {dialect_name} databases (it runs on {supported})"
        ) from None


__all__ = ["ENGINE_NAMES", "EngineStrategy", "TextIndex", "strategy_for"]
