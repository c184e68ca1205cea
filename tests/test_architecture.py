"""The shape of the package: every module small enough to read, and imports that flow one way.

The import graph is read from the source with ``ast`` (no import runs), including imports inside
functions, which could otherwise hold two modules in a cycle that only shows at run time. Imports
under ``if TYPE_CHECKING:`` are annotations, not dependencies, and are left out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

PACKAGE: Final = "acti_store"
ROOT: Final = Path(__file__).resolve().parent.parent / PACKAGE
#: Longest module, in lines. The contract's text templates (``texts.py``) are data, not logic: the
#: contract fixes their size, so they are the one exception.
MAX_LINES: Final = 500
TEMPLATE_MODULES: Final = frozenset({"acti_store/tools/texts.py"})
#: The modules below the repository interface (besides the ``repository`` package itself).
STORAGE_MODULES: Final = frozenset(
    f"acti_store.{name}"
    for name in (
        *(
            "engine",
            "engine_registry",
            "migration_policy",
            "column_types",
            "sqlexec",
            "prepared",
            "schema",
            "dberrors",
            "errors",
            "models",
            "limits",
            "field_types",
            "domain_model",
            "history",
            "search_query",
            "validation",
            "versioning",
        ),
    )
)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, typing: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports of ``tree``; those under ``if TYPE_CHECKING:`` only when ``typing``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing:
            yield from (i for n in node.orelse for i in _imports_in(n, typing))
            continue
        yield from _imports_in(node, typing)


def _imports_in(node: ast.AST, typing: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _imports(node, typing)


def _targets(module: str, path: Path, modules: dict[str, Path], typing: bool = False) -> set[str]:
    """The package's modules that ``module`` imports (``typing``: for type checking too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8")), typing):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            targets.add(submodule if submodule in modules else base)
    return {t for t in targets if t in modules and t != module}


