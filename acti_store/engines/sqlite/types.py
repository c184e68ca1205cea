"""SQLite's column types: the generic ones (``column_types.GenericTypes``), and timestamps kept
as naive UTC text, written and read by C calls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from ...column_types import GenericTypes, TimestampProcessor
from ...schema import naive


class SqliteTypes(GenericTypes):
    naive_timestamps = True

    def timestamp_bind(self) -> TimestampProcessor | None:
        """The text SQLAlchemy's DATETIME writes ("2025-01-09 14:30:22.123456"), made by C calls
        instead of a Python format string: this runs for every stored timestamp."""

        def process(value: datetime | None) -> str | None:
            if value is None:
                return None
            offset = value.utcoffset()
            if offset is None:
                raise naive(value)
            if offset:
                value = value.astimezone(UTC)
            return value.isoformat(" ", "microseconds")[:-6]  # without its "+00:00"

        return process

    def timestamp_result(
        self, general: Callable[[Any], datetime | None]
    ) -> TimestampProcessor | None:
        """The stored text is naive UTC: appending the offset lets one C call parse it as aware
        UTC. Text written some other way takes the ``general`` path."""
        parse = datetime.fromisoformat

        def process(value: Any) -> datetime | None:
            if value is None:
                return None
            try:
                return parse(value + "+00:00")
            except (TypeError, ValueError):
                return general(value)

        return process


TYPES: Final = SqliteTypes()
