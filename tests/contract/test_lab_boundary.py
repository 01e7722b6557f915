"""``lab/`` sits beside the library: it imports ``zoo``, ``rewards`` and ``domains``; they never import it.

The lab holds the experiments that built the shipped checkpoints (release ladders, their cards). A library
module (``zoo``, ``rewards``, ``domains``, ``zoo_common``) or a benchmark (``bench``) that imported it would
make the product depend on one run's scripts. Checked on the source, so an import inside a function body,
an ``importlib.import_module("lab...")`` and a ``"lab.module:attr"`` import string count as well.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("zoo", "rewards", "domains", "zoo_common", "bench")
#: Calls whose first argument names a module to import.
IMPORTING_CALLS = {"import_module", "__import__", "find_spec", "resolve", "import_named"}
#: ``"lab:attr"`` / ``"lab.module:attr"``: an import string (``zoo.import_strings.resolve``'s form).
IMPORT_STRING = re.compile(r"lab(\.\w+)*:\w+")


def _is_lab(module: str) -> bool:
    return module == "lab" or module.startswith("lab.")


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def lab_imports(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every way ``source`` names ``lab`` to import it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _is_lab(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and _is_lab(node.module):
            found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Call) and _call_name(node) in IMPORTING_CALLS and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _is_lab(arg.value.partition(":")[0]):
                found.append((node.lineno, f"{_call_name(node)}({arg.value!r})"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and IMPORT_STRING.fullmatch(node.value):
            found.append((node.lineno, f"import string {node.value!r}"))
    return sorted(set(found))


def test_the_check_sees_every_form_of_import():
    source = '''
import lab
import lab.ladder as ladder
from lab.gui import release
def f():
    from lab import ladder
    importlib.import_module("lab.gui.card")
    __import__("lab")
HOOK = "lab.gui.card:write_card"
OK = ("lab", "laboratory.x:y", "zoo.lab:x")  # a word, another package: no import of lab
'''
    assert [line for line, _ in lab_imports(source)] == [2, 3, 4, 6, 7, 8, 9]


def test_the_library_and_bench_never_import_lab():
    offences = []
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            offences += [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in lab_imports(path.read_text())]
    assert not offences, "the library imports lab:\n" + "\n".join(offences)


LAB_MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "lab").rglob("*.py")
)


def test_lab_modules_are_found():
    assert {"lab", "lab.ladder", "lab.gui.release", "lab.gui.card"} <= set(LAB_MODULES)


@pytest.mark.parametrize("module", LAB_MODULES)
def test_lab_module_imports_without_side_effects(module, tmp_path):
    """Each module imports in a fresh interpreter, from another directory, printing nothing, writing
    nothing and configuring no logging: a ladder runs only from its ``python -m`` command line."""
    code = (f"import logging, {module}; "
            "assert not logging.getLogger().handlers, 'configures logging at import'")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "", f"{module} prints at import: {done.stdout[:500]}"
    assert not any(tmp_path.iterdir()), f"{module} writes {sorted(p.name for p in tmp_path.iterdir())} at import"
