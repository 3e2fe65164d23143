"""The shape of the package: the layers and the module map of docs/architecture.md held to the
code (issue 21), no import circle, no private name taken across modules, no module over 700
lines and no function over 80 but the embedded helper's, framework names spelled in one module,
``@model`` for values only, one module that starts processes, and no private module of
CPython's imported.

Everything is read from the source with :mod:`ast`; nothing is imported, so a broken module is
found here as well as by the tests that import it.

An import edge is any ``import`` or ``from ... import`` of a colabenv module, at module level or
inside a function alike: a function-level import is the same dependency, only paid later, and a
circle through one is still two modules that cannot be understood apart. Imports under
``if TYPE_CHECKING:`` are left out of the circle check (they never run, and are how a type is
named without depending on its module); the other checks read them too. Importing
``colabenv.a.b`` also imports the package ``colabenv.a`` first; that implicit edge is not
counted (every package would otherwise be a circle with its own submodules). Circles are looked
for between modules, and between packages: the parts of each package (its modules, and its
subpackages each taken whole) import each other in no circle either.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import colabenv
from colabenv.models import Framework
from colabenv.models.frameworks import ALL_FRAMEWORK_NAMES

PACKAGE = Path(colabenv.__file__).resolve().parent
MAX_LINES = 700
LONG_MODULES = {
    "colabenv._target.helper": "the helper every bootstrap script embeds is one file "
    "by design (it runs without colabenv)"
}
COMMAND_LAYER = ("colabenv.cli", "colabenv.__main__")
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
FACES = {
    "colabenv": "the Python API (bootstrap, verify, seed_everything), imported lazily",
    "colabenv.models": "names every model, so that a model is taken from one place",
}
"""The packages whose ``__init__`` holds more than its docstring."""
FRAMEWORK_NAME_EXCEPTIONS = {
    "colabenv.models.frameworks": "the one place framework names are spelled",
    "colabenv._target.smoke.tpu": "a smoke child runs without colabenv (stdlib only, Python 3.8+) and "
    "imports the frameworks and their plugins by their module names",
}


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


@functools.cache
def tree(module: str) -> ast.Module:
    path = modules()[module]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(module: str, *, type_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``module`` anywhere in it; with ``type_only`` False, not the
    ones under ``if TYPE_CHECKING:``."""

    def visit(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            for child in node.orelse:
                yield from visit(child)
            return
        for child in ast.iter_child_nodes(node):
            yield from visit(child)

    yield from visit(tree(module))


def _base(module: str, node: ast.ImportFrom) -> str:
    """The module a ``from`` import reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = module if modules()[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imported(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str | None]]:
    """``(colabenv module, name taken from it or None)`` for each thing the statement imports;
    a submodule taken with ``from package import sub`` is the module itself."""
    known = modules()
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                yield name, None
        return
    base = _base(module, node)
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            yield f"{base}.{alias.name}", None
        elif base in known:
            yield base, alias.name


def edges(*, type_only: bool = False) -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line of the first such import}."""
    graph: dict[str, dict[str, int]] = {}
    for module in modules():
        targets: dict[str, int] = {}
        for node in import_nodes(module, type_only=type_only):
            for target, _ in imported(module, node):
                if target != module:
                    targets.setdefault(target, node.lineno)
        graph[module] = targets
    return graph


def circles(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                connect(target)
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
            connect(node)
    return found


def packages() -> list[str]:
    """Every package of colabenv (a module whose file is an ``__init__.py``), colabenv first."""
    return [module for module, path in modules().items() if path.name == "__init__.py"]


def part_graph(graph: dict[str, dict[str, int]], package: str) -> dict[str, dict[str, str]]:
    """The imports between the parts of ``package``: the package's own ``__init__``, each of
    its modules, and each of its subpackages taken whole (everything under it one node), as
    {part: {part it imports: the first import that says so}}."""
    prefix = package + "."

    def part(module: str) -> str | None:
        if module == package:
            return package
        if not module.startswith(prefix):
            return None
        return prefix + module[len(prefix) :].split(".")[0]

    found: dict[str, dict[str, str]] = {}
    for module, targets in sorted(graph.items()):
        here = part(module)
        if here is None:
            continue
        for target, line in sorted(targets.items()):
            there = part(target)
            if there is not None and there != here:
                found.setdefault(here, {}).setdefault(there, f"{module} imports {target} (line {line})")
    return found


def package_circles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each circle between the parts of a package, with the imports that close it."""
    shown = []
    for package in packages():
        parts = part_graph(graph, package)
        for component in circles(parts):
            evidence = [parts[a][b] for a in component for b in component if b in parts.get(a, {})]
            shown.append(" <-> ".join(component) + ": " + "; ".join(evidence))
    return shown


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def private_crossings(module: str) -> list[str]:
    """``line: module.name`` for each private name of another colabenv module that ``module``
    imports or reads as an attribute of an imported module."""
    known = modules()
    bound: dict[str, str] = {}
    found = []
    for node in import_nodes(module, type_only=True):
        for target, name in imported(module, node):
            if name is not None:
                if is_private(name) and target != module:
                    found.append(f"{node.lineno}: from {target} import {name}")
                continue
            if isinstance(node, ast.ImportFrom):
                alias = next(a for a in node.names if f"{_base(module, node)}.{a.name}" == target)
                bound[alias.asname or alias.name] = target
            else:
                for alias in node.names:
                    if alias.asname:
                        bound[alias.asname] = target
                    else:
                        bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
    for node in ast.walk(tree(module)):
        if not isinstance(node, ast.Attribute):
            continue
        parts = _dotted(node)
        if parts is None or parts[0] not in bound:
            continue
        path = bound[parts[0]]
        for part in parts[1:]:
            if f"{path}.{part}" in known:
                path = f"{path}.{part}"
                continue
            if is_private(part) and path != module:
                found.append(f"{node.lineno}: {path}.{part}")
            break
    return sorted(set(found), key=lambda text: (int(text.partition(":")[0]), text))


def code_strings(module: str) -> Iterator[tuple[int, str]]:
    """The string constants of ``module`` that are not docstrings, with their lines."""
    docstrings: set[int] = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


# ---------------------------------------------------------------------------------------------
# The checks


def test_the_package_is_read_whole() -> None:
    """The checks below see every module (a path mistake would make them pass vacuously)."""
    assert {
        "colabenv.cli.main",
        "colabenv.profile.load",
        "colabenv.profile.sections",
        "colabenv.verification.run",
        "colabenv._target.helper",
    } <= set(modules())
    assert "colabenv.profile.files" in edges()["colabenv.profile.load"]


def test_no_import_circle() -> None:
    graph = edges()
    found = circles(graph)
    shown = [
        " -> ".join(component)
        + ": "
        + ", ".join(
            f"{a} imports {b} (line {graph[a][b]})" for a in component for b in component if b in graph[a]
        )
        for component in found
    ]
    assert shown == []


def test_the_circle_check_finds_a_circle() -> None:
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert circles({"a": {"b": 1}, "b": {}}) == []


KNOWN_PACKAGE_CIRCLES: list[str] = []
"""Package circles at run time that are known and left for later (none now: issue 33 ended the
``catalog`` <-> ``host`` one, ``catalog.refresh`` reading ``host.detect``'s freeze parser)."""


def test_no_package_circle() -> None:
    """No two packages import each other at run time, through any of their modules, a
    function-level import counted; ``if TYPE_CHECKING:`` imports are not (they never run)."""
    assert len(packages()) >= 10 and "colabenv" in packages()
    assert package_circles(edges()) == KNOWN_PACKAGE_CIRCLES


def test_the_package_circle_check_finds_a_circle_through_subpackages() -> None:
    """The check of issue 33's ``catalog`` <-> ``host``: modules apart, packages in a circle."""
    graph = {
        "colabenv.catalog.refresh.runtimes": {"colabenv.host.detect": 179},
        "colabenv.host.detect": {"colabenv.catalog.load": 12, "colabenv.models": 3},
        "colabenv.catalog.load": {"colabenv.models": 2},
    }
    assert circles(graph) == []
    assert part_graph(graph, "colabenv") == {
        "colabenv.host": {
            "colabenv.catalog": "colabenv.host.detect imports colabenv.catalog.load (line 12)",
            "colabenv.models": "colabenv.host.detect imports colabenv.models (line 3)",
        },
        "colabenv.catalog": {
            "colabenv.host": "colabenv.catalog.refresh.runtimes imports colabenv.host.detect (line 179)",
            "colabenv.models": "colabenv.catalog.load imports colabenv.models (line 2)",
        },
    }
    assert package_circles(graph) == [
        "colabenv.catalog <-> colabenv.host: "
        "colabenv.catalog.refresh.runtimes imports colabenv.host.detect (line 179); "
        "colabenv.host.detect imports colabenv.catalog.load (line 12)"
    ]
    inside = {"colabenv.catalog.refresh.runtimes": {"colabenv.catalog.load": 5}, "colabenv.catalog.load": {}}
    assert package_circles(inside) == []


def test_the_catalog_imports_nothing_of_curation_or_the_host() -> None:
    """The catalog the resolver loads is data and its loader: what keeps it up to date
    (:mod:`colabenv.curation`) and what reads the host sit above it, type-only imports
    included."""
    above = ("colabenv.curation", "colabenv.host")
    catalog = [
        module
        for module in modules()
        if module == "colabenv.catalog" or module.startswith("colabenv.catalog.")
    ]
    assert "colabenv.catalog.load" in catalog
    found = [
        f"{module} imports {target} (line {line})"
        for module in catalog
        for target, line in edges(type_only=True)[module].items()
        if any(target == name or target.startswith(name + ".") for name in above)
    ]
    assert found == []


def test_no_private_name_is_taken_across_modules() -> None:
    found = {module: crossings for module in modules() if (crossings := private_crossings(module))}
    assert found == {}


def test_the_private_name_check_sees_imports_and_attributes(tmp_path: Path) -> None:
    source = (
        "from colabenv.script import render; from colabenv._util import toml\n"
        "from colabenv.script.render import _lock_file\n"
        "import colabenv.host.detect as d\n"
        "import colabenv.profile.load\n"
        "def f():\n"
        "    from colabenv.profile.sections import (\n"
        "        build,\n"
        "        _framework,\n"
        "    )\n"
        "    return (render._comment, d._installed_set, toml.loads, d.__name__,\n"
        "            colabenv.profile.files._os_problem)\n"
    )
    tree.cache_clear()
    modules()["colabenv.example_for_test"] = tmp_path / "example.py"
    (tmp_path / "example.py").write_text(source)
    try:
        assert private_crossings("colabenv.example_for_test") == [
            "2: from colabenv.script.render import _lock_file",
            "6: from colabenv.profile.sections import _framework",
            "10: colabenv.host.detect._installed_set",
            "10: colabenv.script.render._comment",
            "11: colabenv.profile.files._os_problem",
        ]
    finally:
        del modules()["colabenv.example_for_test"]
        tree.cache_clear()


# ---------------------------------------------------------------------------------------------
# The contract in docs/architecture.md


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table under ``## heading`` in docs/architecture.md, as cells."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _names(cell: str) -> list[str]:
    return re.findall(r"`(colabenv[A-Za-z0-9_.]*)`", cell)


@functools.cache
def declared_layers() -> list[tuple[str, tuple[str, ...]]]:
    """(layer, the packages and modules it holds), from the bottom up."""
    return [(row[0], tuple(_names(row[1]))) for row in _table("Layers")]


def layer_of(module: str) -> tuple[int, str]:
    """The layer ``module`` is in, by the most specific name the table gives for it."""
    best: tuple[int, str] | None = None
    for index, (_, names) in enumerate(declared_layers()):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                best is None or len(name) > len(best[1])
            ):
                best = (index, name)
    if best is None:
        raise LookupError(f"{module} is in no layer of docs/architecture.md")
    return best


def test_every_module_is_in_a_layer_and_each_name_is_a_module() -> None:
    layered = [name for _, names in declared_layers() for name in names]
    assert len(declared_layers()) >= 8
    assert sorted(set(layered) - set(modules())) == [], "a layer names no module"
    assert len(layered) == len(set(layered)), "a name in two layers"
    unplaced = []
    for module in modules():
        try:
            layer_of(module)
        except LookupError as missing:
            unplaced.append(str(missing))
    assert unplaced == []


def layer_breaks(graph: dict[str, dict[str, int]]) -> list[str]:
    layers = declared_layers()
    found = []
    for module, targets in graph.items():
        here = layer_of(module)[0]
        for target, line in targets.items():
            there = layer_of(target)[0]
            if there > here:
                found.append(
                    f"{module} ({layers[here][0]}) imports {target} ({layers[there][0]}), line {line}"
                )
    return sorted(found)


def test_every_import_keeps_to_the_layers() -> None:
    """A module imports only from its own layer and the layers below it, type-only imports
    included (as import-linter's layers contract)."""
    assert layer_breaks(edges(type_only=True)) == []


def test_the_layer_check_finds_an_import_upwards() -> None:
    graph = {
        "colabenv.script.render": {"colabenv.host.detect": 7},
        "colabenv.host.detect": {"colabenv.models": 3},
    }
    assert layer_breaks(graph) == [
        "colabenv.script.render (writing) imports colabenv.host.detect (the host), line 7"
    ]


def test_programs_for_the_target_import_nothing_of_colabenv() -> None:
    found = [
        f"{module} imports {target} (line {line})"
        for module, targets in edges(type_only=True).items()
        if module.startswith("colabenv._target")
        for target, line in targets.items()
        if not target.startswith("colabenv._target")
    ]
    assert found == []
    smoke = [m for m in modules() if m.startswith("colabenv._target.smoke.")]
    for module in smoke:
        for node in import_nodes(module, type_only=True):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{module}: the smoke modules import each other by plain names"


def test_the_module_map_names_every_module_once() -> None:
    mapped = [name for row in _table("Module map") for name in _names(row[0])]
    assert len(mapped) == len(set(mapped)), sorted({m for m in mapped if mapped.count(m) > 1})
    assert sorted(set(modules()) - set(mapped)) == [], "modules the map leaves out"
    assert sorted(set(mapped) - set(modules())) == [], "names in the map that are no module"
    described = [row for row in _table("Module map") if len(row) < 2 or not row[1]]
    assert described == []


def test_every_module_a_docstring_names_exists() -> None:
    """``:mod:`colabenv.x``` and ``:mod:`.x``` in the source, and ``colabenv/x/y.py`` paths, name
    modules that exist: a move that leaves a docstring behind fails here."""
    found = []
    for module, path in modules().items():
        text = path.read_text(encoding="utf-8")
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for ref in re.findall(r":mod:`~?([.\w]+)`", text):
            name = package + ref if ref.startswith(".") else ref
            if name.startswith("colabenv") and name not in modules():
                found.append(f"{module}: {ref}")
        for ref in re.findall(r"(?<![\w/])(colabenv/[\w/]+\.py)\b", text):
            if not (PACKAGE.parent / ref).is_file():
                found.append(f"{module}: {ref}")
    assert found == []


def test_a_package_init_is_its_docstring() -> None:
    """A package's ``__init__.py`` says what the package is and holds nothing else, but the
    faces in :data:`FACES`."""
    found = []
    for module, path in modules().items():
        if path.name != "__init__.py" or module in FACES:
            continue
        body = tree(module).body
        if not (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            found.append(module)
    assert found == []


def test_one_module_starts_processes() -> None:
    """Within colabenv (the target's programs are their own processes), only
    :mod:`colabenv._util.processes` imports :mod:`subprocess` or forks and execs."""
    starts = re.compile(r"^os\.(fork|forkpty|exec\w*|spawn\w*|posix_spawn\w*|system|popen)$")
    found = []
    for module in modules():
        if module.startswith("colabenv._target") or module == "colabenv._util.processes":
            continue
        for node in ast.walk(tree(module)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [
                    f"{module}:{node.lineno}: {n}" for n in names if n.split(".")[0] in {"subprocess", "pty"}
                ]
            if isinstance(node, ast.Attribute) and starts.match(ast.unparse(node)):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_no_private_module_of_cpython_is_imported() -> None:
    """``_sha2``, ``_hashlib`` and the like are CPython's own, with no promise kept: colabenv
    imports public modules only (by statement or by :func:`importlib.import_module`)."""
    found = []
    for module in modules():
        for node in ast.walk(tree(module)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith("import_module")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names = [str(node.args[0].value)]
            found += [
                f"{module}:{node.lineno}: {n}"
                for n in names
                if n.startswith("_") and n != "__future__" and not n.startswith("colabenv")
            ]
    assert found == []


def test_the_core_never_imports_the_command_layer() -> None:
    def command_layer(module: str) -> bool:
        return any(module == top or module.startswith(top + ".") for top in COMMAND_LAYER)

    found = [
        f"{module} imports {target} (line {line})"
        for module, targets in edges(type_only=True).items()
        if not command_layer(module)
        for target, line in targets.items()
        if command_layer(target)
    ]
    assert found == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_is_over_700_lines(module: str) -> None:
    lines = len(modules()[module].read_text(encoding="utf-8").splitlines())
    if module in LONG_MODULES:
        return
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along its concerns"


MAX_FUNCTION_LINES = 80


def long_functions(module: str, parsed: ast.Module | None = None) -> list[str]:
    """The functions of ``module`` over :data:`MAX_FUNCTION_LINES` lines, each with its length."""
    return [
        f"{module}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(parsed or tree(module))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def test_no_function_is_over_80_lines() -> None:
    """Issue 33: a function a reader takes in whole; the embedded helper aside (one file by
    design, as in :data:`LONG_MODULES`)."""
    found = [line for module in modules() if module not in LONG_MODULES for line in long_functions(module)]
    assert found == []
    body = "    x = 1\n" * MAX_FUNCTION_LINES
    assert long_functions("m", ast.parse(f"def f():\n{body}")) == ["m.f: 81 lines"]
    assert (
        long_functions(
            "m", ast.parse(f"class C:\n    async def g(self):\n    {body.replace(chr(10), chr(10) + '    ')}")
        )
        != []
    )


def _spellings() -> dict[str, re.Pattern[str]]:
    """Each distribution name of a framework but the framework's own name (which is also the
    value of :class:`Framework`), as a distribution (``jax-cuda12-plugin``) or a module
    (``jax_cuda12_plugin``) would spell it."""
    plain = {f.value for f in Framework}
    return {
        name: re.compile(
            rf"(?<![A-Za-z0-9_.-])(?:{re.escape(name)}|"
            rf"{re.escape(name.replace('-', '_'))})(?![A-Za-z0-9_-])",
            re.IGNORECASE,
        )
        for name in sorted(ALL_FRAMEWORK_NAMES - plain)
    }


def test_framework_names_are_spelled_in_frameworks_py_alone() -> None:
    spellings = _spellings()
    assert {"torchvision", "torchaudio", "jaxlib", "tensorflow-cpu", "jax-cuda12-plugin", "tf-keras"} <= set(
        spellings
    )
    found = [
        f"{module}:{line}: {name}"
        for module in modules()
        if module not in FRAMEWORK_NAME_EXCEPTIONS
        for line, text in code_strings(module)
        for name, pattern in spellings.items()
        if pattern.search(text)
    ]
    assert found == []


def test_the_name_check_sees_a_spelled_name() -> None:
    pattern = _spellings()["jax-cuda12-plugin"]
    assert pattern.search("pip install jax-cuda12-plugin==0.5")
    assert pattern.search("import jax_cuda12_plugin")
    assert not pattern.search("jax-cuda12-plugins")
    assert _spellings()["torchvision"].search("torchvision")


_NOT_A_VALUE = re.compile(
    r"\b(Callable|Mapping|MutableMapping|dict|list|set|IO|Iterator|"
    r"Iterable|Generator|Any)\b"
)


def _compared(statement: ast.AnnAssign) -> bool:
    """Whether a field takes part in equality and hash (``field(compare=False)`` does not)."""
    value = statement.value
    return not (
        isinstance(value, ast.Call)
        and any(
            k.arg == "compare" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in value.keywords
        )
    )


def test_models_hold_values_only() -> None:
    """``@model`` compares and hashes by what a model holds: a mapping, a list, a callable or
    a stream would break the hash or make the value change under it. A field left out of the
    comparison (``field(compare=False)``) may hold anything."""
    found = []
    for module in modules():
        for node in ast.walk(tree(module)):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(isinstance(d, ast.Name) and d.id == "model" for d in node.decorator_list):
                continue
            for statement in node.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and _compared(statement)
                ):
                    annotation = ast.unparse(statement.annotation)
                    if _NOT_A_VALUE.search(annotation):
                        found.append(f"{module}.{node.name}.{statement.target.id}: {annotation}")
    assert found == []


def test_a_seeded_result_is_a_value_whatever_its_key() -> None:
    """JAX keys are arrays (unhashable, compared element by element); the seed says it all."""
    from colabenv.seeding import Seeded

    a = Seeded(7, True, ("random",), (), jax_key=[0, 7])
    b = Seeded(7, True, ("random",), (), jax_key=[9, 9])
    assert a == b and hash(a) == hash(b)
    assert a != Seeded(8, True, ("random",), ())
