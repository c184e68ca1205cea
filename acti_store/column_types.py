"""Column types whose MariaDB/MySQL form is not SQLAlchemy's generic one, and the options of
every table acti_store creates there: the models (``acti_store.schema``) and the migrations
use the same column types, so ``alembic check`` finds no drift on any engine; the table options
are the migrations' (they create the tables; Alembic compares no table options).

MariaDB/MySQL's ``TEXT`` holds 64 KiB (a system prompt holds up to 100,000 characters of four
bytes), its ``FLOAT`` is single precision and its ``DATETIME`` keeps no fraction of a second
unless told; and a table takes the database's default collation, which ignores case (``Lead``
and ``lead`` would be one name): acti_store's tables compare text as bytes, like the other
engines. Elsewhere these are the generic types, and the options are ignored.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import DateTime, Float, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

#: The SQLAlchemy dialect names of MariaDB and MySQL (``mysql+pymysql://``, ``mariadb+...``).
MYSQL_DIALECTS: Final = ("mysql", "mariadb")


class _MysqlVariant(TypeDecorator[Any]):
    """A generic type (``impl``) whose MariaDB/MySQL form (``mysql_type``) is made when that
    dialect first asks: what ``Text().with_variant(MEDIUMTEXT(), "mysql")`` says, without
    importing SQLAlchemy's MySQL dialect to build the variant, so a process on SQLite or
    PostgreSQL never loads it. The DDL, the bind and result processing and Alembic's type
    comparison come from the type each dialect compiles, as with the variant."""

    cache_ok = True

    def mysql_type(self) -> TypeEngine[Any]:
        raise NotImplementedError

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in MYSQL_DIALECTS:
            return dialect.type_descriptor(self.mysql_type())
        return self.impl_instance


class LongText(_MysqlVariant):
    """TEXT; MEDIUMTEXT (16 MiB) on MariaDB/MySQL."""

    impl = Text

    def mysql_type(self) -> TypeEngine[Any]:
        from sqlalchemy.dialects.mysql import MEDIUMTEXT

        return MEDIUMTEXT()


class DoubleFloat(_MysqlVariant):
    """FLOAT; DOUBLE on MariaDB/MySQL, whose FLOAT is single precision."""

    impl = Float

    def mysql_type(self) -> TypeEngine[Any]:
        from sqlalchemy.dialects.mysql import DOUBLE

        return DOUBLE(asdecimal=False)


class Timestamp(_MysqlVariant):
    """An aware timestamp; DATETIME(6) (naive UTC, to the microsecond) on MariaDB/MySQL."""

    impl = DateTime

    def mysql_type(self) -> TypeEngine[Any]:
        from sqlalchemy.dialects.mysql import DATETIME

        return DATETIME(fsp=6)


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
