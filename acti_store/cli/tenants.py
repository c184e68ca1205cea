"""``acti-store tenants``: each tenant of the store with its number of agents (an operator's
view of the whole store: it takes no ``--tenant``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import tenant_lifecycle, tenant_logins
from .options import CommandFailed, add_store_options, open_from_args


def _cmd_tenants(args: argparse.Namespace) -> int:
    if args.tenant is not None:
        raise CommandFailed("tenants lists every tenant of the store: give it no --tenant")
    repo = open_from_args(args)
    try:
        counts = repo.tenants()
    finally:
        repo.close()
    if args.json:
        print(json.dumps(counts, indent=2))
        return 0
    width = max(len(name) for name in counts)
    for name, count in counts.items():
        print(f"{name:<{width}}  {count} agent{'' if count == 1 else 's'}")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tenants",
        help="list each tenant of the store with its number of agents",
        description="Each tenant of the store, by name, with its number of agents: the default "
        "tenant, and each tenant a store was opened for to write. Reads every tenant, whatever "
        "the environment's ACTI_STORE_TENANT; takes no --tenant.",
    )
    add_store_options(parser, read_only=True, tenant=False)
    parser.add_argument("--json", action="store_true", help="print a JSON object: name -> count")
    parser.set_defaults(func=_cmd_tenants)
    commands = parser.add_subparsers(dest="lifecycle", help="a tenant's lifecycle, logins")
    tenant_lifecycle.register(commands)
    tenant_logins.register(commands)
