"""``acti-store run NAME "task"``: run a stored agent with its MCP tools and print the report.

The report of a run that succeeded goes to stdout, status 0; the report of one that did not
(an ``ERROR: ...`` text saying why) is one ``error: ...`` line on stderr, status 1. Running needs
the ``agents`` extra (langchain, deepagents, MCP); without it this module still imports, and the
command says what to install, as one ``error: ...`` line, status 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..documents import agent_from_document
from ..execution.environment import ENV_CONFIG
from ..models import ExecutionRequest
from ..tools import render
from ..tools.schemas import ExecuteCreatedAgentArgs as ARGS
from .options import (
    CommandFailed,
    add_field_argument,
    add_url_option,
    checked_by,
    cli_tools,
    one_line,
    open_from_args,
)


def _cmd_run(args: argparse.Namespace) -> int:
    if args.key is not None and args.label is None:
        raise CommandFailed("--key picks a version of a label's split: give --label too")
    try:
        from ..execution.runner import AgentRunner  # the ``agents`` extra; heavy to import
    except ImportError as exc:
        raise CommandFailed(one_line(render.agents_extra_missing(args.name, exc))) from None
    from ..execution.texts import CLI_RUN_CALLS  # with the runner's results, only for a run

    repo = open_from_args(args)
    try:
        # The agent as ``show`` finds it: a wrong or missing name gets show's text (the names).
        text, artifact = cli_tools(repo).get_agent_config(name=args.name)
        if artifact["status"] != "success":
            raise CommandFailed(one_line(text))
        runner = AgentRunner(repo, catalog=args.mcp_config, calls=CLI_RUN_CALLS)
        report = runner.run_sync(
            agent_from_document(artifact["agent"]),
            args.task,
            timeout=args.timeout,
            skip_unavailable_tools=args.skip_unavailable_tools,
            version=args.version,
            label=args.label,
            key=args.key,
        )
    finally:
        repo.close()
    if not report.success:  # the report says why, as an ERROR text
        raise CommandFailed(one_line(report.text))
    print(report.text)
    return 0


def register(subparsers: Any) -> None:
    """Add ``run`` to the command line (always: it reports a missing extra when run)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run an agent on a task with its MCP tools",
        description="Run a stored agent on a task with the MCP tools of its categories, print "
        "the report and record the run in the agent's history.",
    )
    parser.add_argument("name", help="the agent to run")
    # Help and default as the tool shows them to the model; values checked by the run's own rule.
    add_field_argument(parser, ARGS, "task", type=checked_by(ExecutionRequest, "task"))
    add_field_argument(
        parser,
        ARGS,
        "timeout",
        "--timeout",
        type=checked_by(ExecutionRequest, "timeout"),
        default=ExecutionRequest.model_fields["timeout"].default,
        metavar="S",
    )
    parser.add_argument(
        "--no-skip-unavailable",
        dest="skip_unavailable_tools",
        action="store_false",
        help="fail instead of running in degraded mode when a tool category is unavailable",
    )
    pin = parser.add_mutually_exclusive_group()
    pin.add_argument(
        "--version",
        type=int,
        default=None,
        metavar="N",
        help="run this saved version's configuration (1 or more; default: the current one)",
    )
    pin.add_argument(
        "--label",
        default=None,
        help="run the version this label points at (e.g. production); a split label picks one "
        "of its versions by weight",
    )
    parser.add_argument(
        "--key",
        default=None,
        metavar="K",
        help="with --label: pick the split's version by this key (a user or session id): the "
        "same key gets the same version while the split stands (default: a random pick)",
    )
    parser.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help=f"MCP catalog (TOML) to use (default: ${ENV_CONFIG}, else the providers' servers)",
    )
    add_url_option(parser)
    parser.set_defaults(func=_cmd_run)
