"""Every Python and shell example of README.md and docs/ runs, so none can go stale.

The examples are read from the fenced blocks of ``README.md`` and ``docs/**/*.md``. A block is
marked, when it needs to be, by an HTML comment on the line right before its opening fence (the
comment does not show on GitHub or on the docs site):

- no comment: a ```` ```python ```` or ```` ```bash ```` block runs on its own, in a subprocess,
  in a fresh temporary folder with a fresh store (``ACTI_STORE_URL`` is a SQLite file there);
- ``<!-- example: continues -->``: the block runs after the page's previous example, in the same
  process (its Python names carry over), folder and store;
- ``<!-- example: skip (reason) -->``: the block is not run; the reason is required (it installs
  packages, starts a server, calls a hosted model, is a fragment of another file, ...);
- ``<!-- example: postgres -->``: the block runs only when ``ACTI_STORE_TEST_POSTGRES_URL`` is
  set, with ``postgresql+psycopg://app@db/app`` replaced by that URL and the schema ``acti`` by a
  schema of the test's own (dropped after it). ``<!-- example: postgres, continues -->`` combines
  the two;
- ``<!-- example: output -->`` on a ```` ```text ```` block right after a block that runs: what
  that block prints on stdout, exactly (shown as output, not as comments cut off on screen).

A Python block runs as a script would, pasted into a file: no ``await`` at the top level (an
async example defines ``async def main()`` and calls ``asyncio.run(main())``). A bash block runs
with ``bash -e -o pipefail``, with the ``acti-store`` of this environment first on ``PATH``. A
bash block whose lines start with ``$ `` is a transcript: each ``$ `` line is one command, and the
lines up to the next ``$ `` line are exactly what it prints on stdout.

Other fences (``text``, ``ini``, ``toml``, ``json``) are not run; a shell or Python fence under
another name (``sh``, ``console``, ``py``, ...) fails the test, so no example escapes it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = {"python", "bash"}
NOT_RUN = {"text", "ini", "toml", "json"}
FENCE = re.compile(r"^```([\w-]*)\s*$")
MARKER = re.compile(r"^<!-- example: (.*?) -->$")
SKIP = re.compile(r"^skip(?: \((.*)\))?$")
#: The placeholders that a PostgreSQL example's run replaces.
PG_PLACEHOLDER = "postgresql+psycopg://app@db/app"
PG_SCHEMA = re.compile(r"(?<![\w-])acti(?![\w-])")
#: Variables of the caller that would change what an example does.
CLEARED = (
    "ACTI_STORE_URL",
    "ACTI_STORE_SCHEMA",
    "ACTI_STORE_TENANTS",  # the examples run as a new store does: strict (the suite's is open)
    "ACTI_STORE_EXPORT_DIR",
    "ACTI_STORE_MCP_CONFIG",
    "ACTI_STORE_MCP_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GOOGLE_API_KEY",
)


@dataclass
class Block:
    page: Path
    line: int  # the line of the opening fence, 1-based
    lang: str
    code: str
    marks: list[str] = field(default_factory=list)
    #: What the block prints on stdout, from the ``output`` block right after it (None: unchecked).
    output: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        for mark in self.marks:
            found = SKIP.match(mark)
            if found:
                return found.group(1) or ""
        return None

    @property
    def runs(self) -> bool:
        return self.lang in RUN and self.skip_reason is None


def blocks(page: Path) -> Iterator[Block]:
    """Every fenced block of ``page``, with the marks of the comment right before it."""
    lines = page.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i] == "```")
        marker = MARKER.match(lines[index - 1]) if index else None
        marks = [m.strip() for m in marker.group(1).split(",")] if marker else []
        code = "\n".join(lines[index + 1 : end]) + "\n"
        yield Block(page, index + 1, opening.group(1), code, marks)
        index = end + 1


def with_outputs(page: Path) -> Iterator[Block]:
    """The blocks of ``page``, each ``output`` block given to the block that runs right before it
    (and not yielded itself)."""
    previous: Block | None = None
    for block in blocks(page):
        if "output" in block.marks:
            assert block.lang == "text", f"{block.where}: an output block is a text block"
            assert previous is not None and previous.runs, f"{block.where} follows no example"
            assert previous.output is None, f"{block.where}: a second output block"
            previous.output = block.code
        else:
            yield block
        previous = block


def runs() -> list[list[Block]]:
    """The examples to run, grouped: a block marked ``continues`` joins the group before it."""
    groups: list[list[Block]] = []
    for page in PAGES:
        for block in with_outputs(page):
            if not block.runs:
                continue
            if "continues" in block.marks:
                assert groups and groups[-1][0].page == page, f"{block.where} continues nothing"
                groups[-1].append(block)
            else:
                groups.append([block])
    return groups


#: Runs in the subprocess: the blocks of one group, in order, in one namespace.
DRIVER = r"""
import json, os, subprocess, sys

