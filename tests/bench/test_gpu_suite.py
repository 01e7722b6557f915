"""bench/gpu_suite.sh, the prepared GPU run: its reduced mode runs here, so it cannot rot between the rare GPU loans.

The reduced mode (``--cpu-smoke``) takes the GPU mode's code paths with tiny numbers: the same setup, the same
bench scripts with smaller shapes, the same pytest step on one file, the same merge into one JSON.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_suite.sh"
OUT_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the device tool brings back (letters, digits, '.', '_', '-')

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("timeout") is None,
    reason="the suite is a bash script that runs its steps under coreutils' timeout",
)


def _suite_module():
    spec = importlib.util.spec_from_file_location("gpu_suite", ROOT / "bench" / "gpu_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str, env: dict[str, str] | None = None, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, **(env or {})}
    return subprocess.run(["bash", str(SCRIPT), *args], check=False, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_cpu_smoke_runs_every_step_and_writes_one_json(tmp_path):
    """One tiny pass of every step (~1.5 min of CPU): each bench's numbers, pytest's counts and at most 8 files back."""
    out = tmp_path / "out"
    done = _run("--cpu-smoke", env={"OUT": str(out)}, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads((out / "gpu_suite.json").read_text())
    assert report["mode"] == "cpu-smoke" and report["ok"], report["steps"]
    statuses = {name: step["status"] for name, step in report["steps"].items()}
    assert statuses.pop("sharded_diffusion") in ("ok", "skipped")  # skipped, with why, where the engine does not shard
    assert statuses == {"setup": "ok", "rollout": "ok", "grpo_step_tiny": "ok", "grpo_step_1.5b": "skipped",
                        "diffusion": "ok", "sharded_semi_online": "ok", "pytest": "ok"}  # fmt: skip
    assert report["steps"]["grpo_step_1.5b"]["reason"] == "cpu-smoke runs the tiny shape only"
    assert report["versions"]["torch"] and report["device"]["name"].startswith("cpu")
    assert report["rollout"]["backends"]["hf"]["tokens_per_s"] > 0
    assert report["grpo_step"]["tiny"]["step_time_ratio_zoo_over_trl"] > 0
    diffusion = report["diffusion"]
    assert diffusion["seconds_per_round"] > 0 and diffusion["images_per_round"] == 2
    assert (diffusion["lora"]["r"], diffusion["guidance_scale"]) == (32, 4.5)  # the SD3.5-M recipe's, kept
    _check_sharded(report)
    assert report["pytest"]["passed"] > 0 and report["pytest"]["failed"] == report["pytest"]["errors"] == 0
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and all(OUT_NAME.match(name) for name in files), files
    assert "gpu_suite.json" in files and "pytest.log" in files


def _check_sharded(report: dict) -> None:
    """Issue 52's steps: each FSDP launch config sharded by the GPU mode's launcher (one process, a group of one over
    gloo here; tests/engines/test_*_sharded.py shard over two), trained tensors (parameters, gradients, AdamW's
    moments) float32 and every matmul bf16; seconds per step, rollout and update apart."""
    semi = report["sharded_semi_online"]
    assert semi["world"] == 1 and list(semi["configs"]) == ["fsdp-qwen2.5-vl", "fsdp-qwen2.5-vl-offload"]
    for launch, config in semi["configs"].items():
        assert config["sharded"] and config["offload"] == launch.endswith("offload")
        assert config["precision"] == {"compute": "bfloat16", "trained": "float32", "frozen": "bfloat16"}
        assert config["rollout_s"] > 0 and config["update_s"] > 0 and config["peak_rss_gib"] > 0
        assert config["steps"][0]["optimizer_steps"] == 2  # multi_turn.mini_batches: 2
        _check_dtypes(config["dtypes"])
        _check_plan(config["plan"])
    diffusion = report["sharded_diffusion"]
    if report["steps"]["sharded_diffusion"]["status"] == "skipped":
        assert report["steps"]["sharded_diffusion"]["reason"] == diffusion["skipped"]
        assert "left the denoiser whole under launch: fsdp-sd3" in diffusion["skipped"]
        return
    assert diffusion["sharded"] and diffusion["world"] == 1 and not diffusion["lora"]
    assert diffusion["trainable_params_m"] == diffusion["denoiser_params_m"] and diffusion["seconds_per_round"] > 0
    _check_dtypes(diffusion["dtypes"])
    _check_plan(diffusion["plan"])


def _check_plan(plan: dict) -> None:
    """Issue 53: beside each sharded run's peak, `zoo train --plan`'s row for that very run, its parts summing to its
    total (the GPU run sets `total_gib` beside `peak_gib`)."""
    assert plan["total_bytes"] > 0 and {"params", "grads", "optim"} <= set(plan["parts_gib"]), plan
    assert abs(sum(plan["parts_gib"].values()) - plan["total_gib"]) < 0.01 * len(plan["parts_gib"]), plan


def _check_dtypes(dtypes: dict) -> None:
    """fp32 masters: parameters, a gradient for each and AdamW's two moments per parameter, all float32; every
    matmul (training and sampling forwards) in bf16."""
    for kind in ("params", "grads", "optimizer_state"):
        assert list(dtypes[kind]) == ["float32"], (kind, dtypes)
    assert dtypes["optimizer_state"]["float32"] == 2 * dtypes["params"]["float32"]  # AdamW: exp_avg, exp_avg_sq
    assert dtypes["grads"] == dtypes["params"]
    assert {mode: list(seen) for mode, seen in dtypes["compute"].items()} == {"train": ["bfloat16"],
                                                                             "no_grad": ["bfloat16"]}  # fmt: skip


def test_help_holds_the_device_call_that_fits_the_tool():
    """The header names the exact call: a command of at most 2,000 characters that carries .whl."""
    done = _run("--help")
    assert done.returncode == 0
    call = re.search(r'run\(command="([^"]+)", carry=\[("\.whl")\], timeout_s=(\d+)\)', done.stdout)
    assert call, done.stdout
    assert len(call.group(1)) <= 2000 and "bench/gpu_suite.sh" in call.group(1) and int(call.group(3)) <= 600


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="the carry budget counts the files git tracks")
def test_check_budget_fails_above_the_carry_budget():
    fits = _run("--check-budget", env={"GPU_SUITE_BUDGET_BYTES": str(2**40)})
    assert fits.returncode == 0 and "tracked tree" in fits.stdout
    over = _run("--check-budget", env={"GPU_SUITE_BUDGET_BYTES": "1000"})
    assert over.returncode == 1 and "over the device call's carry budget" in over.stderr


def test_ignores_follow_module_level_imports_through_the_project(tmp_path):
    """A test file needing an absent package through a project module is ignored with its name; one that guards it
    with a module-level importorskip, or imports it inside a function, is left to pytest."""
    suite = _suite_module()
    cases = {
        "through_project.py": "from zoo.engines.vlm.trainer import ZooGRPOTrainer\n",  # trainer.py imports trl
        "guarded.py": "import pytest\ntrl = pytest.importorskip('trl')\nfrom trl import GRPOConfig\n",
        "lazy.py": "def test_x():\n    import trl\n",
    }
    found = {}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        found[name] = suite.missing_for(tmp_path / name, lambda package: package == "trl", {})
    assert found == {"through_project.py": {"trl"}, "guarded.py": set(), "lazy.py": set()}


def test_register_writes_the_projects_entry_points(tmp_path, monkeypatch):
    """Where the project is not installed (the GPU machine), a dist-info in the target folder carries its entry
    points, read from pyproject.toml."""
    suite = _suite_module()

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    assert suite.register(tmp_path).startswith("wrote ")
    (info,) = tmp_path.glob("*.dist-info")
    points = importlib.metadata.PathDistribution(info).entry_points
    assert {(p.group, p.name, p.value) for p in points} >= {("zoo.rewards", "domains", "zoo.domains"),
                                                            ("console_scripts", "zoo", "zoo.cli:main")}  # fmt: skip


def test_merge_checks_the_issue_targets_and_reads_pytests_junit(tmp_path):
    """GPU mode: the best non-hf backend against 5x hf and 30 % of the bandwidth floor, zoo/TRL against 1.05;
    pytest's failures and skip reasons come from its JUnit XML."""
    suite = _suite_module()
    parts, out = tmp_path / "parts", tmp_path / "out"
    parts.mkdir()
    out.mkdir()
    (parts / "steps.tsv").write_text("rollout\tok\t0\t80\t150\trollout.log\t\n"
                                     "pytest\tfailed\t1\t200\t300\tpytest.log\t\n"
                                     "sharded_diffusion\tok\t0\t30\t120\tsharded_step.log\t\n"
                                     "sharded_semi_online\tskipped\t0\t0\t12\tsharded_step.log\tbudget: 12s left\n")
    (parts / "sharded_diffusion.json").write_text(json.dumps({"sharded": False, "skipped": "left whole"}))
    backends = {"hf": {"tokens_per_s": 100.0, "tokens_per_s_over_hf": 1.0, "weight_bandwidth_floor_fraction": 0.05},
                "static": {"tokens_per_s": 640.0, "tokens_per_s_over_hf": 6.4, "weight_bandwidth_floor_fraction": 0.21}}
    (parts / "rollout.json").write_text(json.dumps({"backends": backends}))
    (parts / "grpo_1.5b.json").write_text(json.dumps({"step_time_ratio_zoo_over_trl": 1.02}))
    (parts / "pytest.xml").write_text(
        '<testsuites><testsuite time="3.5"><testcase classname="tests.a" name="test_ok"/>'
        '<testcase classname="tests.a" name="test_bad"><failure message="AssertionError: cuda:0 != cpu">tb</failure>'
        '</testcase><testcase classname="tests.b" name="test_skip"><skipped message="needs vllm"/></testcase>'
        "</testsuite></testsuites>"
    )
    report = suite.merge(parts, out / "gpu_suite.json", "gpu", 450, 300.0)
    assert [t["met"] for t in report["targets"]] == [True, False, True]
    assert "static" in report["targets"][0]["what"]
    assert report["ok"] is False  # pytest failed
    tests = report["pytest"]
    assert (tests["passed"], tests["failed"], tests["skipped"]) == (1, 1, 1)
    failure = {"test": "tests.a::test_bad", "kind": "failed", "message": "AssertionError: cuda:0 != cpu"}
    assert tests["failures"] == [failure]
    assert tests["skip_reasons"] == {"needs vllm": 1}
    assert json.loads((out / "gpu_suite.json").read_text())["targets"] == report["targets"]
    # a bench that measured nothing says why, and so does a step the budget cut
    assert report["steps"]["sharded_diffusion"] == {"status": "skipped", "rc": 0, "seconds": 30.0, "limit_s": 120,
                                                    "log": "sharded_step.log", "reason": "left whole"}  # fmt: skip
    assert report["steps"]["sharded_semi_online"]["reason"] == "budget: 12s left"
    assert report["sharded_diffusion"]["skipped"] == "left whole" and report["sharded_semi_online"] is None
