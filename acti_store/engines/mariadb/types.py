"""MariaDB's and MySQL's column types (``column_types.EngineTypes``): ``TEXT`` holds 64 KiB, so
a long text is ``MEDIUMTEXT`` (16 MiB); ``FLOAT`` is single precision, so a double is
``DOUBLE``; ``DATETIME`` keeps no fraction of a second unless told, and no offset, so a
timestamp is ``DATETIME(6)`` of naive UTC. SQLAlchemy's MySQL types are imported when the
dialect first asks, so a process on another engine never loads them."""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy.types import TypeEngine

from ...column_types import GenericTypes


class MariadbTypes(GenericTypes):
    naive_timestamps = True

    def long_text(self) -> TypeEngine[Any] | None:
        from sqlalchemy.dialects.mysql import MEDIUMTEXT

        return MEDIUMTEXT()

    def double_float(self) -> TypeEngine[Any] | None:
        from sqlalchemy.dialects.mysql import DOUBLE

        return DOUBLE(asdecimal=False)

    def timestamp(self) -> TypeEngine[Any] | None:
        from sqlalchemy.dialects.mysql import DATETIME

        return DATETIME(fsp=6)


TYPES: Final = MariadbTypes()
