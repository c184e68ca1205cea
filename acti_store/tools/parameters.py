"""Parameters that are the tools' own: no domain model (``acti_store.models``) holds them.

``BuilderTools`` validates them like the models' fields, so their problems come back as the
contract's ``ERROR: ...`` texts.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, TypeAdapter

from ..models import Description, Stratum, TagList

#: A stratum given on its own (``create_agent_config``'s is checked before the configuration).
STRATUM: Final = TypeAdapter(Stratum)


class CloneOverrides(BaseModel):
    """What ``clone_agent_config`` may change of the source: its description and tags."""

    description: Description | None = None
    tags: TagList | None = None


class DeleteParameters(BaseModel):
    """``delete_agent_config``'s choice about the agent's history."""

    delete_history: bool = True
