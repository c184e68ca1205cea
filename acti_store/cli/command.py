"""What a command is and how it ends: ``Command``, its refusal ``CommandFailed`` (one
``error: ...`` line on stderr, status 1), and the builder tools it calls (``cli_tools``), whose
answer it prints or refuses on one line (``emit``, ``one_line``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # loaded by the functions that use them: a command's parser needs none
    from ..repository import AgentRepository
    from ..tools.builder import BuilderTools
    from ..tools.outcomes import Result

Command = Callable[[argparse.Namespace], int]
"""A command: the parsed arguments in, the exit status out."""


class CommandFailed(Exception):
    """A command's refusal (a tool's ``ERROR:`` text, a failed run, ...), raised with one line.

    ``main`` prints it as ``error: <line>`` on stderr and exits 1: results go to stdout, errors
    to stderr, whatever the command.
    """


#: The marker of an item line in a tool's text (``  - name``, ``  1. Choose ...``).
_ITEM: Final = re.compile(r"^(?:- |\d+\. )")


def one_line(text: str) -> str:
    """A tool's ``ERROR: ...`` text as one line, nothing left out: the ``ERROR:`` prefix goes,
    list items (``- ...``, ``1. ...``) are joined by ``; ``, a list is ended as a sentence, other
    lines and paragraphs are joined by a space.

    ``ERROR: Agent 'x' not found.\\n\\nAvailable agents (2):\\n  - a\\n  - b`` becomes
    ``Agent 'x' not found. Available agents (2): a; b``.
    """
    paragraphs = re.split(r"\n\s*\n", text.strip().removeprefix("ERROR:").strip())
    parts = [
        _sentences(line.strip() for line in paragraph.splitlines() if line.strip())
        for paragraph in paragraphs
    ]
    return " ".join(
        part if index == len(parts) - 1 or part.endswith((".", ":", "!", "?")) else f"{part}."
        for index, part in enumerate(parts)
    )


def _sentences(lines: Iterable[str]) -> str:
    """``lines`` on one line: list items joined by ``; ``, a list ended as a sentence."""
    text, in_list = "", False
    for line in lines:
        item = bool(_ITEM.match(line))
        if not text:
            text = line
        elif item and in_list:
            text += f"; {_ITEM.sub('', line)}"
        else:
            ended = not in_list or text.endswith((".", ":", "!", "?"))
            text += f"{'' if ended else '.'} {_ITEM.sub('', line)}"
        in_list = item
    return text


def emit(result: Result, after: str | None = None) -> int:
    """Print a tool's answer: on success its text (then ``after``, if any) on stdout, status 0;
    an ``ERROR:`` answer raises ``CommandFailed`` with its text on one line."""
    text, artifact = result
    if artifact["status"] != "success":
        raise CommandFailed(one_line(text))
    print(text)
    if after is not None:
        print(after)
    return 0


def cli_tools(repo: AgentRepository) -> BuilderTools:
    """The builder tools' logic bound to ``repo``, its texts naming ``acti-store`` commands."""
    from ..tools.builder import BuilderTools
    from ..tools.texts import CLI_CALLS

    return BuilderTools(lambda: repo, calls=CLI_CALLS)
