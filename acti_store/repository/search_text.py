"""A search's text: its words, their ``LIKE`` patterns, and the engine's text-index probe.

Every word must be a case-insensitive substring of the name or the description. Where the
engine has a text index (``TextIndex``), the words it serves are probed first: a selective probe
turns them into an id list, a count takes the index's whole match; the words the index does not
serve, and the agents it may hold with an older text, are still tested by ``LIKE``
(``search_filters._contain``).
"""

from __future__ import annotations

from ..sqlexec import Cursor
from .strategy import TextIndex


def _words(query: str | None) -> list[str]:
    """The distinct words of a text query, in lower case: each must be in the name or the
    description (a repeated word adds no condition)."""
    return list(dict.fromkeys(query.lower().split())) if query else []


def _indexed(words: list[str], index: TextIndex | None) -> list[str]:
    """The words the engine's text index serves (none without one)."""
    return [w for w in words if len(w) >= index.min_word] if index is not None else []


def _text_values(
    cursor: Cursor, query: str | None, index: TextIndex | None, whole: bool = False
) -> tuple[list[str], list[int] | None, list[str], str | None]:
    """The ``LIKE`` patterns of ``query``'s words every row is tested for; with the engine's
    text ``index``, a selective probe's ids (or, ``whole``, the value of the index's whole
    match) and the patterns the agents the index may not hold with their current text
    (``changed_ids``) are tested for instead.

    Every word must be a case-insensitive substring of the name or the description. The index
    (SQLite's trigram index: ``engines.sqlite.statements``; MariaDB's:
    ``engines.mariadb.statements``) is probed for the words it serves, up to a cap of matches among
    the agents it holds. Fewer matches (a selective query) become an id list, plus the changed
    agents whose current text contains the words (an index without ``changed_ids`` has none); an
    index that is not ``exact`` gives candidates, tested for every word by ``LIKE`` as well. A probe
    that fills up (None) means the words are common, and then an ordered scan that checks ``LIKE``
    row by row finds ``limit`` hits sooner than collecting every match would. A count (``whole``)
    wants every match: the index's own, in the statement (``TextIndex.matches``), with no probe.
    """
    words = _words(query)
    ids: list[int] | None = None
    matched: str | None = None
    logged: list[str] = []
    indexed = _indexed(words, index)
    if indexed and index is not None:
        if whole:
            matched = index.match_value(indexed)
        elif (found := index.probe(cursor, indexed)) is not None:
            ids = found
        if ids is not None or matched is not None:
            if index.changed_ids is not None:
                logged = [_pattern(w) for w in indexed]
            if index.exact:
                words = [w for w in words if len(w) < index.min_word]
    return [_pattern(w) for w in words], ids, logged, matched


def _pattern(word: str) -> str:
    return f"%{escape_like(word)}%"


def escape_like(text: str, escape: str = "\\") -> str:
    """Make ``%`` and ``_`` literal in a LIKE pattern."""
    return (
        text.replace(escape, escape + escape).replace("%", escape + "%").replace("_", escape + "_")
    )
