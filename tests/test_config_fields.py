"""A configuration field is declared once (``AgentConfig``): what derives from it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from acti_store.fields import WHEN_SET, marked
from acti_store.models import UPDATABLE_FIELDS, AgentConfig, AgentMetadata, AgentUpdate
from acti_store.repository.statements import AGENT_COLUMNS, CONFIG_COLUMNS, model_reader
from acti_store.schema import ConfigColumns, agent_versions, agents, versions_archive
from acti_store.tools.arguments import _Args
from acti_store.tools.config_args import _with_config_fields


def test_the_updatable_fields_are_the_configuration_but_its_name() -> None:
    assert UPDATABLE_FIELDS == ("description", "system_prompt", "tools", "model", "stratum", "tags")
    assert tuple(AgentUpdate.model_fields) == UPDATABLE_FIELDS
    assert AgentUpdate(tools=None, tags=[]).changes() == {"tags": []}


def test_every_table_holding_a_configuration_has_its_columns() -> None:
    assert set(ConfigColumns.__annotations__) == set(UPDATABLE_FIELDS)
    for table in (agents, agent_versions, versions_archive):
        assert set(UPDATABLE_FIELDS) <= set(table.c.keys()), table.name
    assert [c.key for c in CONFIG_COLUMNS] == list(UPDATABLE_FIELDS)


def test_a_row_is_read_by_name_whatever_the_column_order() -> None:
    values: dict[str, Any] = {c.key: None for c in AGENT_COLUMNS}
    values |= {"name": "a", "tools": ("crm",), "tags": ["x-y"], "version": 2}
    reordered = tuple(reversed(AGENT_COLUMNS))
    read = model_reader(AgentMetadata, reordered)
    metadata = read(tuple(values[c.key] for c in reordered))
    assert metadata.version == 2
    config = model_reader(AgentConfig, reordered)(tuple(values[c.key] for c in reordered))
    assert (config.name, config.tools, config.tags) == ("a", ["crm"], ["x-y"])
    assert list(config.__dict__) == list(AgentConfig.model_fields)


def test_a_field_marked_when_set_is_found_inside_an_optional_type() -> None:
    class Marked(BaseModel):
        plain: str | None = None
        owner: Annotated[str, WHEN_SET] | None = None

    assert marked(Marked, WHEN_SET) == {"owner"}


def test_a_configuration_field_the_contract_lacks_becomes_a_tool_argument() -> None:
    class Contract(_Args):
        """Arguments."""

        name: str

    class Config(BaseModel):
        name: str
        owner: Annotated[str, Field(max_length=5)] | None = Field(None, description="Who owns it")

    args = _with_config_fields("Args", Contract, Config, " Omit to keep it.")
    schema = args.model_json_schema()["properties"]["owner"]
    assert schema["anyOf"] == [{"type": "string", "maxLength": 5}, {"type": "null"}]
    assert schema["description"] == "Who owns it. Omit to keep it."
    assert args(name="a").owner is None
