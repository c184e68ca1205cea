"""Shared bits of the test MCP servers (each is run as a script: ``python crm_server.py``)."""

from __future__ import annotations

import argparse
import json
import os
import sys


def start(required: str) -> None:
    """Exit like a real server when its credential is missing; note the start in ``--starts``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", help="append this process's id to FILE at start")
    args = parser.parse_args()
    if not os.environ.get(required):
        print(f"error: {required} is not set", file=sys.stderr)
        sys.exit(2)
    if args.starts:
        with open(args.starts, "a", encoding="utf-8") as starts:
            starts.write(f"{os.getpid()}\n")


def credential_names() -> str:
    """The names of the credential-like variables this process can see, as JSON."""
    markers = ("TOKEN", "KEY", "SECRET", "CREDENTIALS", "PASSWORD")
    return json.dumps(sorted(n for n in os.environ if any(m in n for m in markers)))