def _graph(root: Path = ROOT, typing: bool = False) -> dict[str, set[str]]:
    modules = _modules(root)
    return {name: _targets(name, path, modules, typing) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    graph = _graph()
    assert graph["acti_store.bootstrap"], "the walk found no imports: it is broken"
    assert _cycles(graph) == []


def test_no_import_circle_anywhere_in_the_package_or_the_benchmarks() -> None:
    """Imports made only for type checking count too: a reader follows them as any other."""
    package = _graph(typing=True)
    benchmarks = _graph(ROOT.parent / "benchmarks", typing=True)
    assert benchmarks["benchmarks.run"], "the walk found no imports: it is broken"
    assert _cycles(package) == []
    assert _cycles(benchmarks) == []


def test_the_revisions_helpers_sit_below_the_code_that_runs_alembic() -> None:
    """``acti_store.revisions`` runs Alembic around the revisions and imports what they share
    (``migrations.names``, ``migrations.progress``); nothing under ``acti_store.migrations``
    imports it back."""
    graph = _graph(typing=True)
    assert "acti_store.migrations.progress" in graph["acti_store.revisions"]
    up = {m for m, targets in graph.items() if m.startswith("acti_store.migrations")} & {
        m for m, targets in graph.items() if "acti_store.revisions" in targets
    }
    assert up == set()


def test_the_cycle_check_finds_a_cycle_held_apart_by_a_deferred_import(tmp_path: Path) -> None:
    # The check itself: two modules that import each other, one of them inside a function.
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import f\n")
    (package / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    modules = {
        name: package / f"{name.rpartition('.')[2]}.py" for name in (f"{PACKAGE}.a", f"{PACKAGE}.b")
    }
    graph = {name: _targets(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == [[f"{PACKAGE}.a", f"{PACKAGE}.b"]]


def test_storage_layers_import_nothing_above_them() -> None:
    """The engine and the repository know neither the JSON interchange, the tools nor the CLI:
    Alembic's ``env.py`` loads the engine, and must not pull the rest of the library in."""
    graph = _graph()
    above = ("acti_store.interchange", "acti_store.tools", "acti_store.cli", "acti_store.execution")
    for module, targets in graph.items():
        if module in STORAGE_MODULES or module.startswith("acti_store.repository"):
            assert not [t for t in targets if t.startswith(above)], module


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    too_long = {
        str(path.relative_to(ROOT.parent)): lines
        for path in ROOT.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(path.relative_to(ROOT.parent)) not in TEMPLATE_MODULES
    }
    assert too_long == {}


#: Where what differs between engines lives: one folder per engine (STYLE.md 14).
ENGINE_FOLDERS: Final = "acti_store/engines/"
#: A condition that names an engine, or asks the dialect or URL which one it is; one that asks
#: the engine's part for what it does (``engine_for``, ``migration_policy``, ...), naming none,
#: is no question.
_ENGINE_QUESTION: Final = re.compile(
    r"sqlite|postgres|mariadb|mysql|dialect\.name|get_backend_name", re.IGNORECASE
)
_ENGINE_NAME: Final = re.compile(r"sqlite|postgres|mariadb|mysql", re.IGNORECASE)
_ASKS_THE_ENGINE: Final = re.compile(
    r"\b(engine_for|find_engine|connection_of|engine_types|migration_policy|strategy_for)\("
)
#: Conditions on the engine known to remain outside the engine folders, by file: none left.
KNOWN_ENGINE_QUESTIONS: Final[dict[str, int]] = {}


def _engine_questions(path: Path) -> list[str]:
    """The conditions in ``path`` that ask which engine runs: the tests of ``if``, ``while``,
    conditional expressions and comprehensions, and every comparison, that name one."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    tests: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.While | ast.Assert):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        elif isinstance(node, ast.Compare | ast.match_case):
            tests.append(node.pattern if isinstance(node, ast.match_case) else node)
    found: dict[int, str] = {}  # by line: a comparison inside an ``if`` is one question
    for test in tests:
        text = ast.get_source_segment(source, test) or ""
        line = getattr(test, "lineno", 0)
        asks_the_registry = _ASKS_THE_ENGINE.search(text) and not _ENGINE_NAME.search(text)
        if asks_the_registry:
            continue
        if _ENGINE_QUESTION.search(text) and len(text) > len(found.get(line, "")):
            found[line] = text
    return [f"line {line}: {text}" for line, text in sorted(found.items())]


def test_only_the_engine_folders_ask_which_engine_they_run_on() -> None:
    """Outside ``acti_store/engines`` no code branches on the engine: it asks the engine's part
    (``engine_registry.engine_for``, ``strategy_for``) instead, so a new engine cannot silently
    get another engine's SQL or policy in an ``else``."""
    found: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        name = str(path.relative_to(ROOT.parent))
        if not name.startswith(ENGINE_FOLDERS) and (questions := _engine_questions(path)):
            found[name] = questions
    counts = {name: len(questions) for name, questions in found.items()}
    assert counts == KNOWN_ENGINE_QUESTIONS, found


def test_the_engine_question_check_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / PACKAGE / "sample.py"
    sample.parent.mkdir()
    sample.write_text(
        "sqlite = engine.dialect.name == 'sqlite'\n"
        "x = 1 if sqlite else 2\n"
        "if cursor.dialect.name != 'postgresql':\n    pass\n"
        "y = [a for a in b if a.url.get_backend_name()]\n"
        "z = engine.name\n",
        encoding="utf-8",
    )
    assert len(_engine_questions(sample)) == 4


def test_only_the_engine_folders_write_an_engine_s_own_sql() -> None:
    """An engine's own SQL constructs (``ON CONFLICT``, ``= ANY(ARRAY)``, ...) come from its
    SQLAlchemy dialect module: only the engine folders import one."""
    for path in sorted(ROOT.rglob("*.py")):
        name = str(path.relative_to(ROOT.parent))
        if name.startswith(ENGINE_FOLDERS):
            continue
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            modules = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            )
            assert not any((m or "").startswith("sqlalchemy.dialects") for m in modules), name


def test_an_unknown_engine_is_refused_in_one_place() -> None:
    """``strategy_for`` is where an engine is chosen; an engine without a strategy is refused
    there, before the repository uses anything of it."""
    from types import SimpleNamespace

    import pytest

    from acti_store import SqlAgentRepository, StoreUrlError
    from acti_store.repository.strategy import strategy_for

    assert strategy_for("sqlite").name == "sqlite"
    assert strategy_for("postgresql").name == "postgresql"
    assert strategy_for("mysql").name == "mysql"
    with pytest.raises(StoreUrlError, match="does not support oracle databases"):
        strategy_for("oracle")
    engine: Any = SimpleNamespace(dialect=SimpleNamespace(name="oracle"))
    with pytest.raises(StoreUrlError, match="does not support oracle databases"):
        SqlAgentRepository(engine)


def test_each_registered_engine_is_a_folder_with_every_part() -> None:
    """Each engine of the registry is a folder that gives every part the package asks for
    (its connection policy, its strategy for each of its databases, its doctor's checks), and
    each folder under ``acti_store/engines`` is registered: an engine added to one and not the
    other fails here."""
    from acti_store.dberrors import ErrorCodes
    from acti_store.engine import EngineConnection
    from acti_store.engine_registry import DATABASES, ENGINES
    from acti_store.repository.strategy import strategy_for

    folders = {p.name for p in (ROOT / "engines").iterdir() if (p / "__init__.py").is_file()}
    assert folders == {entry.folder for entry in ENGINES}
    for entry in ENGINES:
        connection = entry.part("connection")
        for function in ("make", "store_file", "migrating", "migrated"):
            assert callable(getattr(connection, function)), (entry.folder, function)
        assert set(entry.part("statements").STRATEGIES) == set(entry.databases)
        assert entry.part("doctor").CHECKS
        errors = entry.part("errors").ERRORS
        for method in ErrorCodes.__dict__:
            if not method.startswith("_"):
                assert callable(getattr(errors, method)), (entry.folder, method)
        types = entry.part("types").TYPES
        assert isinstance(types.naive_timestamps, bool)
        for method in ("long_text", "double_float", "timestamp", "timestamp_bind"):
            assert callable(getattr(types, method)), (entry.folder, method)
        migration = entry.part("migration").MIGRATION
        assert isinstance(migration.transactional_ddl, bool)
        for method in ("lock", "unlock", "mark", "recover", "relation_names", "place"):
            assert callable(getattr(migration, method)), (entry.folder, method)
    assert {name for name in EngineConnection.__dict__ if not name.startswith("_")} == {
        "make",
        "store_file",
        "migrating",
        "migrated",
    }
    for name in DATABASES:
        assert strategy_for(name).name == name


def test_nothing_imports_an_engine_folder_but_the_registry() -> None:
    """The engines import the package and the package reaches them only through the registry
    (``engine_for(...).part``): no module outside ``acti_store/engines`` imports one, so no
    import runs from the layers below back up to an engine's statements or checks."""
    engines = f"{PACKAGE}.engines"
    found = {
        name: sorted(t for t in targets if t == engines or t.startswith(f"{engines}."))
        for name, targets in _graph(typing=True).items()
        if not (name == engines or name.startswith(f"{engines}."))
    }
    assert {name: targets for name, targets in found.items() if targets} == {}
