"""Reading a recipe wakes nothing: the reader imports no engine, domain, provenance or catalogue, and parsing a
shipped recipe runs project code only in the reader, the engine's recipe module and the chosen method's module.

Names (datasets, entries, losses, rewards, environments, provenance) are resolved once, by the engine's check step
(:meth:`zoo.engines.Engine.check_recipe`), never while a recipe is read. The second test parses every shipped recipe
in a fresh interpreter and records, with ``sys.setprofile``, every project file whose code runs (functions and module
bodies) while :func:`zoo.engines.reading.load_recipe` reads it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.recipe_file import read_yaml

ROOT = Path(__file__).resolve().parents[2]
#: The reader: YAML (bounded), overrides, typed coercion, a method's own settings class.
READER = ("zoo/recipe.py", "zoo/recipe_file.py")
#: What the reader may not import, at module level or inside a function: each resolves names.
FORBIDDEN = ("zoo.engines", "zoo.domains", "zoo.provenance", "zoo.registry")
#: Files every parse may run, with why: the reader and its bounded YAML loader; the engine table and the reading step
#: that asks it for the class (resolving the class's import string); the tables' own lookups; and the
#: ``authors_run:`` block's dataclass, a recipe field whose ``__post_init__`` checks its own numbers.
EVERY_PARSE = {*READER, "zoo/bounded_yaml.py", "zoo/engines/__init__.py", "zoo/engines/reading.py",
               "zoo/import_strings.py", "zoo_common/registry.py", "zoo/authors_run.py"}  # fmt: skip
#: Each engine's recipe module(s) (the package ``__init__`` runs on the way).
RECIPE_MODULES = {
    "vlm-trl": {"zoo/engines/vlm/__init__.py", "zoo/engines/vlm/recipe.py"},
    "vlm-semi-online": {"zoo/engines/vlm/__init__.py", "zoo/engines/vlm/recipe.py"},
    "vlm-verl": {"zoo/engines/vlm/__init__.py", "zoo/engines/vlm/recipe.py"},
    "vlm-sft": {"zoo/engines/vlm/__init__.py", "zoo/engines/vlm/recipe.py", "zoo/engines/vlm/sft_recipe.py"},
    "diffusion": {"zoo/engines/diffusion/__init__.py", "zoo/engines/diffusion/recipe.py"},
    "policy": {"zoo/engines/policy/__init__.py", "zoo/engines/policy/recipe.py"},
}
RECIPES = sorted(ROOT.glob("domains/*/recipes/*.yaml"))

TRACE = r"""
import json, os, sys
root = sys.argv[1]
project = tuple(os.path.join(root, p) + os.sep for p in ("zoo", "domains", "rewards", "zoo_common", "lab", "bench"))
from zoo import domains
from zoo.engines.reading import load_recipe
from zoo.recipe_file import read_yaml
ran = set()
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(project):
        ran.add((os.path.relpath(frame.f_code.co_filename, root), frame.f_code.co_name))
def files(modules):
    return {os.path.relpath(f, root) for f in (getattr(sys.modules[m], "__file__", None) for m in modules)
            if f and f.startswith(project)}
found = {}
for path in sys.argv[2:]:
    ran.clear()
    if read_yaml(path)["engine"] == "policy":  # its method's module imports torch: a profile would take a minute
        before = set(sys.modules)
        load_recipe(path)
        every = domains._loaded["algorithms"]
        found[path] = [[f, "<module>"] for f in sorted(files(set(sys.modules) - before))] + [["zoo/domains.py", "_load_once"]] * every
        continue
    sys.setprofile(profile)
    load_recipe(path)
    sys.setprofile(None)
    found[path] = sorted(ran)
print(json.dumps(found))
"""

def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every import statement anywhere in ``tree`` (functions and ``TYPE_CHECKING`` too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


@pytest.mark.parametrize("path", READER)
def test_the_reader_imports_no_engine_domain_provenance_or_catalogue(path: str) -> None:
    bad = [(line, module) for line, module in _imports(ast.parse((ROOT / path).read_text()))
           if any(module == f or module.startswith(f"{f}.") for f in FORBIDDEN)]  # fmt: skip
    assert not bad, f"{path} imports {bad}: resolving names is the engine's check step (zoo/engines/checks.py)"


def test_the_import_finder_sees_a_function_level_import() -> None:
    tree = ast.parse("def f():\n    from zoo.domains import discover\n    import zoo.registry\n")
    assert [m for _, m in _imports(tree)] == ["zoo.domains.discover", "zoo.registry"]


def _method_module(recipe: Path) -> str:
    """The file of the module a domain descriptor names for a policy recipe's ``algorithm.method``."""
    from zoo.domains import discover

    method = str((read_yaml(recipe).get("algorithm") or {}).get("method", "resip-ppo"))
    module = next(m for domain in discover() for name, m in domain.methods.items() if name == method)
    return module.replace(".", "/") + ".py"


@pytest.fixture(scope="module")
def traced() -> dict[str, list[tuple[str, str]]]:
    """Recipe path -> ``(file, function)`` of the project code that ran while it was read. One fresh interpreter
    reads them all, the policy recipes last: a module an earlier recipe imported does not run again, but an earlier
    recipe of a strictly checked engine that imported it would itself fail, and function calls are seen every time."""
    paths = sorted(RECIPES, key=lambda p: (read_yaml(p)["engine"] == "policy", str(p)))
    out = subprocess.run([sys.executable, "-c", TRACE, str(ROOT), *map(str, paths)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, check=True)  # fmt: skip
    return {path: [tuple(call) for call in calls] for path, calls in json.loads(out.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_parsing_a_shipped_recipe_runs_only_the_reader_and_its_engines_recipe_module(
    path: Path, traced: dict[str, list[tuple[str, str]]]
) -> None:
    engine, calls = str(read_yaml(path)["engine"]), traced[str(path)]
    files = {file for file, _ in calls}
    if engine != "policy":
        extra = files - EVERY_PARSE - RECIPE_MODULES[engine]
        assert not extra, f"parsing {path.name} ran {sorted(extra)}"
        return
    # A policy method's settings class sits in its domain's module beside its training code, whose imports run too
    # (moving the classes to a light module of their own is open); what must not run is another domain's code or
    # every domain's algorithms (the descriptors alone are read, to find the one module).
    method = _method_module(path)
    domain = "/".join(method.split("/")[:2]) + "/"
    others = {f for f in files if f.startswith("domains/") and not f.startswith(domain) and
              not f.endswith("/__init__.py")}  # fmt: skip
    assert not others, f"parsing {path.name} ran {sorted(others)} besides {method}"
    assert ("zoo/domains.py", "_load_once") not in calls, f"parsing {path.name} imported every domain's algorithms"
