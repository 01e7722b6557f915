"""Reading a recipe wakes nothing: the reader imports no engine, domain, provenance or catalogue, and parsing a
shipped recipe runs project code only in the reader, the engine's recipe module and, for a policy recipe, the chosen
method's settings module.

Names (datasets, entries, losses, rewards, environments, provenance) are resolved once, by the engine's check step
(:meth:`zoo.engines.Engine.check_recipe`), never while a recipe is read. The second test parses every shipped recipe
in a fresh interpreter and records, with ``sys.setprofile``, every project file whose code runs (functions and module
bodies) while :func:`zoo.engines.reading.load_recipe` reads it, and the heavy packages it imports.
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
#: What a policy recipe runs to find its method's settings module (:func:`zoo.domains.load_method`): the domain
#: discovery and every descriptor (``domains/<d>/__init__.py``), whose ``methods`` name the one module to import.
LOCATE_METHOD = {"zoo/domains.py", "zoo_common/plugins.py", "domains/__init__.py",
                 *(str(p.relative_to(ROOT)) for p in ROOT.glob("domains/*/__init__.py"))}  # fmt: skip
#: What a method's settings module may import beyond the engine's recipe module, with why: the robot's ``dppo``
#: settings derive from DPPO's own terms, which sit beside the engine's DPPO trainer.
SETTINGS_NEEDS = {"domains/robot/settings.py": {"zoo/engines/policy/dppo_settings.py"}}
#: Packages a parse may not import: each is model, environment or training code, never a recipe's reading.
HEAVY = ("torch", "numpy", "gymnasium", "stable_baselines3", "transformers", "PIL")
RECIPES = sorted(ROOT.glob("domains/*/recipes/*.yaml"))

TRACE = r"""
import json, os, sys
root, heavy = sys.argv[1], sys.argv[2].split(",")
project = tuple(os.path.join(root, p) + os.sep for p in ("zoo", "domains", "rewards", "zoo_common", "lab", "bench"))
from zoo.engines.reading import load_recipe
ran = set()
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(project):
        ran.add((os.path.relpath(frame.f_code.co_filename, root), frame.f_code.co_name))
found = {}
for path in sys.argv[3:]:
    ran.clear()
    before = set(sys.modules)
    sys.setprofile(profile)
    load_recipe(path)
    sys.setprofile(None)
    found[path] = {"calls": sorted(ran), "heavy": sorted(set(heavy) & (set(sys.modules) - before))}
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


def _allowed(recipe: Path) -> frozenset[str]:
    """The project files parsing ``recipe`` may run."""
    engine = str(read_yaml(recipe)["engine"])
    allowed = EVERY_PARSE | RECIPE_MODULES[engine]
    if engine == "policy":
        method = _method_module(recipe)
        allowed |= LOCATE_METHOD | {method} | SETTINGS_NEEDS.get(method, set())
    return frozenset(allowed)


@pytest.fixture(scope="module")
def traced() -> dict[str, dict[str, list]]:
    """Recipe path -> the ``(file, function)`` of the project code that ran while it was read (``calls``) and the
    :data:`HEAVY` packages it imported (``heavy``). A module an earlier recipe imported does not run again, so one
    fresh interpreter reads each group of recipes that may run the same files: what an earlier recipe of the group
    ran is allowed to the later ones, and function calls are seen every time."""
    groups: dict[frozenset[str], list[str]] = {}
    for path in RECIPES:
        groups.setdefault(_allowed(path), []).append(str(path))
    found = {}
    for paths in groups.values():
        out = subprocess.run([sys.executable, "-c", TRACE, str(ROOT), ",".join(HEAVY), *paths], cwd=ROOT,
                             capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
        found |= json.loads(out.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_parsing_a_shipped_recipe_runs_only_the_reader_its_engines_recipe_module_and_its_methods_settings(
    path: Path, traced: dict[str, dict[str, list]]
) -> None:
    calls, heavy = [tuple(call) for call in traced[str(path)]["calls"]], traced[str(path)]["heavy"]
    extra = {file for file, _ in calls} - _allowed(path)
    assert not extra, f"parsing {path.name} ran {sorted(extra)}"
    assert not heavy, f"parsing {path.name} imported {heavy}: a recipe's settings classes import no training code"
    assert ("zoo/domains.py", "_load_once") not in calls, f"parsing {path.name} imported every domain's algorithms"


CHECK = r"""
import json, sys
from zoo.engines.policy.checks import check_policy
from zoo.engines.reading import load_recipe
method = check_policy(load_recipe(sys.argv[1])).method
print(json.dumps([method.name, sorted(m for m in sys.modules if m.startswith("domains.") and m.count(".") == 2)]))
"""


@pytest.mark.parametrize("recipe", ["domains/driving/recipes/carl-highway-smoke.yaml",
                                    "domains/robot/recipes/fetch-push-dppo-smoke.yaml"])  # fmt: skip
def test_the_policy_check_imports_the_training_code_of_the_methods_domain_alone(recipe: str) -> None:
    """The check step finds the method through its domain's ``algorithms`` module, not every domain's."""
    out = subprocess.run([sys.executable, "-c", CHECK, recipe], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True)  # fmt: skip
    name, modules = json.loads(out.stdout.splitlines()[-1])
    domain = recipe.split("/")[1]
    assert name == read_yaml(ROOT / recipe)["algorithm"]["method"]
    others = [m for m in modules if not m.startswith(f"domains.{domain}.")]
    assert not others, f"checking {recipe} imported {others}"
    assert any(m.startswith(f"domains.{domain}.") and m != _method_module(ROOT / recipe)[:-3].replace("/", ".")
               for m in modules), f"checking {recipe} imported none of {domain}'s training code"  # fmt: skip