blocks = json.loads(sys.argv[1])
if os.environ.get("DOCS_BLOCK_GREENLET"):
    sys.modules["greenlet"] = None  # a plain install: no greenlet to import
namespace = {"__name__": "__main__"}


def run_bash(block):
    lines = block["code"].rstrip("\n").split("\n")
    if not lines[0].startswith("$ "):
        subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block["code"]], check=True)
        return
    steps = []
    for line in lines:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    for command, expected in steps:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command],
                              capture_output=True, text=True)
        if done.returncode != 0 or done.stdout.splitlines() != expected:
            sys.exit(f"{block['where']}: $ {command}\nexit {done.returncode}\n"
                     f"expected:\n" + "\n".join(expected) + f"\ngot:\n{done.stdout}{done.stderr}")


for block in blocks:
    print(f"--- {block['where']}", flush=True)
    if block["lang"] == "bash":
        run_bash(block)
        continue
    source = "\n" * block["line"] + block["code"]
    exec(compile(source, block["page"], "exec"), namespace)  # as a script: no top-level await
    sys.stdout.flush()
if os.environ.get("DOCS_BLOCK_GREENLET"):
    assert "sqlalchemy.ext.asyncio" not in sys.modules, "the async engine's module was imported"
"""


def run_group(group: list[Block], folder: Path, **extra_env: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env["ACTI_STORE_URL"] = f"sqlite:///{folder / 'acti_store.db'}"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra_env)
    payload = [
        {
            "where": b.where,
            "page": str(b.page),
            "line": b.line,
            "lang": b.lang,
            "code": b.code,
        }
        for b in group
    ]
    postgres = any("postgres" in b.marks for b in group)
    schema = f"docs_{uuid.uuid4().hex[:12]}"
    if postgres:
        url = os.environ.get("ACTI_STORE_TEST_POSTGRES_URL")
        if not url:
            pytest.skip("ACTI_STORE_TEST_POSTGRES_URL is not set")
        for item in payload:
            item["code"] = PG_SCHEMA.sub(schema, item["code"].replace(PG_PLACEHOLDER, url))
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER, json.dumps(payload)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        if postgres:
            drop_schema(os.environ["ACTI_STORE_TEST_POSTGRES_URL"], schema)
    assert done.returncode == 0, f"{group[0].where}\n{done.stdout}\n{done.stderr}"
    printed = printed_by_block(done.stdout)
    for block in group:
        if block.output is not None:
            assert printed[block.where] == block.output, f"{block.where} printed otherwise"


def printed_by_block(stdout: str) -> dict[str, str]:
    """What each block of a run printed, by its place: the driver starts each with ``--- ``."""
    printed: dict[str, str] = {}
    where = ""
    for line in stdout.splitlines(keepends=True):
        if line.startswith("--- "):
            where = line[4:].rstrip("\n")
            printed[where] = ""
        else:
            printed[where] = printed.get(where, "") + line
    return printed


def drop_schema(url: str, schema: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        engine.dispose()


GROUPS = runs()


@pytest.mark.parametrize("group", GROUPS, ids=[g[0].where for g in GROUPS])
def test_the_example_runs(group: list[Block], tmp_path: Path) -> None:
    run_group(group, tmp_path)


def test_every_skipped_example_says_why() -> None:
    skipped = [b for page in PAGES for b in blocks(page) if b.skip_reason is not None]
    assert skipped, "no example is skipped: is the marker still read?"
    assert [b.where for b in skipped if not b.skip_reason.strip()] == []


def test_every_marker_is_understood_and_sits_on_a_fence() -> None:
    marked = {b.where: b.marks for page in PAGES for b in blocks(page) if b.marks}
    unknown = {
        where: marks
        for where, marks in marked.items()
        if any(m not in ("continues", "postgres", "output") and not SKIP.match(m) for m in marks)
    }
    assert unknown == {}
    comments = sum(
        1
        for page in PAGES
        for line in page.read_text(encoding="utf-8").split("\n")
        if line.startswith("<!-- example:")
    )
    assert comments == len(marked), "a marker comment is not right before a fence"


def test_no_example_hides_under_another_language() -> None:
    langs = {(b.where, b.lang) for page in PAGES for b in blocks(page)}
    assert [x for x in langs if x[1] not in RUN | NOT_RUN] == []


def test_readme_set_up_commands_are_its_first_two_bash_blocks() -> None:
    """CI runs these two commands exactly as README shows them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n## Set up\n" in readme
    bash = [b.code for b in blocks(ROOT / "README.md") if b.lang == "bash"]
    assert bash[:2] == [
        "pip install -e . && acti-store quickstart\n",
        'pip install -e ".[dev]" && python -m pytest\n',
    ]


