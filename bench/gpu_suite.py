"""The Python half of ``bench/gpu_suite.sh``: what the shell cannot say well.

* ``register``: the project's entry points (``zoo.rewards``, ``zoo.domains``, ...) without building it.
  The GPU machine gets the repository on ``PYTHONPATH``, not installed; the tests find rewards and
  domains through ``importlib.metadata`` entry points, which need a ``*.dist-info``. Writing one from
  ``pyproject.toml`` into the wheels' target folder needs no build backend and no network (``pip
  install -e .`` would need setuptools' editable build, and writes into the image's environment).
* ``pins``: ``name==version`` from ``requirements.lock`` for each package named (what
  ``--collect-wheels`` downloads); a package the lock does not pin is an error.
* ``versions``: the interpreter, torch, the device and each package's version and origin
  (carried wheel or the machine's image), beside ``requirements.lock``'s pin.
* ``ignores``: test files whose module-level imports (followed through the project's own modules)
  need a package this machine lacks; the suite passes them to ``--ignore`` with that reason, so a
  missing package is a line in the report, not a collection error.
* ``merge``: one JSON of every step (status, seconds, the benches' reports, pytest's counts and
  failures from its JUnit XML) and issue 46's targets, met or not; a step skipped says why (the budget, the mode,
  or its bench: ``bench/sharded_step.py`` reports ``skipped`` where the engine leaves the model whole).
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.metadata
import importlib.util
import json
import platform
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("zoo", "zoo_common", "rewards", "domains", "tests")
PACKAGES = (
    "torch", "torchvision", "transformers", "trl", "diffusers", "accelerate", "peft", "datasets", "tokenizers",
    "huggingface-hub", "safetensors", "timm", "open-clip-torch", "numpy", "pillow", "pandas", "pyarrow", "scipy",
    "gymnasium", "stable-baselines3", "math-verify", "pycocotools", "cairosvg", "qwen-vl-utils",
    "opencv-python-headless",
    "pytest", "pytest-xdist", "pytest-timeout", "setuptools",
)  # fmt: skip
OUTCOMES = {"failure": "failed", "error": "errors", "skipped": "skipped"}
"""JUnit XML's child element of a test case -> the count it adds to (none: passed)."""
SHARDED_STEPS = ("sharded_semi_online", "sharded_diffusion")
"""Issue 52's steps (``bench/sharded_step.py``): each writes ``<step>.json``, which may say ``skipped``."""
TARGETS = {"rollout_best_over_hf": 5.0, "rollout_floor_fraction": 0.30, "grpo_zoo_over_trl": 1.05}
"""Issue 46's targets (a benchmark, not a test): best backend >= 5x hf tokens/s and >= 30 % of the weight-bandwidth
floor at the 1.5B shape; zoo/TRL step-time ratio <= 1.05."""


# --- register -------------------------------------------------------------------------------
def register(site: Path) -> str:
    """Write ``rl_model_zoo-<version>.dist-info`` (METADATA, entry_points.txt) into ``site`` unless the project is
    already installed; returns what it did."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    try:
        found = importlib.metadata.distribution(project["name"])
        return f"{project['name']} already installed ({found.locate_file('')}); nothing written"
    except importlib.metadata.PackageNotFoundError:
        pass
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines = [f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
             for group, entries in groups.items()]  # fmt: skip
    (info / "entry_points.txt").write_text("\n".join(lines))
    return f"wrote {info} ({', '.join(groups)})"


# --- versions -------------------------------------------------------------------------------
def lock_pins() -> dict[str, str]:
    """``requirements.lock`` as {normalised name: version}."""
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[normalise(name)] = version
    return pins


def normalise(name: str) -> str:
    """PEP 503 name: case and runs of ``-_.`` do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(names: list[str]) -> list[str]:
    """``name==version`` for each of ``names`` as ``requirements.lock`` pins it; raises naming any it does not."""
    locked = lock_pins()
    missing = [name for name in names if normalise(name) not in locked]
    if missing:
        raise SystemExit(f"gpu_suite.py: not pinned in requirements.lock: {', '.join(missing)}")
    return [f"{name}=={locked[normalise(name)]}" for name in names]


