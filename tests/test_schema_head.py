"""A store at head is recognised without Alembic (``acti_store.schema_head``), and only then."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from acti_store import SchemaVersionError, open_repository
from acti_store.engine import VERSION_TABLE, head_revisions, make_engine
from acti_store.schema_head import HEAD_REVISION, at_head


def test_the_head_constant_is_the_migration_scripts_head() -> None:
    heads = head_revisions()
    assert heads == {HEAD_REVISION}, (
        f"the migration scripts' head is {', '.join(sorted(heads))}, but "
        f"acti_store/schema_head.py says HEAD_REVISION = {HEAD_REVISION!r}: set it to the new "
        "migration's revision id (a store opened at head would otherwise be migrated by Alembic "
        "on every open, or one behind taken for one at head)"
    )


def test_a_migrated_store_is_at_head_and_an_empty_one_is_not(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    try:
        assert not at_head(engine)  # no version table yet: Alembic decides
        open_repository(url).close()
        assert at_head(engine)
    finally:
        engine.dispose()


def test_a_store_at_another_revision_goes_to_alembic_which_refuses_it(tmp_path: Path) -> None:
    # Not recognised at head, so the open asks Alembic, which refuses a revision it does not
    # know (a newer acti_store's) with its own words, as before the fast path.
    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_repository(url).close()
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '9999_from_the_future'"))
        assert not at_head(engine)
    finally:
        engine.dispose()
    with pytest.raises(SchemaVersionError, match="'9999_from_the_future', which this version"):
        open_repository(url)
