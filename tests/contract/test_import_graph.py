"""No import circles: the modules of the library and its lab import one another one way only.

A circle (``a`` imports ``b`` and ``b`` imports ``a``, directly or through others) means no module of it
can be read, tested or moved without the rest, and that its import order decides whether it loads at
all. The graph is read from the source, so every import counts wherever it is written: inside a
function body, under ``if TYPE_CHECKING:``. ``from a.b import c`` is an import of the module ``a.b.c``
when there is one, else of ``a.b``; relative imports are resolved against the importing module. A
circle is broken by giving the concept both ends need one home, below both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The packages scanned (``lab`` and ``bench`` where the checkout has them).
PACKAGES = ("zoo", "rewards", "domains", "zoo_common", "lab", "bench")

#: module -> imported module -> where (``path:line``) each import of it is written.
Graph = dict[str, dict[str, list[str]]]


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> its file, for every ``.py`` file under ``root/<package>``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _known_prefix(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest leading part of dotted ``name`` that is a scanned module (``None``: outside the scan)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) or None


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement of ``module`` reads: ``a.b`` for ``import a.b``, ``a.b.c`` for
    ``from a.b import c`` (a module or a name in ``a.b``: the caller keeps the longest known prefix)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, packages: Iterable[str]) -> Graph:
    """Every import between the scanned modules, with where it is written."""
    modules = module_files(root, packages)
    graph: Graph = {name: {} for name in modules}
    for name, path in modules.items():
        where, is_package = path.relative_to(root), path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = {_known_prefix(imported, modules) for imported in _imported(node, name, is_package)}
            for target in sorted(targets - {None, name}):  # one site per statement, however many names it imports
                graph[name].setdefault(target, []).append(f"{where}:{node.lineno}")
    return graph


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted; iterative, so a long import chain cannot
    reach the recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    walk: list[tuple[str, Iterator[str]]] = []  # the depth-first path, each node with its successors still to see
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        walk.append((node, iter(sorted(graph.get(node, ())))))

    for start in sorted(graph):
        if start not in index:
            visit(start)
        while walk:
            node, successors = walk[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    visit(successor)
                elif successor in on_stack:
                    low[node] = min(low[node], index[successor])
                continue
            walk.pop()
            if walk:
                parent = walk[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while not component or component[-1] != node:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                components.append(sorted(component))
    return components


def circles(graph: Graph) -> list[list[str]]:
    """The components of more than one module: each module of one reaches every other through imports."""
    return sorted(component for component in strongly_connected(graph) if len(component) > 1)


def describe(circle: list[str], graph: Graph) -> str:
    """A circle's modules, then each import inside it with the ``path:line`` it is written at."""
    members = set(circle)
    lines = [f"circle of {len(circle)}: {', '.join(circle)}"]
    for module in circle:
        for target, sites in sorted(graph[module].items()):
            if target in members:
                lines.append(f"  {module} -> {target}: {', '.join(sites)}")
    return "\n".join(lines)


def test_the_scan_reports_a_circle_with_the_lines_that_make_it(tmp_path):
    """A package whose ``a`` imports ``b`` at the top and ``b`` imports ``a`` inside a function (relatively)
    is one circle; ``c``, which imports ``a`` under ``TYPE_CHECKING`` and is imported by no one, is not in it."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import helper\n")
    (package / "b.py").write_text("def helper():\n    from . import a\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import helper\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.c"] == {"pkg.a": ["pkg/c.py:3"]}
    assert circles(graph) == [["pkg.a", "pkg.b"]]
    assert describe(["pkg.a", "pkg.b"], graph) == (
        "circle of 2: pkg.a, pkg.b\n  pkg.a -> pkg.b: pkg/a.py:1\n  pkg.b -> pkg.a: pkg/b.py:2"
    )


def test_no_import_circles():
    packages = [package for package in PACKAGES if (ROOT / package).is_dir()]
    graph = import_graph(ROOT, packages)
    assert {module.split(".")[0] for module in graph} == set(packages), "a scanned package holds no module"
    found = circles(graph)
    assert not found, f"{len(found)} import circle(s); give the concept both ends need one home:\n" + "\n".join(
        describe(circle, graph) for circle in found
    )
