"""Size bounds of the tools' texts: what keeps a text about many agents or records, or about one
long prompt, within a size that does not grow with the store (numbers in ``texts``).

Pure functions on text: no I/O, no templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable


def fitting(entries: Iterable[str], budget: int) -> list[str]:
    """The leading ``entries`` whose text, joined by blank lines, stays within ``budget``
    characters (the first entry always: each is bounded by the field limits)."""
    shown: list[str] = []
    used = -2
    for entry in entries:
        used += len(entry) + 2
        if shown and used > budget:
            break
        shown.append(entry)
    return shown


def json_cut(text: str, limit: int) -> str | None:
    """``text`` cut so that it renders as at most ``limit`` characters of JSON string (escapes
    included), ending in ``...``; None when it fits whole."""
    if len(json.dumps(text, ensure_ascii=False)) <= limit:
        return None
    cut = text[:limit]
    while len(json.dumps(cut + "...", ensure_ascii=False)) > limit:
        encoded = len(json.dumps(cut, ensure_ascii=False))
        cut = cut[: max(0, min(len(cut) - 1, len(cut) * (limit - 5) // encoded))]
    return cut + "..."
