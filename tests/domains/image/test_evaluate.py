"""``zoo eval`` for the image domain: GEdit-Bench read from parquet files in the published stepfun-ai/GEdit-Bench
layout (written here), GenEval / OCR / GEdit-Bench runs on the tiny SD3 pipeline through the CLI, with the
rewards' model parts replaced by deterministic stand-ins (no detector, OCR engine or judge weights offline)."""

from __future__ import annotations

import io
import json
from typing import ClassVar

import numpy as np
import pytest
from PIL import Image

import zoo
from domains.image import evaluate, gedit
from domains.image.editscore_reward import EditScoreReward
from domains.image.geneval import Detection
from domains.image.geneval_models import GenEvalReward
from domains.image.ocr import OcrReward


def _png(colour) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def write_gedit(folder):
    """Three rows in GEdit-Bench's schema: image columns are ``{bytes, path}`` structs, as ``datasets`` writes them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [("k1", "color_alter", "make the car red", "en", True), ("k2", "subject-add", "add a cat", "en", False),
            ("k3", "color_alter", "把车变成红色", "cn", True)]  # fmt: skip
    table = pa.table({
        "key": [r[0] for r in rows], "task_type": [r[1] for r in rows], "instruction": [r[2] for r in rows],
        "instruction_language": [r[3] for r in rows],
        "input_image": [{"bytes": _png("blue"), "path": None} for _ in rows],
        "input_image_raw": [{"bytes": _png((10 * i, 0, 0)), "path": f"{r[0]}.png"} for i, r in enumerate(rows)],
        "Intersection_exist": [r[4] for r in rows],
    })  # fmt: skip
    (folder / "data").mkdir(parents=True)
    pq.write_table(table, folder / "data" / "train-00000-of-00001.parquet")
    return folder


def test_gedit_loader_reads_the_published_layout_and_filters(tmp_path):
    folder = write_gedit(tmp_path / "GEdit-Bench")
    english = gedit.load_gedit(folder)
    assert [s.id for s in english] == ["color_alter/en/k1", "subject-add/en/k2"]
    assert english[0].target == {"instruction": "make the car red"} and english[0].meta["intersection"] is True
    assert Image.open(io.BytesIO(english[1].images[0])).getpixel((0, 0)) == (10, 0, 0)  # the raw image, not input_image
    assert [s.meta["key"] for s in gedit.load_gedit(folder, language="all", intersection_only=True)] == ["k1", "k3"]
    assert len(gedit.load_gedit(folder / "data" / "train-00000-of-00001.parquet", limit=1)) == 1
    with pytest.raises(FileNotFoundError, match="data/\\*.parquet"):
        gedit.load_gedit(tmp_path)
    with pytest.raises(ValueError, match="language must be"):
        gedit.load_gedit(folder, language="de")


def test_gedit_loader_names_missing_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"key": ["a"], "instruction": ["x"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="not GEdit-Bench: it lacks the column\\(s\\) task_type"):
        gedit.load_gedit(tmp_path / "bad.parquet")


def _their_analyze_scores(frames: dict, language: str = "en") -> tuple[dict, dict, dict]:
    """GEdit-Bench's ``analyze_scores``, ported from the Bytedance ``calculate_statistics.py`` (Step1X-Edit/BAGEL
    GEdit-Bench scripts; file index id 66415700816) with one in-memory DataFrame per group in place of its CSVs.
    VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/GEdit-Bench/calculate_statistics.py:45-153
    computes the same with one sample per key."""
    import math

    import numpy as np

    groups = ["background_change", "color_alter", "material_alter", "motion_change", "ps_human", "style_change",
              "subject-add", "subject-remove", "subject-replace", "text_change", "tone_transfer"]  # fmt: skip
    semantics, quality, overall = {}, {}, {}
    for group_name in groups:
        df = frames[group_name]
        s_scores, q_scores, o_scores = [], [], []
        for _, row in df.iterrows():
            if row["instruction_language"] != language:
                continue
            overall_score = math.sqrt(row["sementics_score"] * row["quality_score"])
            s_scores.append(row["sementics_score"])
            q_scores.append(row["quality_score"])
            o_scores.append(overall_score)
        semantics[group_name] = np.mean(s_scores)
        quality[group_name] = np.mean(q_scores)
        overall[group_name] = np.mean(o_scores)
    semantics["avg_semantics"] = np.mean([semantics[g] for g in groups])
    quality["avg_quality"] = np.mean([quality[g] for g in groups])
    overall["avg_overall"] = np.mean([overall[g] for g in groups])
    return semantics, quality, overall


def test_gedit_headline_is_gedit_benchs_mean_of_group_means():
    """Groups of unequal size, so the mean of group means differs from the mean over samples (kept beside it)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    rows, frames = [], {}
    for i, task in enumerate(gedit.TASK_TYPES):
        sc, pq = rng.integers(0, 11, 2 + 3 * i).astype(float), rng.integers(0, 11, 2 + 3 * i).astype(float)
        frames[task] = pd.DataFrame({"sementics_score": sc, "quality_score": pq, "instruction_language": "en"})
        rows += [{"task_type": task, "sc": a, "pq": b, "overall": (a * b) ** 0.5} for a, b in zip(sc, pq)]
    semantics, quality, overall = _their_analyze_scores(frames)
    summary = gedit.summarise([*rows, {"task_type": "ps_human", "overall": None}])
    assert summary["n"] == len(rows) + 1 and summary["scored"] == len(rows) and summary["groups"] == 11
    assert summary["sc"] == pytest.approx(semantics["avg_semantics"])
    assert summary["pq"] == pytest.approx(quality["avg_quality"])
    assert summary["overall"] == pytest.approx(overall["avg_overall"])
    assert summary["by_task"]["tone_transfer"]["overall"] == pytest.approx(overall["tone_transfer"])
    per_sample = np.mean([r["overall"] for r in rows])
    assert summary["sample_mean"]["overall"] == pytest.approx(per_sample)
    assert abs(summary["overall"] - per_sample) > 0.01
    # O comes from the row's SC and PQ, as GEdit-Bench recomputes it (a multi-pass judge's mean O can differ)
    off = gedit.summarise([{"task_type": "a", "sc": 4.0, "pq": 9.0, "overall": 5.0}])
    assert off["overall"] == off["sample_mean"]["overall"] == 6.0 and off["groups"] == 1


