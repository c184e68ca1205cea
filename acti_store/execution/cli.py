"""``acti-store run NAME "task"``: run a stored agent with its MCP tools and print the report.

Exit status 0 when the run succeeded, 1 when it did not (the text says why).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..cli import add_url_option, open_from_args
from ..models import TASK_MAX_LENGTH, TASK_MIN_LENGTH, TIMEOUT_DEFAULT, TIMEOUT_MAX, TIMEOUT_MIN
from .catalog import ENV_CONFIG


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not TIMEOUT_MIN <= value <= TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be {TIMEOUT_MIN}-{TIMEOUT_MAX} seconds")
    return value


def _task(text: str) -> str:
    if not TASK_MIN_LENGTH <= len(text) <= TASK_MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"must be {TASK_MIN_LENGTH}-{TASK_MAX_LENGTH} characters")
    return text


def _cmd_run(args: argparse.Namespace) -> int:
    from .runner import AgentRunner  # heavy (langchain, deepagents): only when running

    repo = open_from_args(args)
    try:
        runner = AgentRunner(repo, catalog=args.mcp_config)
        report = runner.run_sync(
            repo.get(args.name),
            args.task,
            timeout=args.timeout,
            skip_unavailable_tools=args.skip_unavailable_tools,
        )
    finally:
        repo.close()
    print(report.text)
    return 0 if report.success else 1


def register(subparsers: Any) -> None:
    """Add ``run`` to the ``acti-store`` command line."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run an agent on a task with its MCP tools",
        description="Run a stored agent on a task with the MCP tools of its categories, print "
        "the report and record the run in the agent's history.",
    )
    parser.add_argument("name", help="the agent to run")
    parser.add_argument("task", type=_task, help="the task or message for the agent")
    parser.add_argument(
        "--timeout",
        type=_timeout,
        default=TIMEOUT_DEFAULT,
        metavar="S",
        help=f"seconds the run may take, {TIMEOUT_MIN:g}-{TIMEOUT_MAX:g} "
        f"(default {TIMEOUT_DEFAULT:g})",
    )
    parser.add_argument(
        "--no-skip-unavailable",
        dest="skip_unavailable_tools",
        action="store_false",
        help="fail instead of running in degraded mode when a tool category is unavailable",
    )
    parser.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help=f"MCP catalog (TOML) to use (default: ${ENV_CONFIG}, else the providers' servers)",
    )
    add_url_option(parser)
    parser.set_defaults(func=_cmd_run)
