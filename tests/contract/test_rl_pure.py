"""``zoo/rl`` is pure maths: no module of it builds a name table or reaches the domains' discovery.

The names a recipe gives estimators and losses live in :mod:`zoo.algorithms`; ``zoo.rl`` only computes. The graph
is the one ``test_import_graph`` reads from the source, so an import inside a function or under ``TYPE_CHECKING``
counts, and so does one that reaches the discovery through another module.
"""

from __future__ import annotations

from pathlib import Path

from tests.contract.test_import_graph import PACKAGES, Graph, import_graph

ROOT = Path(__file__).resolve().parents[2]

#: Reached from no ``zoo.rl`` module, directly or through others: the tables and the discovery behind them.
UNREACHABLE = ("zoo.domains", "zoo.registry", "zoo.algorithms", "zoo.engines", "domains")

#: Imported by no ``zoo.rl`` module itself (a registry of names is no maths).
NOT_IMPORTED = ("zoo_common.registry",)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def reached_from(graph: Graph, start: str) -> dict[str, str]:
    """Every module ``start`` imports, directly or through others, with the first module that imports it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        module = todo.pop()
        for target in graph.get(module, {}):
            if target not in seen and target != start:
                seen[target] = module
                todo.append(target)
    return seen


def rl_violations(graph: Graph) -> list[str]:
    """What breaks the rule, each as ``rl module -> forbidden module (via the module that imports it)``."""
    found = []
    for module in sorted(m for m in graph if _within(m, ("zoo.rl",))):
        found += [f"{module} imports {t} ({', '.join(graph[module][t])})" for t in graph[module]
                  if _within(t, NOT_IMPORTED)]  # fmt: skip
        found += [f"{module} reaches {t} (imported by {via})" for t, via in sorted(reached_from(graph, module).items())
                  if _within(t, UNREACHABLE)]  # fmt: skip
    return found


def test_no_rl_module_reaches_a_table_or_the_domains():
    assert rl_violations(import_graph(ROOT, PACKAGES)) == []


def test_the_check_finds_an_import_inside_a_function_and_one_through_another_module(tmp_path):
    """A throwaway ``zoo.rl`` whose one module imports the discovery in a function body, and another that reaches
    it through a third module, is caught twice; its plain module is not."""
    for path, text in {
        "zoo/__init__.py": "", "zoo/domains.py": "", "zoo/helper.py": "from zoo import domains\n",
        "zoo/rl/__init__.py": "", "zoo/rl/maths.py": "import math\n",
        "zoo/rl/direct.py": "def f():\n    from zoo.domains import load_algorithms\n",
        "zoo/rl/indirect.py": "from zoo.helper import domains\n",
    }.items():  # fmt: skip
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert rl_violations(import_graph(tmp_path, ["zoo"])) == [
        "zoo.rl.direct reaches zoo.domains (imported by zoo.rl.direct)",
        "zoo.rl.indirect reaches zoo.domains (imported by zoo.helper)",
    ]
