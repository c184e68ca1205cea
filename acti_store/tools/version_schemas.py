"""What the model sees of the four version tools (args schemas and descriptions), and the
parameters they validate; in the style of ``schemas``: every argument accepted as anything and
shown with its real JSON schema, so a wrong value comes back as an ``ERROR: ...`` text."""

from __future__ import annotations

from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StrictInt, WithJsonSchema

from ..models import COUNTER_MAX
from ..versioning import LABEL_MAX_LENGTH, LABEL_PATTERN
from .schemas import FLAG, NAME, JsonSchema
from .version_texts import VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX

VERSION: Final[JsonSchema] = {"type": "integer", "minimum": 1}
LIMIT: Final[JsonSchema] = {"type": "integer", "minimum": 1, "maximum": VERSIONS_LIMIT_MAX}
LABEL: Final[JsonSchema] = {
    "type": "string",
    "pattern": LABEL_PATTERN.pattern,
    "minLength": 1,
    "maxLength": LABEL_MAX_LENGTH,
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
    version: Annotated[Any, WithJsonSchema(VERSION)] = _version(
        "The version the label should point at."
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

SET_AGENT_LABEL: Final = """Point a label (such as production or staging) at a saved version.

Sets the label if the agent does not have it yet, else moves it; every move is logged. A person
may have to approve moving production. Use list_agent_versions() to see the labels and versions."""