def versions(site: Path | None) -> dict[str, Any]:
    """What this run ran with: interpreter, torch and device, each package's version, origin and lock pin."""
    import ctypes.util

    import torch

    out: dict[str, Any] = {"python": platform.python_version(), "executable": sys.executable,
                           "torch": torch.__version__, "torch_cuda": torch.version.cuda,
                           "cuda_available": torch.cuda.is_available(),
                           "libcairo": ctypes.util.find_library("cairo")}  # fmt: skip
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out["device"] = {"name": torch.cuda.get_device_name(), "capability": list(torch.cuda.get_device_capability()),
                         "memory_gib": round(props.total_memory / 2**30, 1), "cudnn": torch.backends.cudnn.version(),
                         "multiprocessors": props.multi_processor_count}  # fmt: skip
    else:
        out["device"] = {"name": f"cpu ({platform.processor() or platform.machine()})"}
    pins, packages = lock_pins(), {}
    for name in PACKAGES:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = {"version": None}
            continue
        where = Path(str(dist.locate_file("")))
        row = {"version": dist.version, "carried": bool(site and where.resolve() == site.resolve())}
        if pins.get(normalise(name)) not in (None, dist.version.split("+")[0]):
            row["lock"] = pins[normalise(name)]
        packages[name] = row
    out["packages"] = packages
    return out


def version_lines(found: dict[str, Any]) -> str:
    """The versions as a few readable lines: interpreter, torch, device, then each package (carried or the image's,
    and the lock's pin where it differs)."""
    head = (f"python {found['python']} ({found['executable']}); torch {found['torch']} (CUDA {found['torch_cuda']}); "
            f"device {found['device']['name']}; libcairo {found['libcairo'] or 'absent'}")  # fmt: skip
    lines = [head]
    for name, row in found["packages"].items():
        origin = "not installed" if row["version"] is None else ("carried" if row["carried"] else "here")
        lock = f", lock {row['lock']}" if "lock" in row else ""
        lines.append(f"  {name:24} {row['version'] or '-':14} {origin}{lock}")
    return "\n".join(lines)


# --- ignores --------------------------------------------------------------------------------
def module_imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported: module-level ``import``/``from`` statements only (not inside
    functions, ``try`` or ``if TYPE_CHECKING``, which run later or are guarded), less the packages a module-level
    ``pytest.importorskip("name")`` guards (pytest skips that file with a reason of its own)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    guarded = {
        node.args[0].value
        for statement in tree.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip"
        and node.args and isinstance(node.args[0], ast.Constant)
    }  # fmt: skip
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] not in {str(g).split(".")[0] for g in guarded}}


def first_party_file(module: str) -> Path | None:
    """The file of a project module (``zoo.engines.vlm`` -> ``zoo/engines/vlm/__init__.py``), else ``None``."""
    if module.split(".")[0] not in FIRST_PARTY:
        return None
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def missing_for(path: Path, absent: Callable[[str], bool], seen: dict[Path, set[str]]) -> set[str]:
    """Absent top-level packages that importing ``path`` needs, following the project's own modules (and the
    packages' ``__init__`` files above them) transitively; memoised in ``seen``."""
    if path in seen:
        return seen[path]
    seen[path] = set()  # a cycle contributes nothing new
    found = set()
    for module in module_imports(path):
        parts = module.split(".")
        if parts[0] not in FIRST_PARTY and absent(parts[0]):
            found.add(parts[0])
        for depth in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__, then a/b/c
            file = first_party_file(".".join(parts[:depth]))
            if file is not None:
                found |= missing_for(file, absent, seen)
    seen[path] = found
    return found