def test_readme_async_example_runs_without_greenlet(tmp_path: Path) -> None:
    """A plain install has no greenlet: README's async example runs on SQLite without it."""
    readme = [b for b in blocks(ROOT / "README.md") if b.runs and b.lang == "python"]
    first_async = next(i for i, b in enumerate(readme) if "asyncio" in b.code)
    group = readme[: first_async + 1]
    assert "continues" in group[-1].marks
    run_group(group, tmp_path, DOCS_BLOCK_GREENLET="1")


def test_the_api_reference_names_every_public_name() -> None:
    import acti_store

    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: acti_store\.(\w+)$", reference, flags=re.MULTILINE))
    assert sorted(set(acti_store.__all__) - documented) == []


def test_every_output_block_follows_an_example() -> None:
    """An ``output`` block belongs to the block right before it, which runs."""
    every = [b for page in PAGES for b in list(with_outputs(page))]  # outputs given: all read
    outputs = [b for b in every if b.output is not None]
    assert outputs, "no example shows its output: is the marker still read?"


def test_no_example_shows_its_output_in_trailing_comments() -> None:
    """A ``print(...)  # what it prints`` is cut off on a narrow screen and never checked: the
    output goes in an ``output`` block."""
    found = [
        f"{b.where}: {line.strip()}"
        for page in PAGES
        for b in blocks(page)
        if b.lang == "python" and b.runs
        for line in b.code.splitlines()
        if re.match(r"\s*print\(.*\)\s+#", line)
    ]
    assert found == []


def test_the_home_page_lists_every_page_of_the_site() -> None:
    """docs/index.md's table names every page of the nav but itself, and its intro every
    engine."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.findall(r"^\s+- (.+): ([\w-]+\.md)$", config, flags=re.MULTILINE)
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    rows = {
        page: title
        for title, page in re.findall(r"^\| \[(.+?)\]\(([\w-]+\.md)\) \|", home, flags=re.M)
    }
    missing = [(t, page) for t, page in nav if page != "index.md" and rows.get(page) != t]
    assert missing == []
    intro = home.split("\n## ", 1)[0]
    assert all(engine in intro for engine in ("SQLite", "PostgreSQL", "MariaDB"))


def test_the_site_loads_no_font_from_the_network() -> None:
    """Material loads Google Fonts unless told not to: offline, the site waits for them."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^theme:\n(?:  .*\n)*  font: false\b", config, flags=re.MULTILINE)


def test_every_docs_page_is_in_the_site_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert sorted(p for p in pages if f": {p}\n" not in config) == []


@pytest.mark.slow
def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """``mkdocs build --strict``: no broken link, include or API reference entry."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "reference" / "index.html").exists()


def test_readme_install_table_has_every_extra() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (none|`[a-z]+`) \| `(pip install [^`]+)` \|", readme, re.M))
    assert rows.pop("none") == "pip install -e ."
    assert rows == {f"`{extra}`": f'pip install -e ".[{extra}]"' for extra in extras}


def test_readme_and_host_page_name_every_table_of_the_store() -> None:
    from acti_store.migrations import VERSION_TABLE
    from acti_store.migrations.names import ORM_TABLES

    # The ORM's tables, and those one engine's revisions make: SQLite's text index, MariaDB's
    # trigrams, PostgreSQL's tenant-bound logins.
    names = {*ORM_TABLES, "agents_fts*", "agent_trigrams", "agent_tenant_logins", VERSION_TABLE}
    for page in (ROOT / "README.md", ROOT / "docs" / "host-app.md"):
        text = page.read_text(encoding="utf-8")
        paragraph = text.split("already has an `agents` table", 1)[1].lstrip("\n*").split("\n\n")[0]
        assert sorted(set(re.findall(r"`([a-z_*]+)`", paragraph)) ^ names) == [], page.name
