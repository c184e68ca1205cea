"""``acti-store tenants bind|unbind|logins``: tenant-bound database logins, on the repository's
operator view (``bind_login``, ``unbind_login``, ``login_bindings``; docs/tenants.md).

Run as the store's owner: a login bound to a tenant (a reporting tool's, a support engineer's
``psql``) sees and writes only that tenant whatever it sets. PostgreSQL's: on SQLite and
MariaDB each command says so in one error line. Like ``tenants``, they take no ``--tenant``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..repository import SqlAgentRepository
from .options import CommandFailed, add_store_options, open_from_args


def _open(args: argparse.Namespace) -> SqlAgentRepository:
    if args.tenant is not None:
        raise CommandFailed(
            f"tenants {args.logins} names its login and tenant itself: give it no --tenant"
        )
    return open_from_args(args)


def _cmd_bind(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        repo.bind_login(args.role, args.name)
    finally:
        repo.close()
    print(f"Login '{args.role}' bound to tenant '{args.name}': it sees and writes only its rows.")
    return 0


def _cmd_unbind(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        tenant = repo.unbind_login(args.role)
    finally:
        repo.close()
    print(f"Login '{args.role}' was bound to tenant '{tenant}': it is bound no more.")
    return 0


def _cmd_logins(args: argparse.Namespace) -> int:
    repo = _open(args)
    try:
        bindings = repo.login_bindings()
    finally:
        repo.close()
    if args.json:
        print(json.dumps(bindings, indent=2))
        return 0
    width = max((len(role) for role in bindings), default=0)
    for role, tenant in bindings.items():
        print(f"{role:<{width}}  {tenant}")
    return 0


def register(subparsers: Any) -> None:
    """The login subcommands of ``tenants`` (``subparsers``: its subparsers)."""
    bind = subparsers.add_parser(
        "bind",
        help="bind a database login to one tenant (PostgreSQL; run as the store's owner)",
        description="Bind the PostgreSQL login ROLE to tenant NAME: row-level security then "
        "holds its sessions to that tenant's rows, whatever acti.tenant they set or role they "
        "take. A binding it had is replaced. Refused for a login row-level security does not "
        "hold (a superuser, BYPASSRLS, CREATEROLE, the store's owner, or a member of one).",
    )
    bind.add_argument("role", metavar="ROLE", help="the database login")
    bind.add_argument("name", metavar="NAME", help="the tenant (the agent-name rule)")
    bind.set_defaults(func=_cmd_bind, logins="bind")

    unbind = subparsers.add_parser(
        "unbind",
        help="take a login's binding to a tenant away (run as the store's owner)",
        description="Take the binding of login ROLE away: it then runs as the acti.tenant it "
        "sets, as the app role does.",
    )
    unbind.add_argument("role", metavar="ROLE", help="the database login")
    unbind.set_defaults(func=_cmd_unbind, logins="unbind")

    listed = subparsers.add_parser(
        "logins",
        help="list the tenant-bound logins",
        description="Each bound login with its tenant (the owner sees every binding, another "
        "role its own).",
    )
    listed.add_argument("--json", action="store_true", help="print a JSON object: login -> tenant")
    listed.set_defaults(func=_cmd_logins, logins="logins")
    for parser in (bind, unbind, listed):
        # Given before the command (``tenants --url X bind``), kept: not reset here.
        add_store_options(parser, default=argparse.SUPPRESS)
    for parser in (bind, unbind):
        parser.set_defaults(only_reads=False)  # each writes
