"""``acti-store tenants create|delete|set|mode``: a tenant's lifecycle, on the repository's
operator view (``create_tenant``, ``delete_tenant``, ``set_tenant``, ``set_tenant_mode``).

Each acts on the tenant it names, whatever the store's own: like ``tenants``, they take no
``--tenant``. ``delete`` without ``--yes`` shows what it would erase, per table, and the
complete command that erases it, bound to what it showed (``confirm``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

from ..repository import SqlAgentRepository
from ..tenancy import TENANT_MODES
from . import confirm
from .options import CommandFailed, add_store_options, open_from_args

#: Why a lifecycle command refuses ``--tenant``.
NO_TENANT: Final = "tenants {command} acts on the tenant it names: give it no --tenant"


def _open(args: argparse.Namespace) -> SqlAgentRepository:
    if args.tenant is not None:
        raise CommandFailed(NO_TENANT.format(command=args.lifecycle))
    return open_from_args(args)


def _limit(text: str) -> int | None:
    """``--max-agents``: a whole number from 0, or ``none`` for no limit."""
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a whole number from 0, or none, not {text!r}")
    return value


def _cmd_create(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        repo.create_tenant(args.name, max_agents=args.max_agents)
    finally:
        repo.close()
    n = args.max_agents
    limit = "" if n is None else f" (at most {n} agent{'' if n == 1 else 's'})"
    print(f"Created tenant '{args.name}'{limit}.")
    return 0


def _cmd_set(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        repo.set_tenant(args.name, max_agents=args.max_agents)
    finally:
        repo.close()
    n = args.max_agents
    limit = "no limit on agents" if n is None else f"at most {n} agent{'' if n == 1 else 's'}"
    print(f"Tenant '{args.name}': {limit}.")
    return 0


def _shown(counts: dict[str, int]) -> str:
    width = max(len(table) for table in counts)
    return "\n".join(f"  {table:<{width}}  {count}" for table, count in counts.items())


def _cmd_delete(args: argparse.Namespace) -> int:
    """Without ``--yes`` or ``--confirm``: the rows that would go, and the command that erases
    them, confirmed by the code of those counts; with them, the erasure and its counts."""
    repo = _open(args)
    try:
        counts = repo.tenant_rows(args.name)
        bound = confirm.code(repo, args.name, "delete-tenant", sorted(counts.items()))
        what = f"tenant '{args.name}' ({sum(counts.values())} rows)"
        confirm.check(args.confirm, repo, bound, what)
        if not (args.yes or args.confirm is not None):
            command = confirm.program(args, with_tenant=False)
            print(f"Tenant '{args.name}' holds, per table:\n{_shown(counts)}")
            print(
                "Deleting it erases all of them and its registration, in one transaction. To "
                f"confirm, run: {command} tenants delete {args.name} --confirm {bound}"
            )
            return 1
        erased = repo.delete_tenant(args.name)
    finally:
        repo.close()
    if args.json:
        print(json.dumps(erased, indent=2))
    else:
        total = sum(erased.values())
        print(f"Deleted tenant '{args.name}': {total} rows erased.\n{_shown(erased)}")
    return 0


def _cmd_mode(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        if args.mode is not None:
            repo.set_tenant_mode(args.mode)
        mode = repo.tenant_mode()
    finally:
        repo.close()
    print(mode)
    return 0


def register(subparsers: Any) -> None:
    """The lifecycle subcommands of ``tenants`` (``subparsers``: its subparsers)."""
    create = subparsers.add_parser(
        "create",
        help="register a tenant (a strict store writes only for registered tenants)",
        description="Register tenant NAME, optionally with a limit on its agents.",
    )
    create.add_argument("name", metavar="NAME", help="the tenant (the agent-name rule)")
    _add_limit(create, required=False)
    create.set_defaults(func=_cmd_create, lifecycle="create")

    delete = subparsers.add_parser(
        "delete",
        help="erase a tenant: every row of it in every table, in one transaction",
        description="Erase tenant NAME: its agents, versions, labels, histories, change feed "
        "and checkpoints, and its registration, in one transaction; prints the rows erased "
        "per table. Without --yes or --confirm, shows them and the command that erases them. "
        "The default tenant is not deleted: delete its agents one by one.",
    )
    delete.add_argument("name", metavar="NAME", help="the tenant to erase")
    delete.add_argument("--yes", action="store_true", help="erase it without a preview")
    confirm.add_confirm_option(delete)
    delete.add_argument("--json", action="store_true", help="print the counts as JSON")
    delete.set_defaults(func=_cmd_delete, lifecycle="delete")

    limit = subparsers.add_parser(
        "set",
        help="set a tenant's limit on agents",
        description="Set the most agents tenant NAME may hold: a create, clone or import "
        "that would pass it is refused, naming the limit.",
    )
    limit.add_argument("name", metavar="NAME", help="the tenant")
    _add_limit(limit, required=True)
    limit.set_defaults(func=_cmd_set, lifecycle="set")

    mode = subparsers.add_parser(
        "mode",
        help="show or set the store's tenant mode (strict or open)",
        description="strict: a write for a tenant not registered is refused; open: it "
        "registers the tenant. Stores opened later follow it unless ACTI_STORE_TENANTS says.",
    )
    mode.add_argument("mode", nargs="?", choices=sorted(TENANT_MODES), help="the mode to set")
    mode.set_defaults(func=_cmd_mode, lifecycle="mode")
    for parser in (create, delete, limit, mode):
        # Given before the command (``tenants --url X create``), kept: not reset to None here.
        add_store_options(parser, default=argparse.SUPPRESS)
        parser.set_defaults(only_reads=False)  # each writes: the store is made if missing


def _add_limit(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--max-agents",
        type=_limit,
        required=required,
        default=None,
        metavar="N",
        help="the most agents the tenant may hold (none: no limit)",
    )
