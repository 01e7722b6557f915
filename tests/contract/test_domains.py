"""The contract every domain keeps, parametrised over every discovered domain (diffusers' tester-mixin idea).

A new folder under ``domains/`` is picked up here with no edit: its recipes must parse and name
registered rewards and datasets, its CPU smoke recipes must train one step, its parsers must
return ``parse_error`` on garbage (never raise), its rewards must keep stable component keys,
and its cards must render. The layering is checked too: ``rewards`` imports nothing of ``zoo``
or ``domains``, and importing ``zoo`` loads no reward or model code.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rewards
import zoo
from rewards.base import RewardSample
from zoo.data import ANSWER_FORMATS, DATASETS
from zoo.domains import discover
from zoo.engines.reading import load_recipe

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = discover()
RECIPES = [(d.name, path) for d in DOMAINS for path in d.recipe_files()]


def _is_smoke(path: Path) -> bool:
    """A recipe that builds its tiny model here (a ``tiny:`` model name or ``model.tiny`` settings, read from the
    parsed YAML: a comment that happens to write ``gui-grounding-tiny:`` does not count) or is named a smoke run:
    one CPU step of it runs in CI. Read from the ``model`` block only: a provenance row may name ``model.tiny``."""
    model = yaml.safe_load(path.read_text()).get("model") or {}
    return str(model.get("name", "")).startswith("tiny:") or bool(model.get("tiny")) or path.stem.endswith("smoke")


SMOKE = [(name, path) for name, path in RECIPES if _is_smoke(path)]
GARBAGE = ["", "   ", "<answer>", "}{][", "\x00\xff" * 20, "<think>unterminated", "[1, 2, 3", "a" * 10_000, "🙂" * 50]


def test_every_domain_folder_is_discovered():
    folders = {p.name for p in (ROOT / "domains").iterdir() if (p / "__init__.py").is_file()}
    assert folders == {d.name for d in DOMAINS}


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.name)
def test_descriptor_names_importable_modules(domain):
    import importlib

    for module in filter(None, (domain.entries, domain.rewards, domain.algorithms)):
        importlib.import_module(module)
    for name, target in {**domain.datasets, **domain.environments}.items():
        module, _, func = target.partition(":")
        assert callable(getattr(importlib.import_module(module), func)), f"{domain.name}: {name} -> {target}"
        if name in domain.datasets:
            assert name in DATASETS
    if domain.evaluate:
        module, _, func = domain.evaluate.partition(":")
        assert callable(getattr(importlib.import_module(module), func))


@pytest.mark.parametrize(("domain", "path"), RECIPES, ids=[p.stem for _, p in RECIPES])
def test_recipe_parses_and_names_registered_things(domain, path):
    recipe = load_recipe(path)
    assert recipe.name == path.stem, "a recipe's name is its file name, so runs/<name> finds it"
    if hasattr(recipe, "rewards"):
        for spec in recipe.rewards:
            assert spec.name in rewards.REWARDS or spec.name in rewards.list(), spec.name
            spec.build()
    if hasattr(recipe, "data"):
        assert recipe.data.name in DATASETS, recipe.data.name
    if getattr(getattr(recipe, "data", None), "answer_format", None):
        assert recipe.data.answer_format in ANSWER_FORMATS, recipe.data.answer_format
    if hasattr(recipe, "env"):  # policy recipes: the environment must be one a domain registered
        assert recipe.env.name in {name for d in DOMAINS for name in d.environments}, recipe.env.name


@pytest.mark.parametrize(("domain", "path"), SMOKE, ids=[p.stem for _, p in SMOKE])
def test_cpu_smoke_recipe_trains_one_step(domain, path, tmp_path):
    from zoo.train import run

    recipe = load_recipe(path)
    overrides = ["training.steps=1", "training.save_steps=1"]
    if hasattr(recipe.training, "use_cpu"):
        overrides.append("training.use_cpu=true")
    if getattr(recipe.training, "decay_steps", 0):  # a decay longer than the one step would be refused
        overrides.append("training.decay_steps=1")
    if hasattr(recipe, "algorithm") and hasattr(recipe, "data") and "n" in recipe.data.kwargs:
        overrides.append(f"data.kwargs.n={recipe.algorithm.num_generations}")
    out = run(str(path), overrides, output_dir=str(tmp_path / "run"))
    assert (out / "checkpoint-1").is_dir() and (out / "metrics.csv").is_file()


PARSERS = sorted({(zoo.info(n).domain, zoo.info(n).spec.parser) for n in zoo.list_models(kind="vlm")
                  if zoo.info(n).spec.parser is not None}, key=lambda p: p[1].__name__)  # fmt: skip


@pytest.mark.parametrize(("domain", "parser"), PARSERS, ids=[p.__name__ for _, p in PARSERS])
@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_parser_reports_garbage_instead_of_raising(domain, parser, text):
    parsed = parser(text, "a question")
    assert isinstance(parsed, dict)
    if "parse_error" in parsed:
        assert parsed["parse_error"] is None or isinstance(parsed["parse_error"], str)


def _domain_rewards():
    names = []
    for name in rewards.list():
        module = type(rewards.get(name)).__module__
        if module.startswith("domains."):
            names.append(name)
    return names


@pytest.mark.parametrize("name", _domain_rewards())
def test_reward_component_keys_are_stable_on_garbage(name):
    """Loggers and verl's reward_extra_info need the same component keys for every sample."""
    reward = rewards.get(name)
    reward = reward() if isinstance(reward, type) else reward
    target = {"answer": "A", "bbox": [1.0, 1.0, 5.0, 5.0], "image_size": [10, 10], "choices": {"A": "x", "B": "y"}}
    try:
        results = reward(["garbage", "}{"], [RewardSample(target=target)] * 2)
    except (KeyError, TypeError, ValueError) as err:  # a reward needing other target fields must say which
        assert str(err), name
        return
    assert len(results) == 2
    assert set(results[0].components) == set(results[1].components), name


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_entry_card_renders(name):
    from zoo.cards import render_card

    card = render_card(zoo.info(name))
    assert name in str(card)


def test_rewards_imports_nothing_of_zoo_or_domains():
    for path in (ROOT / "rewards").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            for module in names:
                top = module.split(".")[0]
                assert top not in ("zoo", "domains"), f"{path.relative_to(ROOT)} imports {module}"


def test_domains_do_not_import_each_other():
    for domain in DOMAINS:
        for path in (ROOT / "domains" / domain.name).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("domains."):
                    assert node.module.split(".")[1] == domain.name, f"{path.relative_to(ROOT)} imports {node.module}"


def test_import_zoo_and_list_models_load_no_reward_or_model_code():
    code = ("import sys, zoo; zoo.list_models(); heavy = [m for m in ('torch', 'numpy', 'PIL', 'transformers', "
            "'huggingface_hub', 'rewards.builtin', 'rewards.rendering') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
