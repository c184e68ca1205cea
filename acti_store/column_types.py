"""The package's column types whose form differs by engine, and the options of every table
acti_store creates on MariaDB/MySQL: the models (``acti_store.schema``) and the migrations use
the same column types, so ``alembic check`` finds no drift on any engine; the table options are
the migrations' (they create the tables; Alembic compares no table options).

Each type is a generic one (``impl``) that asks the engine of the dialect compiling it for a form
of its own (``engines/<engine>/types.py``: ``EngineTypes``), once per dialect: MariaDB/MySQL's
``TEXT`` holds 64 KiB (a system prompt holds up to 100,000 characters of four bytes), its
``FLOAT`` is single precision and its ``DATETIME`` keeps no fraction of a second unless told.
A table there takes the database's default collation, which ignores case (``Lead`` and ``lead``
would be one name): acti_store's tables compare text as bytes, like the other engines'. A
dialect acti_store does not run on (``str(statement)``'s default one) gets the generic types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, Final, Protocol, cast

from sqlalchemy import DateTime, Float, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from .engine_registry import find_engine

#: The dialect names of MariaDB and MySQL, for the revisions written before the engines were
#: folders (0008 and 0009), which keep their own checks.
MYSQL_DIALECTS: Final = ("mysql", "mariadb")
#: A timestamp's processor: what a driver is given for one, or what is made of what it gives.
TimestampProcessor = Callable[[Any], Any]


class EngineTypes(Protocol):
    """What an engine's ``types`` module gives (``TYPES``): its own form of each of the
    package's column types (None: the generic one), and how it keeps timestamps."""

    #: Timestamps kept without an offset (as naive UTC): SQLite and MariaDB keep none.
    naive_timestamps: bool

    def long_text(self) -> TypeEngine[Any] | None: ...

    def double_float(self) -> TypeEngine[Any] | None: ...

    def timestamp(self) -> TypeEngine[Any] | None: ...

    def timestamp_bind(self) -> TimestampProcessor | None:
        """A faster processor of the aware UTC timestamps a statement binds, if it has one."""

    def timestamp_result(
        self, general: Callable[[Any], datetime | None]
    ) -> TimestampProcessor | None:
        """A faster processor of the timestamps it gives back (``general`` for the rest)."""


class GenericTypes:
    """An engine's ``EngineTypes`` when it has no form of its own: the generic types,
    timestamps kept with their offset, SQLAlchemy's processors. An engine's ``types`` module
    overrides what it does otherwise."""

    naive_timestamps = False

    def long_text(self) -> TypeEngine[Any] | None:
        return None

    def double_float(self) -> TypeEngine[Any] | None:
        return None

    def timestamp(self) -> TypeEngine[Any] | None:
        return None

    def timestamp_bind(self) -> TimestampProcessor | None:
        return None

    def timestamp_result(
        self, general: Callable[[Any], datetime | None]
    ) -> TimestampProcessor | None:
        return None


def engine_types(dialect: Dialect) -> EngineTypes | None:
    """The column types of ``dialect``'s engine; None for a dialect acti_store does not run on."""
    entry = find_engine(dialect.name)
    return None if entry is None else cast(EngineTypes, entry.part("types").TYPES)


def naive_timestamps(dialect: Dialect) -> bool:
    """Whether ``dialect``'s engine keeps timestamps without an offset (as naive UTC)."""
    return _naive_timestamps(dialect.name)


@functools.cache
def _naive_timestamps(database: str) -> bool:  # asked for every timestamp a statement binds
    entry = find_engine(database)
    return entry is not None and bool(entry.part("types").TYPES.naive_timestamps)


class _EngineForm(TypeDecorator[Any]):
    """A generic type (``impl``) in the form the dialect's engine gives for its ``kind`` (an
    ``EngineTypes`` method), made when that dialect first asks: as ``with_variant`` would say,
    without importing an engine's SQLAlchemy dialect to build it, so a process on SQLite or
    PostgreSQL never loads MySQL's. The DDL, the bind and result processing and Alembic's type
    comparison come from the type each dialect compiles, as with a variant."""

    cache_ok = True
    kind: ClassVar[str]

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        types = engine_types(dialect)
        own = None if types is None else getattr(types, self.kind)()
        return self.impl_instance if own is None else dialect.type_descriptor(own)


class LongText(_EngineForm):
    """TEXT; MEDIUMTEXT (16 MiB) on MariaDB/MySQL."""

    impl = Text
    kind = "long_text"


class DoubleFloat(_EngineForm):
    """FLOAT; DOUBLE on MariaDB/MySQL, whose FLOAT is single precision."""

    impl = Float
    kind = "double_float"


class Timestamp(_EngineForm):
    """An aware timestamp; DATETIME(6) (naive UTC, to the microsecond) on MariaDB/MySQL."""

    impl = DateTime
    kind = "timestamp"


#: A long text (a system prompt, a task): MEDIUMTEXT on MariaDB/MySQL (16 MiB).
LONG_TEXT: Final = LongText()
#: A double-precision number (a duration): DOUBLE on MariaDB/MySQL.
DOUBLE_FLOAT: Final = DoubleFloat()
#: A timestamp to the microsecond: DATETIME(6) (naive UTC) on MariaDB/MySQL.
TIMESTAMP: Final = Timestamp(timezone=True)
#: The options of every table acti_store creates (MariaDB/MySQL's; ignored elsewhere).
TABLE_OPTIONS: Final = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}
