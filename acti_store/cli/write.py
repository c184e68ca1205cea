"""The writing commands of ``acti-store``: create, update, clone, delete and record.

create, update, clone and delete call the builder tools' logic (``BuilderTools``), as the model
does, and print its text in CLI wording: exit 0 on success; an ``ERROR: ...`` text is one
``error: ...`` line on stderr and status 1. record
is for scripts that run agents elsewhere: it appends the run through ``record_execution``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from ..documents import DocumentError, loads
from ..engine import LOCK_TIMEOUT_DEFAULT
from ..errors import AgentNotFoundError
from ..models import TOOL_CATEGORIES, UPDATABLE_FIELDS, AgentConfig, ExecutionRecord, is_valid_name
from ..repository import AgentRepository, SqlAgentRepository
from ..repository.deadline import pauses
from ..tools import render
from ..tools.builder import BuilderTools
from ..tools.outcomes import Result
from ..tools.schemas import (
    AgentNameArgs,
    CloneAgentConfigArgs,
    DeleteAgentConfigArgs,
    UpdateAgentConfigArgs,
)
from ..validation import FieldError
from ..versioning import MESSAGE_MAX_LENGTH
from . import confirm
from .options import (
    CommandFailed,
    add_field_argument,
    add_url_option,
    checked_by,
    emit,
    one_line,
    open_from_args,
)

#: The keys of an agent file ``create`` reads: the config's fields, and metadata it ignores.
CONFIG_KEYS: Final = tuple(AgentConfig.model_fields)
METADATA_KEY: Final = "_metadata"

#: What ``record`` prints: the run, then the agent's counters.
RECORDED: Final = """Recorded a {outcome} run of '{name}' ({duration:g}s, started {started}).

Executions: {total} total ({successes} success, {errors} errors)
Execution id: {execution_id}"""


#: Why ``record`` refuses a ``--duration`` that would put the run's start before the year 1.
DURATION_TOO_LONG: Final = (
    "the run would have started before the year 1: give its duration in seconds"
)


class FileRefused(Exception):
    """The agent file cannot be read or is not an agent document; the message says why."""


def _with_tools(args: argparse.Namespace, call: Callable[[BuilderTools], Result]) -> int:
    repo = open_from_args(args)
    try:
        result = call(confirm.tools(repo, args))
    finally:
        repo.close()
    return emit(result)


# -- create ----------------------------------------------------------------------------------------


def read_agent_file(file: str) -> dict[str, Any]:
    """The config fields of the agent document in ``file`` (``-``: standard input).

    An exported ``{name}.json`` works: its ``_metadata`` is ignored (a new agent starts at
    version 1). Any other key is refused, as the importer refuses it.
    """
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
        document = loads(data)
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror or exc}") from None
    except DocumentError as exc:
        raise FileRefused(str(exc)) from None
    if not isinstance(document, dict):
        raise FileRefused("an agent file holds one JSON object")
    unknown = sorted(set(document) - {*CONFIG_KEYS, METADATA_KEY})
    if unknown:
        raise FileRefused(
            f"unknown key(s) {', '.join(map(repr, unknown))}; an agent file has "
            f"{', '.join(CONFIG_KEYS)} and optionally {METADATA_KEY}"
        )
    return {key: document[key] for key in CONFIG_KEYS if key in document}


def _cmd_create(args: argparse.Namespace) -> int:
    try:
        config = read_agent_file(args.file)
    except FileRefused as exc:
        source = "standard input" if args.file == "-" else args.file
        raise CommandFailed(f"{source}: {exc}") from None
    required = {key: config.pop(key, None) for key in ("name", "description", "system_prompt")}
    return _with_tools(args, lambda tools: tools.create_agent_config(**required, **config))


# -- update ----------------------------------------------------------------------------------------


def tool_list(text: str) -> list[str]:
    """``--tools crm,websearch``: a comma-separated list; ``""`` is no tools."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _new_tags(repo: AgentRepository, args: argparse.Namespace) -> tuple[list[str], int] | None:
    """The tag list after ``--add-tag``/``--remove-tag`` and the version it was computed from
    (None: neither given, or no such agent or an invalid name, which the tool then reports)."""
    if (not args.add_tags and not args.remove_tags) or not is_valid_name(args.name):
        return None
    try:
        agent = repo.get(args.name)
    except AgentNotFoundError:
        return None
    removed = set(args.remove_tags or ())
    kept = [tag for tag in agent.tags if tag not in removed]
    added = [tag for tag in args.add_tags or () if tag not in kept and tag not in removed]
    return kept + added, agent.metadata.version


def _update_once(repo: SqlAgentRepository, args: argparse.Namespace) -> Result:
    changes = {
        field: getattr(args, field)
        for field in UPDATABLE_FIELDS
        if field != "tags" and getattr(args, field) is not None  # tags: read by _new_tags
    }
    read = _new_tags(repo, args)
    expected = None
    if read is not None:
        changes["tags"], expected = read
    return confirm.tools(repo, args).update_agent_config(
        name=args.name, **changes, message=args.message, expected=expected
    )


