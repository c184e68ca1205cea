"""What the model sees of the four version tools (args schemas and descriptions), and the
parameters they validate; in the style of ``schemas``: every argument accepted as anything and
shown with its real JSON schema, so a wrong value comes back as an ``ERROR: ...`` text."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictInt, WithJsonSchema

from ..models import COUNTER_MAX
from ..routing import SPLIT_MAX, TOTAL
from ..versioning import LABEL_MAX_LENGTH, LABEL_PATTERN
from .schemas import FLAG, LIST_ARG, NAME, JsonSchema, _nullable
from .version_texts import VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX

VERSION: Final[JsonSchema] = {"type": "integer", "minimum": 1}
LIMIT: Final[JsonSchema] = {"type": "integer", "minimum": 1, "maximum": VERSIONS_LIMIT_MAX}
LABEL: Final[JsonSchema] = {
    "type": "string",
    "pattern": LABEL_PATTERN.pattern,
    "minLength": 1,
    "maxLength": LABEL_MAX_LENGTH,
}
#: A label's split as the model writes it: a list of {version, weight} objects (fixed keys and
#: integers, which every provider's strict tool calling takes; a mapping keyed by version
#: numbers would need string keys and open properties).
SHARE: Final[JsonSchema] = {
    "type": "object",
    "properties": {
        "version": VERSION,
        "weight": {"type": "integer", "minimum": 1, "maximum": TOTAL},
    },
    "required": ["version", "weight"],
    "additionalProperties": False,
}
SPLIT: Final[JsonSchema] = {
    "type": "array",
    "items": SHARE,
    "minItems": 2,
    "maxItems": SPLIT_MAX,
}
_NAME_HELP: Final = "Name of an existing agent (snake_case)."
VersionNumber = Annotated[StrictInt, Field(ge=1, le=COUNTER_MAX)]


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _version(description: str) -> Any:
    return Field(description=description)


class ListAgentVersionsArgs(_Args):
    """Arguments of list_agent_versions."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    limit: Annotated[Any, WithJsonSchema(LIMIT)] = Field(
        default=VERSIONS_LIMIT_DEFAULT,
        description=f"How many versions to show, newest first: 1-{VERSIONS_LIMIT_MAX} (default "
        f"{VERSIONS_LIMIT_DEFAULT}).",
    )


class DiffAgentVersionsArgs(_Args):
    """Arguments of diff_agent_versions."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    from_version: Annotated[Any, WithJsonSchema(VERSION)] = _version("The older version number.")
    to_version: Annotated[Any, WithJsonSchema(VERSION)] = _version("The newer version number.")


class RollbackAgentConfigArgs(_Args):
    """Arguments of rollback_agent_config."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    to_version: Annotated[Any, WithJsonSchema(VERSION)] = _version(
        "The version whose configuration becomes current again."
    )
    confirm: Annotated[Any, WithJsonSchema(FLAG)] = Field(
        default=False,
        description="Must be true to roll back. With false (the default) nothing changes: the "
        "tool shows what would change.",
    )


class SetAgentLabelArgs(_Args):
    """Arguments of set_agent_label."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    label: Annotated[Any, WithJsonSchema(LABEL)] = Field(
        description="The label: a lowercase letter, then up to 31 lowercase letters, digits, "
        "'_' or '-'. Example: 'production'."
    )
    version: Annotated[Any, WithJsonSchema(_nullable(VERSION))] = Field(
        default=None,
        description="The version the label should point at (all of its traffic). Give this or "
        "split, not both.",
    )
    split: Annotated[Any, LIST_ARG, WithJsonSchema(_nullable(SPLIT))] = Field(
        default=None,
        description=f"Instead of version: share the label's traffic between 2 to {SPLIT_MAX} "
        f"versions, each with a whole-percent weight; the weights sum to {TOTAL}. Example (90 % "
        'stays on version 3, 10 % tries version 4): [{"version": 3, "weight": 90}, '
        '{"version": 4, "weight": 10}]. A user (or session) keeps its version while the '
        "split stands.",
    )


class RollbackAgentLabelArgs(_Args):
    """Arguments of rollback_agent_label."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    label: Annotated[Any, WithJsonSchema(LABEL)] = Field(
        description="The label to put back where it pointed before its last move, e.g. "
        "'production'."
    )


