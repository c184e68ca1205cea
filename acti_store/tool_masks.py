"""The tool categories as bits: ``agents.tools_mask`` (``schema``), one bit per category, so
that "has ALL of these tools" is ``tools_mask IN (<every mask that contains them>)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .models import TOOL_CATEGORIES


def _checked_bits(bits: dict[str, int]) -> dict[str, int]:
    """``bits``, once sure it gives every category of ``TOOL_CATEGORIES`` (and nothing else) a
    bit of its own."""
    values = list(bits.values())
    distinct = len(set(values)) == len(values)
    single = all(bit > 0 and bit & (bit - 1) == 0 for bit in values)
    if set(bits) != set(TOOL_CATEGORIES) or not (distinct and single):
        raise RuntimeError(
            f"TOOL_BITS must give each of {TOOL_CATEGORIES} a bit of its own: {bits}"
        )
    return bits


#: Bit of each tool category in ``agents.tools_mask``. Written in every stored row, so a
#: category keeps its bit for good: spelled out here, never derived from the order of
#: ``TOOL_CATEGORIES`` (a new category takes a new bit; migration 0002 holds a frozen copy).
TOOL_BITS: Final[Mapping[str, int]] = _checked_bits(
    {"voice": 1, "websearch": 2, "calendar": 4, "communication": 8, "crm": 16}
)
#: Every bit a mask can hold.
_ALL_TOOLS_MASK: Final = sum(TOOL_BITS.values())


def tools_mask(tools: list[str]) -> int:
    """The bit mask of a list of tool categories."""
    mask = 0
    for tool in tools:
        mask |= TOOL_BITS[tool]
    return mask


def masks_containing(tools: list[str]) -> list[int]:
    """Every mask that has all of ``tools``: the values ``tools_mask IN (...)`` must match."""
    required = tools_mask(tools)
    return [
        m
        for m in range(_ALL_TOOLS_MASK + 1)
        if m & required == required and m & _ALL_TOOLS_MASK == m
    ]
