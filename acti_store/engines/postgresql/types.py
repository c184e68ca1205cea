"""PostgreSQL's column types: the generic ones (``column_types.GenericTypes``); timestamps keep
their offset (``timestamp with time zone``)."""

from __future__ import annotations

from typing import Final

from ...column_types import GenericTypes

TYPES: Final = GenericTypes()
