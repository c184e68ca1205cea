"""Column types whose MariaDB/MySQL form is not SQLAlchemy's generic one, and the options of
every table acti_store creates there: the models (``acti_store.schema``) and the migrations
use the same ones, so ``alembic check`` finds no drift on any engine.

MariaDB/MySQL's ``TEXT`` holds 64 KiB (a system prompt holds up to 100,000 characters of four
bytes), its ``FLOAT`` is single precision and its ``DATETIME`` keeps no fraction of a second
unless told; and a table takes the database's default collation, which ignores case (``Lead``
and ``lead`` would be one name): acti_store's tables compare text as bytes, like the other
engines. Elsewhere these are the generic types, and the options are ignored.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import DateTime, Float, Text
from sqlalchemy.dialects.mysql import DATETIME, DOUBLE, MEDIUMTEXT

#: The SQLAlchemy dialect names of MariaDB and MySQL (``mysql+pymysql://``, ``mariadb+...``).
MYSQL_DIALECTS: Final = ("mysql", "mariadb")

#: A long text (a system prompt, a task): MEDIUMTEXT on MariaDB/MySQL (16 MiB).
LONG_TEXT: Final = Text().with_variant(MEDIUMTEXT(), *MYSQL_DIALECTS)
#: A double-precision number (a duration): DOUBLE on MariaDB/MySQL.
DOUBLE_FLOAT: Final = Float().with_variant(DOUBLE(asdecimal=False), *MYSQL_DIALECTS)
#: A timestamp to the microsecond: DATETIME(6) (naive UTC) on MariaDB/MySQL.
TIMESTAMP: Final = DateTime(timezone=True).with_variant(DATETIME(fsp=6), *MYSQL_DIALECTS)
#: The options of every table acti_store creates (MariaDB/MySQL's; ignored elsewhere).
TABLE_OPTIONS: Final = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}