def _cmd_update(args: argparse.Namespace) -> int:
    """A tag edit writes the list computed from the version it read, expecting that version: when
    another write came in between, it reads again and retries, within the store's lock deadline
    (the CLI opens stores with the default), so concurrent tag edits never lose one."""
    repo = open_from_args(args)
    try:
        result = _update_once(repo, args)
        for pause in pauses(time.monotonic() + LOCK_TIMEOUT_DEFAULT):
            if result[1].get("error") != "conflict":
                break
            time.sleep(pause)
            result = _update_once(repo, args)
    finally:
        repo.close()
    return emit(result)


# -- clone, delete ---------------------------------------------------------------------------------


def _cmd_clone(args: argparse.Namespace) -> int:
    return _with_tools(
        args,
        lambda tools: tools.clone_agent_config(
            source_name=args.source_name,
            new_name=args.new_name,
            description=args.description,
            tags=args.tags,
        ),
    )


def _cmd_delete(args: argparse.Namespace) -> int:
    """Without ``--yes`` a preview, whose command confirms with the code of the agent's version
    it showed (``confirm``); a ``--confirm`` code that no longer matches is refused."""
    repo = open_from_args(args)
    try:
        version = _current_version(repo, args.name)
        bound = None
        if version is not None:
            bound = confirm.code(repo, args.name, "delete", version, args.delete_history)
        confirm.check(args.confirm, repo, bound, f"agent '{args.name}' v{version}")
        result = confirm.tools(repo, args, bound or "").delete_agent_config(
            name=args.name,
            confirm=args.yes or args.confirm is not None,
            delete_history=args.delete_history,
        )
    finally:
        repo.close()
    return emit(result)


def _current_version(repo: AgentRepository, name: str) -> int | None:
    """Agent ``name``'s version; None for no such agent or an invalid name (the tool says)."""
    if not is_valid_name(name):
        return None
    try:
        return repo.get(name).metadata.version
    except AgentNotFoundError:
        return None


# -- record ----------------------------------------------------------------------------------------


def _cmd_record(args: argparse.Namespace) -> int:
    if not is_valid_name(args.name):
        raise CommandFailed(one_line(render.invalid_name("name", args.name)))
    repo = open_from_args(args)
    try:
        try:
            started = repo.now() - timedelta(seconds=args.duration)
        except OverflowError:  # before the year 1: no datetime holds it
            problem = FieldError("duration_seconds", DURATION_TOO_LONG)
            raise CommandFailed(one_line(render.invalid_parameters("record", [problem]))) from None
        try:
            record = ExecutionRecord(
                timestamp=started,
                task=args.task,
                result_summary=args.result,
                success=args.success,
                duration_seconds=args.duration,
                tool_calls_count=args.tool_calls,
                error_type=args.error_type,
            )
        except ValidationError as exc:
            problems = render.field_errors(exc)
            raise CommandFailed(one_line(render.invalid_parameters("record", problems))) from None
        try:
            repo.record_execution(args.name, record)
        except AgentNotFoundError:
            return emit(confirm.tools(repo, args).not_found(args.name))
        stats = repo.execution_stats(args.name)
    finally:
        repo.close()
    print(
        RECORDED.format(
            outcome="successful" if record.success else "failed",
            name=args.name,
            duration=record.duration_seconds,
            started=render.display_time(record.timestamp),
            total=stats.total_executions,
            successes=stats.success_count,
            errors=stats.error_count,
            execution_id=record.execution_id,
        )
    )
    return 0


