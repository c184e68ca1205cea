"""What the ``acti-store`` commands share, gathered in one place for the command modules to
import: the names of

- ``command``: what a command is and how it fails (``Command``, ``CommandFailed``: one
  ``error: ...`` line on stderr, status 1), the builder tools it calls and their answer
  (``cli_tools``, ``emit``, ``one_line``);
- ``store_options``: the options that choose the store (``--url``, ``--schema``, ``--tenant``,
  ``--read-only``), opening the store from them (``open_from_args``, ``refuse_unready``), and
  the start of a printed command (``program``);
- ``field_options``: arguments that are model fields (``add_field_argument``, ``checked_by``,
  ``field_values``);
- ``global_options``: ``acti-store``'s own options, before the command.

The command modules import this module (or those) and never the package ``acti_store.cli``
itself, which imports them: the command line has no import cycle.
"""

from __future__ import annotations

from .command import Command, CommandFailed, cli_tools, emit, one_line
from .field_options import add_field_argument, checked_by, field_values
from .global_options import (
    GLOBAL_FLAGS,
    GLOBAL_VALUE_OPTIONS,
    add_connection_options,
    add_global_options,
    apply_global_options,
    package_version,
)
from .store_options import (
    NO_STORE,
    READ_ONLY_HELP,
    SCHEMA_HELP,
    STORE_BEHIND,
    STORE_LEGACY,
    TENANT_HELP,
    add_read_only_option,
    add_store_options,
    add_url_option,
    open_from_args,
    program,
    refuse_unready,
    shown_store,
)

__all__ = [
    "GLOBAL_FLAGS",
    "GLOBAL_VALUE_OPTIONS",
    "NO_STORE",
    "READ_ONLY_HELP",
    "SCHEMA_HELP",
    "STORE_BEHIND",
    "STORE_LEGACY",
    "TENANT_HELP",
    "Command",
    "CommandFailed",
    "add_connection_options",
    "add_field_argument",
    "add_global_options",
    "add_read_only_option",
    "add_store_options",
    "add_url_option",
    "apply_global_options",
    "checked_by",
    "cli_tools",
    "emit",
    "field_values",
    "one_line",
    "open_from_args",
    "package_version",
    "program",
    "refuse_unready",
    "shown_store",
]
