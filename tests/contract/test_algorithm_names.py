"""A lookup in an algorithm table imports the one domain that declares the name, and the declarations are true.

``Domain.algorithm_names`` says, table by table, what a domain's ``algorithms`` module registers; the tables'
locators (:func:`zoo.domains.locate_algorithm`) import only the declaring domain's module, so checking a VLM
recipe does not import the policy domains' training code (stable-baselines3, gymnasium). Each probe runs in a
fresh interpreter, since what a lookup imports is the point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The policy domains' training stack: a VLM check must not import any of it.
HEAVY = ("stable_baselines3", "gymnasium", "highway_env")

#: Per domain with declared names, the rows its ``algorithms`` module adds to each table (imported one by one, in
#: name order, and diffed against the tables as the library alone fills them), and the policy methods it adds.
REGISTERED = """
import importlib, json
from zoo.algorithms import ADVANTAGE_ESTIMATORS, LOSS_TYPES, POLICY_LOSSES
from zoo.domains import discover
from zoo.engines.policy.methods import POLICY_METHODS
from zoo.engines.vlm.plugins import ROLLOUT_PLUGINS
tables = {t.kind: t for t in (LOSS_TYPES, ADVANTAGE_ESTIMATORS, POLICY_LOSSES, ROLLOUT_PLUGINS, POLICY_METHODS)}
out = {}
for domain in discover():
    if domain.algorithms is None:
        continue
    before = {kind: set(t._items) for kind, t in tables.items()}  # the rows held, without running discovery
    importlib.import_module(domain.algorithms)
    out[domain.name] = {kind: sorted(set(t._items) - before[kind]) for kind, t in tables.items()}
print(json.dumps(out))
"""

#: The check of one recipe: the modules it imports, after the recipe was read.
CHECK = """
import json, sys
from zoo.engines import ENGINES
from zoo.engines.reading import load_recipe
recipe = load_recipe({path!r})
before = set(sys.modules)
ENGINES.get(recipe.engine).check_recipe(recipe)
print(json.dumps(sorted(set(sys.modules) - before)))
"""

#: What the model and reward tables' discovery imports of the domains (descriptors, entries, rewards): what a
#: VLM check may import of another field, since it resolves the entry and the rewards.
CATALOGUE = """
import json, sys
import rewards, zoo
zoo.list_models()
rewards.list()
print(json.dumps(sorted(m for m in sys.modules if m.startswith("domains"))))
"""


def _run(code: str) -> object:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _key(name: str) -> str:
    from zoo_common.registry import name_key

    return name_key(name)


def test_declared_names_are_what_the_algorithms_modules_register():
    from zoo.domains import ALGORITHM_TABLES, discover

    registered = _run(REGISTERED)
    for domain in discover():
        if domain.algorithm_names is None:
            continue
        assert set(domain.algorithm_names) <= set(ALGORITHM_TABLES), domain.name
        adds = registered[domain.name]
        for table in ALGORITHM_TABLES:
            declared = sorted(_key(n) for n in domain.algorithm_names.get(table, ()))
            assert adds[table] == declared, f"{domain.name}: {table} registered {adds[table]}, declared {declared}"
        assert adds["policy method"] == sorted(_key(n) for n in domain.methods), domain.name


@pytest.mark.parametrize(
    ("recipe", "own"),
    [
        ("domains/gui/recipes/gui-g1-tiny-cpu.yaml", "gui"),
        ("domains/synthetic/recipes/synthetic-colour-grpo.yaml", None),
    ],
)
def test_vlm_check_imports_only_the_domain_offering_its_loss(recipe: str, own: str | None):
    """gui-g1's loss is the gui domain's (its ``algorithms`` module alone is imported); synthetic-colour-grpo's is
    the library's (no ``algorithms`` module). Of the other fields the check may import only what resolving the
    entry and the rewards discovers (descriptors, entries, rewards), never policy training code."""
    imported = _run(CHECK.format(path=str(ROOT / recipe)))
    assert not [m for m in imported if m.split(".")[0] in HEAVY]
    algorithms = [m for m in imported if m.startswith("domains.") and m.endswith(".algorithms")]
    assert algorithms == ([f"domains.{own}.algorithms"] if own else [])
    catalogue = set(_run(CATALOGUE))
    foreign = [m for m in imported if m.startswith("domains.") and m.split(".")[1] != own and m not in catalogue]
    assert foreign == []


def test_unknown_loss_lists_close_matches_without_policy_code():
    """An unknown name runs the table's discovery: the domains declaring loss types (gui, perception), not the
    policy domains, whose descriptors declare none."""
    probe = """
import json, sys
from zoo.algorithms import LOSS_TYPES
from zoo_common.registry import UnknownNameError
try:
    LOSS_TYPES.get("gui_g2")
except UnknownNameError as err:
    print(json.dumps([str(err), sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}
                                       or m.startswith("domains.") and m.endswith(".algorithms"))]))
""".format(heavy=HEAVY)
    message, modules = _run(probe)
    assert "Did you mean: gui-g1" in message and "stable-reinforce" in message
    assert modules == ["domains.gui.algorithms", "domains.perception.algorithms"]
