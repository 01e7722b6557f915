"""Bad input ends in one clear line and a non-zero exit, and loses nothing (review-reliability §1.11, §3.9,
§3.15, §6.1-6.2 and the Ctrl-C finding): the `zoo` command as a user types it."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zoo import runs
from zoo.cli import main
from zoo.job import LOCK_FILE

ROOT = Path(__file__).resolve().parents[2]
SMOKE = str(ROOT / "tests/engines/diffusion_smoke.yaml")
TWO_STEPS = ["--set", "training.steps=2"]


def test_a_fresh_run_refuses_a_directory_that_holds_another_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    assert main(["train", SMOKE, *TWO_STEPS, "--output-dir", str(out)]) == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != LOCK_FILE}  # the lock names each job
    capsys.readouterr()
    assert main(["train", SMOKE, *TWO_STEPS, "--set", "training.lr=5e-3", "--output-dir", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "already holds a run (checkpoint-2, final)" in err and "--resume" in err, err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != LOCK_FILE} == before  # nothing touched
    assert main(["train", SMOKE, *TWO_STEPS, "--output-dir", str(out), "--resume"]) == 0  # continuing it is fine


@pytest.mark.parametrize("setting", ["multi_turn.sampler=os:system", "model.added_tokens=os:system",
                                     "model.added_tokens=os:getcwd", "multi_turn.sampler=os.path:nothing"])
def test_a_recipe_the_engine_refuses_leaves_no_run_directory(setting: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    """An import string naming the wrong kind of object is one line (it used to be a 30-line TypeError) and
    the run directory the CLI made for it is removed again."""
    out = tmp_path / "run"
    argv = ["train", str(ROOT / "domains/gui/recipes/ui-s1-smoke.yaml"), "--set", setting, "--output-dir", str(out)]
    assert main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and setting.split("=")[0] in errors[0], errors
    assert not out.exists()


def test_a_full_disk_is_named_whatever_the_library_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = runs.disk_full(OSError(errno.ENOSPC, "No space left on device"), tmp_path)
    assert isinstance(plain, runs.DiskFullError) and "is full" in str(plain) and "--resume" in str(plain)
    said = RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)")  # safetensors
    assert runs.disk_full(said, tmp_path) is not None
    torch_zip = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 1466560 vs 1466452")
    assert runs.disk_full(torch_zip, tmp_path) is None  # the disk has room: not a full disk
    full = os.statvfs_result((4096, 4096, 100, 0, 0, 100, 0, 0, 0, 255))  # no block free
    monkeypatch.setattr(runs.os, "statvfs", lambda path: full)
    assert "0 KiB left" in str(runs.disk_full(torch_zip, tmp_path))


def test_a_run_stopped_by_a_full_disk_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    from zoo.engines.diffusion import checkpoint

    def no_room(*args: object, **kwargs: object) -> None:
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 1466560 vs 1466452")

    monkeypatch.setattr(checkpoint.torch, "save", no_room)
    monkeypatch.setattr(runs.os, "statvfs", lambda path: os.statvfs_result((4096, 4096, 9, 0, 0, 9, 0, 0, 0, 255)))
    assert main(["train", SMOKE, *TWO_STEPS, "--output-dir", str(tmp_path / "run")]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "is full" in errors[0] and "unexpected pos" in errors[0], errors


def test_ctrl_c_prints_one_line_with_the_resume_command(tmp_path: Path) -> None:
    """A real Ctrl-C (SIGINT to the process group, as a terminal sends it) during training."""
    out = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1"}
    argv = [sys.executable, "-m", "zoo.cli", "train", SMOKE, "--set", "training.steps=100000", "--output-dir", str(out)]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not runs.existing_run(out) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert runs.existing_run(out), "training never wrote a checkpoint"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted; continue from the last complete checkpoint with: zoo train "), last
    assert last.endswith(f"--output-dir {out} --resume"), last


#: A Ctrl-C raised inside a finalizer, which CPython reports ("Exception ignored in") and drops, then a loop of plain
#: Python code for up to 4 s: "stopped after <s>" when a KeyboardInterrupt ends it, else "trained on". With ``guard``,
#: the loop runs under zoo.job.insistent_interrupts (repeats every 0.2 s), and after the block nothing more arrives and
#: Python's own handler is back.
LOST_CTRL_C = """
import gc, signal, sys, time
from zoo.job import insistent_interrupts