# -- the command line ------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add create, update, clone, delete and record to the command line."""
    create = subparsers.add_parser(
        "create",
        help="create an agent from a JSON file in the agent format",
        description="Create an agent from a JSON file in the outputs/agents format (an exported "
        "{name}.json works; its _metadata is ignored: the new agent starts at version 1).",
    )
    create.add_argument(
        "file",
        metavar="FILE",
        help=f"the agent file, '-' for standard input; keys: {', '.join(CONFIG_KEYS)} "
        f"(name, description and system_prompt required)",
    )
    add_url_option(create)
    create.set_defaults(func=_cmd_create)

    update = subparsers.add_parser(
        "update",
        help="change some of an agent's fields (version + 1)",
        description="Change the fields given; the others keep their values.",
    )
    _update_options(update)
    add_url_option(update)
    update.set_defaults(func=_cmd_update)

    clone = subparsers.add_parser("clone", help="copy an agent under a new name, fresh metadata")
    add_field_argument(clone, CloneAgentConfigArgs, "source_name", metavar="SOURCE")
    add_field_argument(clone, CloneAgentConfigArgs, "new_name", metavar="NEW_NAME")
    add_field_argument(clone, CloneAgentConfigArgs, "description", "--description", metavar="TEXT")
    clone.add_argument(
        "--tag",
        dest="tags",
        action="append",
        metavar="TAG",
        help="a tag of the copy (repeatable; default: the source's tags)",
    )
    add_url_option(clone)
    clone.set_defaults(func=_cmd_clone)

    delete = subparsers.add_parser(
        "delete",
        help="delete an agent (without --yes: show what would be deleted)",
    )
    add_field_argument(delete, DeleteAgentConfigArgs, "name")
    delete.add_argument(
        "--keep-history",
        dest="delete_history",
        action="store_false",
        help="keep the agent's execution history, archived in the store (default: delete it "
        "with the agent)",
    )
    delete.add_argument(
        "--yes",
        action="store_true",
        help="delete for real (default: a dry run that shows what would be deleted, exit 0)",
    )
    confirm.add_confirm_option(delete)
    add_url_option(delete)
    delete.set_defaults(func=_cmd_delete)

    record = subparsers.add_parser(
        "record",
        help="record a run done elsewhere in an agent's history",
        description="Append a run of the agent, done by another program, to its history (the "
        "newest 50 are kept) and move its counters. The run is stamped as started --duration "
        "seconds ago.",
    )
    _record_options(record)
    add_url_option(record)
    record.set_defaults(func=_cmd_record)


#: The configuration fields with options of their own below: a comma-separated ``--tools`` list,
#: tags added and removed. Every other field is ``--field-name VALUE``, its help the update tool's
#: description of the argument.
_OWN_OPTIONS: Final = frozenset({"tools", "tags"})
#: What a field's value is called in the help (default TEXT).
_METAVARS: Final = {"model": "PROVIDER:MODEL", "stratum": "STRATUM"}


def _update_options(parser: argparse.ArgumentParser) -> None:
    def field(name: str, *flags: str, **options: Any) -> None:
        add_field_argument(parser, UpdateAgentConfigArgs, name, *flags, **options)

    add_field_argument(parser, AgentNameArgs, "name")
    for name in UPDATABLE_FIELDS:
        if name not in _OWN_OPTIONS:
            field(name, f"--{name.replace('_', '-')}", metavar=_METAVARS.get(name, "TEXT"))
    parser.add_argument(
        "--tools",
        type=tool_list,
        default=None,
        metavar="LIST",
        help="replace the whole tool list: comma-separated categories, any of "
        f"{', '.join(TOOL_CATEGORIES)}; '' removes all tools (default: keep the current tools)",
    )
    parser.add_argument(
        "--add-tag",
        dest="add_tags",
        action="append",
        metavar="TAG",
        help="add a tag (repeatable; 2-32 characters of lowercase letters, digits and hyphens)",
    )
    parser.add_argument(
        "--remove-tag",
        dest="remove_tags",
        action="append",
        metavar="TAG",
        help="remove a tag (repeatable)",
    )
    parser.add_argument(
        "--message",
        type=message_text,
        default=None,
        metavar="TEXT",
        help="why it changed, saved with the new version (acti-store versions shows it; at "
        f"most {MESSAGE_MAX_LENGTH} characters)",
    )


def message_text(text: str) -> str:
    """``--message``: a version's message, at most ``MESSAGE_MAX_LENGTH`` characters."""
    if len(text) > MESSAGE_MAX_LENGTH or "\x00" in text:
        raise argparse.ArgumentTypeError(f"at most {MESSAGE_MAX_LENGTH} characters of text")
    return text


def _record_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the agent that ran")
    parser.add_argument(
        "--task", required=True, help="the task the agent was given (stored cut to 500 characters)"
    )
    outcome = parser.add_mutually_exclusive_group(required=True)
    outcome.add_argument(
        "--success", dest="success", action="store_true", default=None, help="the run succeeded"
    )
    outcome.add_argument(
        "--failure", dest="success", action="store_false", default=None, help="the run failed"
    )
    parser.add_argument(
        "--duration",
        required=True,
        type=checked_by(ExecutionRecord, "duration_seconds"),
        metavar="SECONDS",
        help="how long the run took, in seconds: 0 or more",
    )
    parser.add_argument(
        "--result",
        default="",
        metavar="TEXT",
        help="the result summary, or the error message of a failed run (stored cut to 200 "
        "characters; default: empty)",
    )
    parser.add_argument(
        "--tool-calls",
        type=checked_by(ExecutionRecord, "tool_calls_count"),
        default=0,
        metavar="N",
        help="how many tool calls the run made: 0 or more (default: %(default)s)",
    )
    parser.add_argument(
        "--error-type",
        default=None,
        metavar="TYPE",
        help="the error category of a failed run, e.g. ExecutionError, ExecutionTimeout, "
        "MCPConnectionError (default: none)",
    )
