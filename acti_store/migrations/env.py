"""``script_location = acti_store:migrations`` in a source checkout (``pip install -e .``).

The installed wheel holds acti_store's Alembic scripts in this folder: ``pyproject.toml`` puts
the checkout's top-level ``migrations/`` here, its ``env.py`` in this file's place. A checkout
keeps them in that folder, so Alembic, told this one, finds this file and no revisions: it
points Alembic's script directory and its config at that folder, then runs its ``env.py``,
which runs as the wheel's does. Alembic reads a script directory's revisions (from ``dir``)
when it first needs one, after ``env.py`` has started, in every command that runs ``env.py``
(``upgrade``, ``downgrade``, ``stamp``, ``current``, ``check``); ``tests/test_host_alembic.py``
runs the recipe of docs/host-app.md on an editable install, and fails if Alembic reads them
earlier. (``heads`` and ``history`` run no ``env.py``: they see no revision in a checkout.)
"""

from __future__ import annotations

import runpy

from alembic import context

from acti_store.engine import migrations_dir


def run_checkout_scripts() -> None:
    """Run the checkout's ``migrations/env.py`` as the script directory Alembic was told."""
    scripts = migrations_dir()
    context.config.set_main_option("script_location", str(scripts).replace("%", "%%"))
    context.script.dir = str(scripts)
    runpy.run_path(str(scripts / "env.py"), run_name="acti_store_migrations_env")


run_checkout_scripts()