class CompareAgentVersionsArgs(_Args):
    """Arguments of compare_agent_versions."""

    name: Annotated[Any, WithJsonSchema(NAME)] = Field(description=_NAME_HELP)
    a: Annotated[Any, WithJsonSchema(VERSION)] = _version(
        "The version to compare against, usually the one in production."
    )
    b: Annotated[Any, WithJsonSchema(VERSION)] = _version(
        "The other version, usually the newer one being tried."
    )


class VersionListRequest(BaseModel):
    limit: StrictInt = Field(default=VERSIONS_LIMIT_DEFAULT, ge=1, le=VERSIONS_LIMIT_MAX)


class VersionPair(BaseModel):
    from_version: VersionNumber
    to_version: VersionNumber


class RollbackRequest(BaseModel):
    to_version: VersionNumber


class LabelRequest(BaseModel):
    version: VersionNumber


class Share(BaseModel):
    """One version's share of a split label."""

    model_config = ConfigDict(extra="forbid")

    version: VersionNumber
    weight: Annotated[StrictInt, Field(ge=1, le=TOTAL)]


class SplitRequest(BaseModel):
    split: Annotated[list[Share], Field(min_length=2, max_length=SPLIT_MAX)]

    def weights(self) -> dict[int, int]:
        """The split as ``set_label`` takes it: version -> weight (the repository checks the
        sum and repeated versions)."""
        return {share.version: share.weight for share in self.split}


class ComparePair(BaseModel):
    a: VersionNumber
    b: VersionNumber


LIST_AGENT_VERSIONS: Final = """List the saved versions of an agent's configuration, newest first.

Every create, update, rollback and clone saves the whole configuration as a new version, which
is never changed afterwards. For each version: its number, labels (such as production), when it
was saved and its message. Also the agent's labels and where they point. Use it before
diff_agent_versions() or rollback_agent_config()."""

DIFF_AGENT_VERSIONS: Final = """Compare two saved versions of an agent's configuration.

Lists each field that changed from from_version to to_version: a line-by-line diff for the
description and system prompt, the added and removed items for tools and tags, old -> new for the
others. Use list_agent_versions() to find the version numbers."""

ROLLBACK_AGENT_CONFIG: Final = """Make an older version's configuration current again, in two steps.

Step 1: call with confirm=false (the default). Nothing changes: you get the changes the rollback
would apply. Step 2: only if the user wants it, call again with confirm=true. The rollback saves
a NEW version (current + 1) equal to to_version; no version is deleted, so it can be undone by
another rollback. Execution history and statistics are kept."""

SET_AGENT_LABEL: Final = """Point a label (such as production or staging) at a saved version, or
split it between versions.

Sets the label if the agent does not have it yet, else moves it; every move is logged. With
version, the label sends all of its traffic there. With split, the label shares its traffic by
weight, e.g. 90 % on the proven version and 10 % on the new one (a canary); each user or session
keeps its version while the split stands. A protected label refuses versions whose runs do not
meet its gate: only a person can override that. A person may have to approve moving production.
Use list_agent_versions() to see the labels and versions."""

ROLLBACK_AGENT_LABEL: Final = """Undo a label's last move: the label points again where it
pointed before (a split included).

A second call goes one move further back. The move is logged as a rollback. A protected label's
gate still applies. A person may have to approve rolling back production. Use it when the version
a label was just moved to does worse; compare first with compare_agent_versions()."""

COMPARE_AGENT_VERSIONS: Final = """Compare two versions of an agent by their runs: runs, success
rate with its 95 % interval and average duration of each, and the difference of the success
rates (b minus a) with its 95 % interval.

Counts every run of each version (not only the history kept). Use it before moving a label from
version a to version b: an interval that includes 0 means no clear difference yet."""
