"""Rewards that tests register into the global registry (``rewards.base.REWARDS``) have names no other test file uses.

The registry lives as long as the pytest worker, and tests register with ``if name not in REWARDS: register(...)``, so
two test files defining the same name would each get whichever was registered first on their worker: an
order-dependent result (it happened: two ``test-constant`` rewards scoring 1.0 and 0.5).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _registers_rewards(tree: ast.Module) -> bool:
    """Whether the file imports ``register`` from :mod:`rewards.base` (the model registry's ``register`` is another)."""
    return any(isinstance(node, ast.ImportFrom) and node.module == "rewards.base"
               and any(alias.name == "register" for alias in node.names) for node in ast.walk(tree))  # fmt: skip


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def reward_names(tree: ast.Module) -> set[str]:
    """The literal names a test file registers: ``register("x", ...)``'s first argument and the ``name = "x"``
    attribute of its classes (registered as ``register(Reward.name, Reward())``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "register" and node.args:
            names.add(_literal(node.args[0]))
        elif isinstance(node, ast.ClassDef):
            for line in node.body:
                if isinstance(line, ast.Assign) and [getattr(t, "id", None) for t in line.targets] == ["name"]:
                    names.add(_literal(line.value))
    return names - {None}


def test_no_two_test_files_register_a_reward_under_one_name() -> None:
    files: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        if _registers_rewards(tree):
            for name in reward_names(tree):
                files[name].append(str(path.relative_to(TESTS)))
    assert len(files) >= 5, sorted(files)  # the scan finds the test rewards (vowel rates, constants, half-missing...)
    clashes = {name: paths for name, paths in files.items() if len(paths) > 1}
    assert not clashes, f"test rewards registered under one name by several files (rename one): {clashes}"


def test_the_scan_sees_a_clash_of_two_files() -> None:
    trainer = ast.parse("from rewards.base import register\nclass Constant:\n    name = 'test-constant'\n")
    engine = ast.parse("from rewards.base import REWARDS, register\nregister('test-constant', object())\n")
    models = ast.parse("from zoo.registry import register\nregister('test-constant')\n")
    assert reward_names(trainer) == reward_names(engine) == {"test-constant"}
    assert _registers_rewards(trainer) and _registers_rewards(engine) and not _registers_rewards(models)