def ignores(test_root: Path, absent: Callable[[str], bool] | None = None) -> dict[str, list[str]]:
    """``{test file or folder (relative): [missing packages]}`` for what cannot be collected here; a folder when its
    ``conftest.py`` cannot be imported. ``absent(name)``: whether a top-level package is missing (default: it
    cannot be found on this interpreter's path)."""
    absent = absent or _absent
    seen: dict[Path, set[str]] = {}
    out: dict[str, list[str]] = {}
    for conftest in sorted(test_root.rglob("conftest.py")):
        missing = missing_for(conftest, absent, seen)
        if missing:
            out[str(conftest.parent.relative_to(ROOT))] = sorted(missing)
    for test in sorted(test_root.rglob("test_*.py")):
        if any(str(test.relative_to(ROOT)).startswith(folder + "/") for folder in out):
            continue
        missing = missing_for(test, absent, seen)
        if missing:
            out[str(test.relative_to(ROOT))] = sorted(missing)
    return out


@functools.cache
def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


# --- merge ----------------------------------------------------------------------------------
def read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def pytest_summary(junit: Path, log: Path) -> dict[str, Any]:
    """Counts, failures (id and first message line) and skip reasons from pytest's JUnit XML; the log's last
    summary line when the XML is missing (pytest killed before it wrote it)."""
    if not junit.is_file():
        text = log.read_text(errors="replace") if log.is_file() else ""
        lines = [line for line in text.splitlines() if line.startswith("=")]
        return {"junit": "missing", "summary_line": lines[-1] if lines else None}
    root = ET.parse(junit).getroot()
    counts: Counter[str] = Counter()
    failures, skips = [], Counter()
    for case in root.iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        kind = "passed" if outcome is None else OUTCOMES[outcome.tag]
        counts[kind] += 1
        if kind in ("failed", "errors"):
            message = (outcome.get("message") or outcome.text or "").strip().splitlines()
            failures.append({"test": test_id, "kind": kind, "message": message[0][:300] if message else ""})
        elif kind == "skipped":
            skips[(outcome.get("message") or "").strip()[:200]] += 1
    suites = list(root.iter("testsuite"))
    return {"passed": counts["passed"], "failed": counts["failed"], "errors": counts["errors"],
            "skipped": counts["skipped"], "seconds": round(sum(float(s.get("time", 0)) for s in suites), 1),
            "failures": failures[:60], "more_failures": max(0, len(failures) - 60),
            "skip_reasons": dict(skips.most_common(40))}  # fmt: skip


def steps_table(path: Path) -> dict[str, dict[str, Any]]:
    """The shell's ``steps.tsv`` (name, status, rc, seconds, limit, log, why it was skipped) as a mapping."""
    rows = {}
    for line in path.read_text().splitlines() if path.is_file() else []:
        name, status, rc, seconds, limit, log, why = line.split("\t")
        rows[name] = {"status": status, "rc": int(rc), "seconds": float(seconds), "limit_s": int(limit), "log": log}
        if why:
            rows[name]["reason"] = why
    return rows


