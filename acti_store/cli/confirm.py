"""Printed commands that are complete, and confirmations bound to what they confirm.

A command ``acti-store`` prints for a person to run (``program``) starts with the options that
chose the store, schema and tenant, given or taken from the environment, so that pasted into
another shell it acts on the same agent: a URL with a password, or from ``ACTI_STORE_URL``, is
referred to as ``--url "$ACTI_STORE_URL"``, never shown; a relative SQLite path is made absolute.

A preview's hint (delete, rollback, a forced label move) confirms with ``--confirm CODE``: a
short hash of the store, schema, tenant, agent and what the preview showed (``code``). Run
against another store or tenant, or after the agent or label moved on, the code no longer
matches and the command is refused (``check``), like ``git push --force-with-lease``. A bare
``--yes`` (``--force``), typed by a script that saw no preview, works as before.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from typing import TYPE_CHECKING, Final

from ..engine import store_schema
from ..repository import SqlAgentRepository
from ..tools.builder import BuilderTools
from ..tools.texts import CLI_CALLS
from .options import CommandFailed
from .options import program as program  # the start of a printed command

if TYPE_CHECKING:
    from ..tools.version_tools import VersionTools

#: How many hexadecimal digits of the SHA-256 a code keeps: a mistake, not an attacker, is what
#: it catches.
CODE_LENGTH: Final = 8
_CODE: Final = re.compile(f"[0-9a-f]{{{CODE_LENGTH}}}")

#: Help of ``--confirm``.
CONFIRM_HELP: Final = (
    "do it, only if CODE (printed by the preview) still matches the store, tenant and agent "
    "this command acts on; else nothing is changed and the command fails"
)

#: Why a confirmation code is refused: one line, naming what the command would act on now.
STALE: Final = (
    "--confirm {given} does not match what this command would act on now: {what} in the store "
    "at {location}{schema}, tenant '{tenant}'. It was printed for another store, tenant or "
    "state; nothing was changed (run the command without --confirm to see it again)"
)


def confirm_code(text: str) -> str:
    """``--confirm CODE``: ``CODE_LENGTH`` hexadecimal digits (case ignored)."""
    code = text.strip().lower()
    if not _CODE.fullmatch(code):
        raise argparse.ArgumentTypeError(
            f"a confirmation code is {CODE_LENGTH} hexadecimal digits, as the preview prints it"
        )
    return code


def add_confirm_option(parser: argparse.ArgumentParser) -> None:
    """``--confirm CODE``: the bound confirmation a preview prints."""
    parser.add_argument(
        "--confirm", type=confirm_code, default=None, metavar="CODE", help=CONFIRM_HELP
    )


def code(repo: SqlAgentRepository, name: str, *shown: object) -> str:
    """The confirmation code of an operation on agent ``name`` of ``repo``'s store, schema and
    tenant, given what its preview showed (``shown``: the operation, versions, label, ...)."""
    facts = (repo.location, store_schema(repo.engine) or "", repo.tenant, name, *map(str, shown))
    return hashlib.sha256("\x00".join(facts).encode()).hexdigest()[:CODE_LENGTH]


def check(given: str | None, repo: SqlAgentRepository, expected: str | None, what: str) -> None:
    """Refuse (``CommandFailed``, one line) a ``--confirm`` code that is not ``expected``, the
    code of what the command would act on now (``what``, for the message). ``given`` None: no
    code to check; ``expected`` None: nothing to act on, which the command itself reports."""
    if given is None or expected is None or given == expected:
        return
    schema = store_schema(repo.engine)
    raise CommandFailed(
        STALE.format(
            given=given,
            what=what,
            location=repo.location,
            schema=f", schema '{schema}'" if schema else "",
            tenant=repo.tenant,
        )
    )


def tools(repo: SqlAgentRepository, args: argparse.Namespace, code: str = "") -> BuilderTools:
    """The builder tools' logic on ``repo``, its texts' commands complete for this run's store
    (``program``) and confirming with ``code``."""
    calls = CLI_CALLS._replace(program=program(args), code=code)
    return BuilderTools(lambda: repo, calls=calls)


def version_tools(
    repo: SqlAgentRepository, args: argparse.Namespace, code: str = ""
) -> VersionTools:
    """The version tools' logic on ``repo``, worded as ``tools`` (loaded by the commands that
    use them: their argument models are not every call's)."""
    from ..tools.version_texts import VERSION_CLI_CALLS
    from ..tools.version_tools import VersionTools

    calls = VERSION_CLI_CALLS._replace(program=program(args), code=code)
    return VersionTools(tools(repo, args), calls)