class Finalizer:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)  # lands here, inside __del__: dropped

guard = sys.argv[1] == "guard"
start = time.monotonic()
try:
    with insistent_interrupts(period=0.2) if guard else open("/dev/null"):
        Finalizer()  # collected at once: its __del__ runs
        print("the Ctrl-C was dropped", flush=True)
        while time.monotonic() - start < 4:
            time.sleep(0.01)
    print("trained on")
except KeyboardInterrupt:
    print(f"stopped after {time.monotonic() - start:.1f} s")
quiet = time.monotonic()
while time.monotonic() - quiet < 1:  # five periods: a repeat arriving after the block would raise here
    time.sleep(0.01)
print("handler restored:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


@pytest.mark.parametrize("guard", [False, True])
def test_a_ctrl_c_dropped_inside_a_finalizer_is_repeated_until_it_stops_the_run(guard: bool) -> None:
    """What left a Ctrl-C'd run training on (the test above, once in a loaded suite): the control shows that CPython
    really drops the interrupt, the guard (what ``zoo train`` runs under) that the repeat stops the block anyway."""
    done = subprocess.run([sys.executable, "-c", LOST_CTRL_C, "guard" if guard else "none"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "the Ctrl-C was dropped" and "Exception ignored" in done.stderr, done.stdout + done.stderr
    if not guard:
        assert lines[1:] == ["trained on", "handler restored: True"], lines
        return
    assert lines[1].startswith("stopped after ") and lines[2] == "handler restored: True", lines
    assert float(lines[1].split()[2]) < 3, lines  # the first repeat, 0.2 s on (measured: 0.2)


def test_zoo_run_of_a_policy_takes_an_observation(capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "fetch-push-bc-tiny", "--prompt", "x"]) == 1
    assert "--prompt: not read by a policy model" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:  # argparse-style: the message is printed, exit status 1
        main(["run", "fetch-push-bc-tiny"])
    said = str(stopped.value.code)
    assert "control policy" in said and "--observation" in said and "--image" not in said, said
    observation = json.dumps([0.1] * 28)
    assert main(["run", "fetch-push-bc-tiny", "--observation", observation, "--json"]) == 0
    actions = json.loads(capsys.readouterr().out)["actions"]
    assert len(actions) == 4 and all(len(a) == 4 for a in actions)  # a 4-step chunk of 4-D actions
    assert main(["run", "fetch-push-bc-tiny", "--observation", "[0.1, 0.2]"]) == 1  # wrong size: one line
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and err.count("\n") == 0, err
    assert main(["run", "fetch-push-bc-tiny", "--observation", observation, "--image", "x.png"]) == 1
    assert "--image: not read by a policy model" in capsys.readouterr().err


def test_zoo_run_of_a_text_to_image_model_refuses_what_it_would_ignore(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    assert main(["run", "flow-grpo-tiny-colour", "--prompt", "a red square", "--out", str(tmp_path)]) == 1
    assert "is a folder" in capsys.readouterr().err
    assert main(["run", "flow-grpo-tiny-colour", "--prompt", "a red square", "--temperature", "0.7"]) == 1
    assert "--temperature: not read by a diffusion model" in capsys.readouterr().err


def test_zoo_run_of_a_clip_model_scores_class_names(tmp_path: Path, hf_cache: Path, install: object,
                                                    capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    from PIL import Image

    from tests.pipelines.test_clip import _save_hub_layout, _tiny_clip

    install(_save_hub_layout(_tiny_clip(), tmp_path / "model"), "WenchuanZhang/Patho-CLIP-B", hf_cache)
    Image.new("RGB", (40, 30), "purple").save(tmp_path / "tile.png")
    argv = ["run", "patho-clip-b", "--image", str(tmp_path / "tile.png"), "--prompt", "tumor, normal tissue", "--json"]
    assert main(argv) == 0
    probabilities = json.loads(capsys.readouterr().out)["probabilities"]
    assert list(probabilities) == ["tumor", "normal tissue"] and sum(probabilities.values()) == pytest.approx(1.0)
    assert main([*argv[:-1], "--draw", str(tmp_path / "x.png")]) == 1  # a flag this kind does not read
    assert "--draw: not read by a clip model" in capsys.readouterr().err


@pytest.mark.parametrize("flags, said", [(["--limit", "0"], "--limit 0"), (["--out", "README.md"], "is a file")])
def test_eval_refuses_a_useless_limit_or_a_file_as_output_folder(flags: list[str], said: str,
                                                                 capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    assert main(["eval", "gui-grounding-tiny", "--data", "synthetic-tiny", *[str(ROOT / f) if f == "README.md" else f
                                                                          for f in flags]]) == 1  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert said in err and err.count("\n") == 0, err


@pytest.mark.parametrize("args, said", [
    (["gui-grounding-tiny", "--data", "nonsense"], "unknown benchmark 'nonsense'"),
    (["gui-grounding-tiny", "--data", "screenspot", "--path", "/no/such/folder"], "--path /no/such/folder: no such"),
    (["gui-grounding-tiny", "--data", "geneval"], "evaluated by the image domain"),
    (["gui-grounding-tiny", "--data", "synthetic-tiny", "--option", "foo=1"], "--option foo"),
    (["flow-grpo-tiny-colour", "--data", "geneval", "--path", "/no/prompts.jsonl"], "--path /no/prompts.jsonl"),
])  # fmt: skip
def test_eval_refuses_bad_arguments_before_the_model_loads(args: list[str], said: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    """Issue 55: an argument error comes before the weights load (a load here fails the test)."""
    import importlib

    def no_load(*_: object, **__: object) -> None:
        raise AssertionError("the model loaded before the arguments were checked")

    monkeypatch.setattr(importlib.import_module("zoo.load"), "load", no_load)  # the module (zoo.load is the function)
    assert main(["eval", *args]) in (1, 2)  # 2: an unknown name (zoo.cli's exit code for it)
    err = capsys.readouterr().err.strip()
    assert said in err and err.count("\n") == 0, err


@pytest.mark.parametrize("data", ["geneval", "ocr"])
def test_image_eval_refuses_a_fifo_or_a_device_instead_of_reading_it(data: str, tmp_path: Path) -> None:
    """A FIFO blocked the read forever and /dev/zero filled memory; neither is opened now."""
    from domains.image import evaluate

    fifo = tmp_path / "prompts.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(ValueError, match="not a regular file"):
            evaluate.run(object(), data, str(path), tmp_path / "out")


def test_a_recipe_naming_a_hub_model_missing_offline_gets_the_download_command(
        tmp_path: Path, hf_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    argv = ["train", str(ROOT / "domains/synthetic/recipes/synthetic-colour.yaml"), "--set",
            "model.name=someone/unknown-model", "--output-dir", str(out)]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "hf download someone/unknown-model" in err and "huggingface.co" not in err, err
    assert not out.exists()


def test_the_ctrl_c_hint_of_a_torchrun_rank_resumes_with_as_many_processes(monkeypatch):
    """review-reliability 9.5: under torchrun the hint offered a one-process ``zoo train --resume``."""
    import argparse

    from zoo.cli import _resume_hint

    args = argparse.Namespace(command="train", argv=["r.yaml", "--output-dir", "runs/x"])
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert _resume_hint(args).endswith("torchrun --nproc_per_node 2 -m zoo.cli train r.yaml --output-dir runs/x --resume")
    monkeypatch.delenv("WORLD_SIZE")
    assert _resume_hint(args).endswith("with: zoo train r.yaml --output-dir runs/x --resume")
