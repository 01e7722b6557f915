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
    # the judge's source is input_image (GEdit's _SRCIMG); the raw image comes second, only when the editor gets it
    assert len(english[1].images) == 1 and Image.open(io.BytesIO(english[1].images[0])).getpixel((0, 0)) == (0, 0, 255)
    raw = gedit.load_gedit(folder, edit_source="input_image_raw")[1].images
    assert [Image.open(io.BytesIO(b)).getpixel((0, 0)) for b in raw] == [(0, 0, 255), (10, 0, 0)]
    assert [s.meta["key"] for s in gedit.load_gedit(folder, language="all", intersection_only=True)] == ["k1", "k3"]
    assert len(gedit.load_gedit(folder / "data" / "train-00000-of-00001.parquet", limit=1)) == 1
    with pytest.raises(FileNotFoundError, match="data/\\*.parquet"):
        gedit.load_gedit(tmp_path)
    with pytest.raises(ValueError, match="language must be"):
        gedit.load_gedit(folder, language="de")
    with pytest.raises(ValueError, match="edit_source must be input_image or input_image_raw"):
        gedit.load_gedit(folder, edit_source="raw")


def test_gedit_loader_names_missing_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"key": ["a"], "instruction": ["x"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="not GEdit-Bench: it lacks the column\\(s\\) task_type"):
        gedit.load_gedit(tmp_path / "bad.parquet")


class FixedJudge:
    """Answers SC questions with [20, 15] and PQ questions with [25, 10] (0-25), recording what it was shown."""

    def __init__(self):
        self.calls, self.shown = [], []

    def ask(self, image_sets, prompts, *, seed=None, batch_size=8):
        self.calls.append((len(image_sets), seed))
        self.shown += image_sets
        return ['{"reasoning": "sc", "score": [20, 15]}' if "Editing instruction" in p
                else '{"reasoning": "pq", "score": [25, 10]}' for p in prompts]  # fmt: skip


class EditingPipe:
    """An image editor standing in for a diffusers editing pipeline: it inverts the image it is given and returns
    it at another size (32 x 20 pixels, with a gradient), as an editor working at its own resolution does."""

    call_parameters: ClassVar[frozenset[str]] = frozenset({"prompt", "image"})

    class entry:
        name = "test-editor"

    def __init__(self):
        self.inputs = []

    def __call__(self, prompt, *, image, seed=0, **kwargs):
        from zoo.outputs import ImageOutput

        self.inputs.append(image)
        edit = (255 - np.asarray(image.resize((32, 20)))).astype(np.int32)
        edit[:, :, 1] = np.arange(32)[None, :] * 8  # detail the resize filter has to handle
        return ImageOutput([Image.fromarray(edit.astype(np.uint8))], [prompt], {"seed": seed, **kwargs})


def test_gedit_run_judges_as_gedits_scorer_and_writes_their_layout(tmp_path):
    folder = write_gedit(tmp_path / "GEdit-Bench")
    judge, pipe = FixedJudge(), EditingPipe()
    metrics = evaluate.run(pipe, "gedit-bench", str(folder), tmp_path / "out", reward=EditScoreReward(judge))
    assert [im.getpixel((0, 0)) for im in pipe.inputs] == [(0, 0, 255), (0, 0, 255)]  # the editor edits input_image
    out = tmp_path / "out/images/fullset/color_alter/en"
    assert Image.open(out / "k1.png").size == (32, 20) and Image.open(out / "k1_SRCIMG.png").size == (24, 16)
    # what the judge sees, as stepfun-ai/Step1X-Edit@570eba6:GEdit-Bench/test_gedit_score.py:33-34 reads the folder
    raw = Image.open(out / "k1_SRCIMG.png")
    edited = Image.open(out / "k1.png").convert("RGB").resize((raw.size[0], raw.size[1]))
    source_shown, edit_shown = judge.shown[0]
    assert source_shown.size == edit_shown.size == (24, 16)
    assert np.array_equal(np.asarray(edit_shown), np.asarray(edited)) and np.array_equal(np.asarray(source_shown), np.asarray(raw))
    assert judge.calls == [(4, 42)]  # 2 SC + 2 PQ questions in one batched pass, the authors' seed
    # SC = min(20, 15) / 2.5 = 6, PQ = min(25, 10) / 2.5 = 4, O = sqrt(24); 2 of the 11 groups: no GEdit average
    assert metrics["overall"] is None and metrics["sc"] is None and len(metrics["missing_groups"]) == 9
    assert metrics["headline"].startswith("no GEdit-Bench average: it needs all 11 task groups and 9 have no scored edit")
    assert metrics["sample_mean"]["overall"] == pytest.approx(24 ** 0.5) and set(metrics["by_task"]) == {"color_alter", "subject-add"}
    rows = [json.loads(line) for line in (tmp_path / "out/predictions.jsonl").read_text().splitlines()]
    assert rows[1]["id"] == "subject-add/en/k2" and rows[1]["overall"] == pytest.approx(24 ** 0.5)
    assert Image.open(tmp_path / "out/grid.png").size == (2 * 256, 2 * 256)

    pipe = EditingPipe()
    both = evaluate.run(pipe, "gedit-bench", str(folder), tmp_path / "all", reward=EditScoreReward(FixedJudge()),
                        language="all", edit_source="input_image_raw")  # fmt: skip
    assert [im.getpixel((0, 0)) for im in pipe.inputs] == [(0, 0, 0), (10, 0, 0), (20, 0, 0)]  # the raw images
    assert set(both["by_language"]) == {"en", "cn"} and both["overall"] is None  # GEdit states each language apart


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
    assert metrics["images"] == 4 and metrics["model"] == "pipeline" and metrics["detector"] == "<lambda> (a detector passed in)"
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