class FixedJudge:
    """Answers SC questions with [20, 15] and PQ questions with [25, 10] (0-25), recording what it was shown."""

    def __init__(self):
        self.calls = []

    def ask(self, image_sets, prompts, *, seed=None, batch_size=8):
        self.calls.append((len(image_sets), seed))
        return ['{"reasoning": "sc", "score": [20, 15]}' if "Editing instruction" in p
                else '{"reasoning": "pq", "score": [25, 10]}' for p in prompts]  # fmt: skip


class EditingPipe:
    """An image editor standing in for a diffusers editing pipeline: it inverts the source image."""

    call_parameters: ClassVar[frozenset[str]] = frozenset({"prompt", "image"})

    class entry:
        name = "test-editor"

    def __call__(self, prompt, *, image, seed=0, **kwargs):
        from zoo.outputs import ImageOutput

        return ImageOutput([Image.fromarray(255 - np.asarray(image))], [prompt], {"seed": seed, **kwargs})


def test_gedit_run_writes_their_layout_and_editscore_numbers(tmp_path):
    folder = write_gedit(tmp_path / "GEdit-Bench")
    judge = FixedJudge()
    metrics = evaluate.run(EditingPipe(), "gedit-bench", str(folder), tmp_path / "out", reward=EditScoreReward(judge))
    # SC = min(20, 15) / 2.5 = 6, PQ = min(25, 10) / 2.5 = 4, O = sqrt(24)
    assert metrics["sc"] == pytest.approx(6.0) and metrics["pq"] == pytest.approx(4.0)
    assert metrics["overall"] == pytest.approx(24 ** 0.5) and set(metrics["by_task"]) == {"color_alter", "subject-add"}
    assert judge.calls == [(4, 42)]  # 2 SC + 2 PQ questions in one batched pass, the authors' seed
    edited = Image.open(tmp_path / "out/images/fullset/color_alter/en/k1.png")
    assert edited.getpixel((0, 0)) == (255, 255, 255)
    rows = [json.loads(line) for line in (tmp_path / "out/predictions.jsonl").read_text().splitlines()]
    assert rows[1]["id"] == "subject-add/en/k2" and rows[1]["overall"] == pytest.approx(24 ** 0.5)
    assert Image.open(tmp_path / "out/grid.png").size == (2 * 256, 2 * 256)