def skipped_by_bench(steps: dict[str, dict[str, Any]], reports: dict[str, Any]) -> None:
    """A step that ran but whose bench measured nothing (its report says ``skipped``: the engine does not do what
    the step measures, e.g. shard) is ``skipped`` with the bench's reason, not ``ok``."""
    for name, report in reports.items():
        step = steps.get(name)
        if step is not None and step["status"] == "ok" and isinstance(report, dict) and report.get("skipped"):
            step.update(status="skipped", reason=report["skipped"])


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 46's targets against this run's numbers; ``met`` is ``None`` where the number is missing."""
    out = []
    rollout = (report.get("rollout") or {}).get("backends") or {}
    others = {name: row for name, row in rollout.items() if name != "hf"}
    best = max(others.items(), key=lambda item: item[1]["tokens_per_s"], default=(None, {}))
    ratio, floor = best[1].get("tokens_per_s_over_hf"), best[1].get("weight_bandwidth_floor_fraction")
    grpo = (report.get("grpo_step") or {}).get("1.5b") or {}
    for what, value, limit, above in (
        (f"rollout: best backend ({best[0]}) tokens/s over hf", ratio, TARGETS["rollout_best_over_hf"], True),
        (f"rollout: best backend ({best[0]}) fraction of the weight-bandwidth floor", floor,
         TARGETS["rollout_floor_fraction"], True),
        ("grpo_step 1.5B: zoo/TRL step-time ratio", grpo.get("step_time_ratio_zoo_over_trl"),
         TARGETS["grpo_zoo_over_trl"], False),
    ):  # fmt: skip
        met = None if value is None else (value >= limit if above else value <= limit)
        out.append({"what": what, "value": value, "target": f"{'>=' if above else '<='} {limit}", "met": met})
    return out


def merge(parts: Path, out: Path, mode: str, budget: int, wall: float) -> dict[str, Any]:
    """One report of the run from the parts folder the shell filled; written to ``out``."""
    report: dict[str, Any] = {"suite": "bench/gpu_suite.sh", "mode": mode, "budget_s": budget, "wall_s": round(wall, 1)}
    report["versions"] = read_json(parts / "versions.json")
    report["device"] = (report["versions"] or {}).get("device")
    report["setup"] = read_json(parts / "setup.json")
    report["steps"] = steps_table(parts / "steps.tsv")
    report["rollout"] = read_json(parts / "rollout.json")
    report["grpo_step"] = {size: read_json(parts / f"grpo_{size}.json") for size in ("tiny", "1.5b")}
    report["diffusion"] = read_json(parts / "diffusion.json")
    for name in SHARDED_STEPS:
        report[name] = read_json(parts / f"{name}.json")
    skipped_by_bench(report["steps"], {name: report[name] for name in SHARDED_STEPS})
    report["pytest"] = {**(read_json(parts / "pytest_plan.json") or {}),
                        **pytest_summary(parts / "pytest.xml", out.parent / "pytest.log")}  # fmt: skip
    report["targets"] = targets(report) if mode == "gpu" else "not applicable (cpu-smoke: tiny shapes)"
    report["ok"] = all(step["status"] in ("ok", "skipped") for step in report["steps"].values())
    out.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("register", help="write the project's dist-info (entry points) into --site").add_argument(
        "--site", type=Path, required=True)  # fmt: skip
    sub.add_parser("pins", help="print name==version from requirements.lock for each name").add_argument(
        "names", nargs="+")  # fmt: skip
    for name in ("versions", "ignores"):
        command = sub.add_parser(name)
        command.add_argument("--site", type=Path)
        command.add_argument("--json", type=Path, required=True)
    merging = sub.add_parser("merge", help="write gpu_suite.json from the parts folder")
    merging.add_argument("--parts", type=Path, required=True)
    merging.add_argument("--out", type=Path, required=True)
    merging.add_argument("--mode", choices=["gpu", "cpu-smoke"], required=True)
    merging.add_argument("--budget", type=int, required=True)
    merging.add_argument("--wall", type=float, required=True)
    args = parser.parse_args()
    if args.command == "register":
        print(register(args.site))
    elif args.command == "pins":
        print("\n".join(pinned(args.names)))
    elif args.command == "versions":
        found = versions(args.site)
        args.json.write_text(json.dumps(found, indent=2) + "\n")
        print(version_lines(found))
    elif args.command == "ignores":
        found = ignores(ROOT / "tests")
        args.json.write_text(json.dumps(found, indent=2) + "\n")
        for path, missing in found.items():
            print(f"--ignore={path}\t{', '.join(missing)}")
    else:
        report = merge(args.parts, args.out, args.mode, args.budget, args.wall)
        print(json.dumps({k: report[k] for k in ("mode", "device", "steps", "targets", "ok")}, indent=2))


if __name__ == "__main__":
    main()
