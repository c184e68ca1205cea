"""``acti-store doctor``: the checks an operator runs first (``acti_store.doctor.diagnose``),
each finding one line (or ``--json``); exit 1 when one is an error. Reads only: it never creates
or migrates a store."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .options import add_url_option


def _cmd_doctor(args: argparse.Namespace) -> int:
    from ..doctor import diagnose, healthy, report  # Alembic's scripts: only for this command

    # --pooler (acti-store's own option) and --replica when given, else the environment's.
    findings = diagnose(
        args.url,
        schema=args.schema,
        tenant=args.tenant,
        pooler=getattr(args, "pooler", None),
        replicas=getattr(args, "replicas", None) or None,
    )
    if args.json:
        print(json.dumps(report(findings), indent=2))
    else:
        for finding in findings:
            print(finding.line())
    return 0 if healthy(findings) else 1


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the store and its server: versions, revision, pooler, replicas, roles, disk",
        description="Check the store and what it runs on, reading only: the engine and server "
        "version, the store's revision against this acti_store's, and per engine: a "
        "transaction pooler (detected or configured: --pooler, ACTI_STORE_POOLER), each read "
        "replica and its lag (--replica, ACTI_STORE_REPLICA_URLS), whether the role bypasses "
        "row-level security, pg_trgm (PostgreSQL); the journal mode, free disk and write "
        "access (SQLite). One line per finding (ok, warning or error) with what to do; exit "
        "status 1 when one is an error.",
    )
    add_url_option(parser)
    parser.add_argument(
        "--replica",
        dest="replicas",
        action="append",
        default=None,
        metavar="URL",
        help="a read replica (streaming standby) of the store's server to check; repeatable "
        "(default: $ACTI_STORE_REPLICA_URLS, comma-separated)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"ok": ..., "findings": [{"check", "status", "message", "advice"}]}',
    )
    parser.set_defaults(func=_cmd_doctor)