def test_gedit_refuses_a_text_to_image_pipeline(tmp_path):
    class TextOnly(EditingPipe):
        call_parameters: ClassVar[frozenset[str]] = frozenset({"prompt"})

    with pytest.raises(ValueError, match="GEdit-Bench needs an editing pipeline"):
        evaluate.run(TextOnly(), "gedit-bench", str(write_gedit(tmp_path / "g")), tmp_path / "out", reward=EditScoreReward(FixedJudge()))
    with pytest.raises(ValueError, match="needs --path"):
        evaluate.run(TextOnly(), "gedit-bench", None, tmp_path / "out")
    with pytest.raises(ValueError, match="choose geneval, ocr, gedit-bench"):
        evaluate.run(TextOnly(), "imagenet", None, tmp_path / "out")


def _cli(*argv):
    from zoo.cli import main

    return main(["eval", *argv])


def test_cli_evaluates_an_unlisted_diffusers_pipeline_on_geneval_and_ocr(sd3_dir, tmp_path, monkeypatch):
    """``zoo eval <directory> --data geneval``: the unlisted pipeline finds the image domain by its benchmark."""
    detector = lambda image: [Detection("dog", 0.95, (0, 0, 4, 4))]
    stand_ins = {"geneval": GenEvalReward(detector, lambda image, dets, name: ["red"] * len(dets)),
                 "ocr": OcrReward(lambda pixels: "hello world")}  # fmt: skip
    monkeypatch.setattr(evaluate, "_reward", lambda name: stand_ins[name])
    metadata = tmp_path / "evaluation_metadata.jsonl"
    metadata.write_text("".join(json.dumps(r) + "\n" for r in [
        {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"},
        {"tag": "colors", "include": [{"class": "dog", "count": 1, "color": "blue"}], "prompt": "a photo of a blue dog"},
    ]))  # fmt: skip
    out = tmp_path / "geneval"
    assert _cli(str(sd3_dir), "--data", "geneval", "--path", str(metadata), "--out", str(out), "--device", "cpu",
                "--option", "images_per_prompt=2", "--option", "num_inference_steps=2") == 0  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["tag/single_object"] == 1.0 and metrics["tag/colors"] == 0.0 and metrics["overall"] == 0.5
    assert metrics["images"] == 4 and metrics["model"] == "pipeline"
    assert "image" not in zoo.load(str(sd3_dir), device="cpu").call_parameters  # SD3 is text-to-image: GEdit-Bench refuses it
    assert json.loads((out / "images/00001/metadata.jsonl").read_text())["prompt"] == "a photo of a blue dog"
    assert Image.open(out / "images/00001/samples/0001.png").size == (16, 16)
    assert (out / "grid.png").is_file()

    out = tmp_path / "ocr"
    assert _cli(str(sd3_dir), "--data", "ocr", "--limit", "3", "--out", str(out), "--device", "cpu",
                "--option", "num_inference_steps=2") == 0  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert metrics["n"] == 3 and [r["prompt"] for r in rows] == evaluate.ocr_prompts(3, 0)
    from domains.image.ocr import ocr_score, quoted_target

    expected = [ocr_score("hello world", quoted_target(p)) for p in evaluate.ocr_prompts(3, 0)]
    assert [r["score"] for r in rows] == pytest.approx(expected)
    assert metrics["ocr_accuracy"] == pytest.approx(np.mean([r["score"] for r in rows]))
