"""Loaders on small files written in each benchmark's published format, and the synthetic generators."""

import base64
import csv
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from domains.visual_code import data
from domains.visual_code.synthetic import random_cad_part, random_chart_code, random_svg
from rewards.code_render import reference_image

CHART = "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [1, 2])\n"
SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="4" fill="#ff0000"/></svg>'


def _png_bytes(color=(255, 0, 0)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, format="PNG")
    return buf.getvalue()


def test_chartmimic_reads_png_py_pairs(tmp_path):
    (tmp_path / "bar_1.png").write_bytes(_png_bytes())
    (tmp_path / "bar_1.py").write_text(CHART)
    (tmp_path / "orphan.png").write_bytes(_png_bytes())  # no code: not a pair
    (samples,) = data.load_chartmimic(tmp_path)
    assert samples.id == "bar_1" and samples.target["code"] == CHART and samples.meta["chart_type"] == "bar"
    assert samples.question == "" and samples.images == (str(tmp_path / "bar_1.png"),)  # raw: the chart is the task
    assert Path(samples.target["image"]).is_absolute()  # the reward reads it after TRL's dataset round trip
    assert reference_image(samples.target["image"]).size == (8, 8)


def test_chartmimic_without_pairs_is_a_named_error(tmp_path):
    with pytest.raises(data.DataFormatError, match="no direct_600/ folder"):
        data.load_chartmimic(tmp_path)
    (tmp_path / "ori_500").mkdir()
    with pytest.raises(data.DataFormatError, match="no <name>.png with a matching <name>.py"):
        data.load_chartmimic(tmp_path / "ori_500")


def test_plot2code_parquet_with_datasets_image_structs(tmp_path):
    rows = [{"image": {"bytes": _png_bytes(), "path": None}, "url": "u", "code": CHART, "instruction": "Draw bars."}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test.parquet")
    (sample,) = data.load_plot2code(tmp_path / "test.parquet", with_instruction=True)
    assert sample.target["code"] == CHART and sample.images[0].size == (8, 8)
    assert sample.question == "\nDraw bars."  # raw: the msrl entry's template puts MSRL's prompt before it
    assert data.load_plot2code(tmp_path / "test.parquet")[0].question == ""


def test_plot2code_jsonl_with_base64_and_a_missing_column(tmp_path):
    good = {"image": base64.b64encode(_png_bytes()).decode(), "code": CHART, "url": "u", "instruction": "i"}
    (tmp_path / "p.jsonl").write_text(json.dumps(good) + "\n")
    assert data.load_plot2code(tmp_path / "p.jsonl")[0].images[0].size == (8, 8)
    (tmp_path / "bad.jsonl").write_text(json.dumps({"image": good["image"]}) + "\n")
    with pytest.raises(data.DataFormatError, match="code"):
        data.load_plot2code(tmp_path / "bad.jsonl")


def test_plot2code_jsonl_with_an_image_path_next_to_it(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "0.png").write_bytes(_png_bytes((0, 0, 255)))
    (tmp_path / "p.jsonl").write_text(json.dumps({"image": "img/0.png", "code": CHART}) + "\n")
    (sample,) = data.load_plot2code(tmp_path / "p.jsonl")
    assert sample.target["image"] == str((tmp_path / "img" / "0.png").resolve())


def test_svg_stack_renders_references_and_drops_broken_rows(tmp_path):
    rows = [{"Filename": "a.svg", "Svg": SVG}, {"Filename": "broken.svg", "Svg": "<svg"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")
    (sample,) = data.load_svg_stack(tmp_path / "train.parquet", size=16)
    pixels = np.asarray(reference_image(sample.target["image"]))
    assert sample.id == "a.svg" and tuple(pixels[2, 8]) == (255, 0, 0) and tuple(pixels[12, 8]) == (255, 255, 255)


def test_text2cad_csv_with_cadquery_folder(tmp_path):
    with (tmp_path / "text2cad.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["uid", "abstract", "beginner", "intermediate", "expert"])
        writer.writeheader()
        writer.writerow({"uid": "0000/00001", "abstract": "a plate", "beginner": "b", "intermediate": "i",
                         "expert": "A 10 mm plate."})
        writer.writerow({"uid": "0000/00002", "abstract": "x", "beginner": "x", "intermediate": "x", "expert": "x"})
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "0000_00001.py").write_text("result = 1\n")
    (sample,) = data.load_text2cad(tmp_path / "text2cad.csv", code_dir=tmp_path / "code")
    assert sample.target == {"language": "cadquery", "description": "A 10 mm plate.", "code": "result = 1\n"}
    assert len(data.load_text2cad(tmp_path / "text2cad.csv", level="abstract")) == 2  # no folder: text only
    with pytest.raises(ValueError, match="level"):
        data.load_text2cad(tmp_path / "text2cad.csv", level="novice")


def test_generators_are_seeded_and_their_code_compiles():
    for make in (random_chart_code, random_cad_part):
        a, b = make(np.random.default_rng(3)), make(np.random.default_rng(3))
        assert a == b
        compile(a[0], "<generated>", "exec")
    assert random_svg(np.random.default_rng(1)) == random_svg(np.random.default_rng(1))


def test_synthetic_charts_reference_is_the_render_of_its_code():
    from rewards.rendering import render

    (sample,) = data.synthetic_charts(n=1, size=32)
    again = render("matplotlib", sample.target["code"], size=(32, 32)).image
    assert np.array_equal(np.asarray(again), np.asarray(reference_image(sample.target["image"])))
    assert np.array_equal(np.asarray(again), np.asarray(sample.images[0]))


def test_one_shape_compact_scenes_render_and_refuse_bad_options():
    samples = data.synthetic_svgs(n=6, seed=3, size=56, pixels=112, kind="svg-skia", shapes=(1, 1),
                                  kinds=("circle", "rect"), colors=4, compact=True)
    for sample in samples:
        code = sample.target["code"]
        assert code.startswith('<svg viewBox="0 0 56 56">') and code.count("fill=") == 1 and "xmlns" not in code
        assert sample.images[0].size == (112, 112)
        pixels = np.asarray(sample.images[0])
        assert (pixels != 255).any() and (pixels == 255).all(axis=2).any()  # a shape on a white ground
    assert len({s.target["code"] for s in samples}) == 6
    with pytest.raises(ValueError, match="kinds from"):
        random_svg(np.random.default_rng(0), kinds=("star",))


# --- VinciCoder's released RL set (DocTron-Hub/VinciCoder-42k-RL) -------------------------------------------
# The format is the one VinciCoder's EasyR1 trainer reads (DocTron-hub/VinciCoder@dbe1e94): columns problem,
# answer, images (examples/config.yaml:4-6), images as datasets Image structs, one <image> mark per image.

CHART_PROBLEM = "<image>\nYou are an expert Python developer. Write the matplotlib code that draws this chart.\n"
VINCI_ROWS = [
    {"problem": CHART_PROBLEM, "answer": "```python\n" + CHART + "```", "colour": (255, 0, 0)},
    {"problem": "<image>Convert this icon into SVG code.", "answer": SVG, "colour": (0, 255, 0)},
    {"problem": "<image>Write the HTML of this web page.", "answer": "<html></html>", "colour": (0, 0, 255)},
    {"problem": "Write TikZ code for <image> please.", "answer": "\\draw (0,0);", "colour": (9, 9, 9)},
]


def _vincicoder_parquet(path: Path) -> Path:
    """The released layout, written by the datasets library as the Hub's parquet export is."""
    import datasets

    features = datasets.Features({"problem": datasets.Value("string"), "answer": datasets.Value("string"),
                                  "images": datasets.List(datasets.Image())})
    table = {"problem": [r["problem"] for r in VINCI_ROWS], "answer": [r["answer"] for r in VINCI_ROWS],
             "images": [[Image.new("RGB", (12, 8), r["colour"])] for r in VINCI_ROWS]}
    datasets.Dataset.from_dict(table, features=features).to_parquet(str(path))
    return path


def easyr1_messages(example: dict, format_prompt: str = "{{ content | trim }}") -> list[dict]:
    """VinciCoder@dbe1e94 verl/utils/dataset.py:152-168 (image branch), with the run's format prompt
    examples/format_prompt/vision.jinja (set by examples/qwen3vl_8b_vincicder.sh:23)."""
    from jinja2 import Template

    prompt_str = Template(format_prompt.strip()).render(content=example["problem"])
    content_list = []
    for i, content in enumerate(prompt_str.split("<image>")):
        if i != 0:
            content_list.append({"type": "image"})
        if content:
            content_list.append({"type": "text", "text": content})
    return [{"role": "user", "content": content_list}]


def test_vincicoder_rl_rows_read_as_the_authors_trainer_reads_them(tmp_path):
    import datasets

    file = _vincicoder_parquet(tmp_path / "train.parquet")
    reference = datasets.load_dataset("parquet", data_files=str(file), split="train")  # dataset.py:133-135
    samples = data.load_vincicoder_rl(file, languages=("python", "svg"))
    assert [s.id for s in samples] == ["train-0", "train-1"]  # html and tikz (latex) rows have no renderer here
    for sample, row in zip(samples, reference, strict=False):
        assert sample.prompt == easyr1_messages(row)
        assert sample.target["code"] == row["answer"]
        assert np.array_equal(np.asarray(reference_image(sample.target["image"])), np.asarray(row["images"][0]))
    assert [s.target["language"] for s in samples] == ["matplotlib", "svg"]
    assert [s.meta["language"] for s in samples] == ["python", "svg"]
    (chart,) = data.load_vincicoder_rl(tmp_path)  # a folder is read whole, python rows by default
    assert chart.question == "\nYou are an expert Python developer. Write the matplotlib code that draws this chart."
    assert [data.vincicoder_language(r["problem"]) for r in VINCI_ROWS] == ["python", "svg", "html", "latex"]
    with pytest.raises(ValueError, match="no renderer"):
        data.load_vincicoder_rl(file, languages=("html",))


def test_vincicoder_rl_jsonl_with_image_paths_and_its_format_errors(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "0.png").write_bytes(_png_bytes((0, 0, 255)))
    row = {"problem": CHART_PROBLEM, "answer": "a", "images": ["img/0.png"]}
    (tmp_path / "rl.jsonl").write_text(json.dumps(row) + "\n")
    (sample,) = data.load_vincicoder_rl(tmp_path / "rl.jsonl")
    assert sample.target["image"] == str((tmp_path / "img" / "0.png").resolve())
    bad = {
        "no-answer.jsonl": ({"problem": CHART_PROBLEM, "images": ["img/0.png"]}, "answer"),
        "no-mark.jsonl": ({**row, "problem": "Draw it in Python."}, "<image> marks"),
        "outside.jsonl": ({**row, "images": ["../secret.png"]}, "neither a file under"),
    }
    for name, (content, message) in bad.items():
        (tmp_path / name).write_text(json.dumps(content) + "\n")
        with pytest.raises(data.DataFormatError, match=message):
            data.load_vincicoder_rl(tmp_path / name)


def test_benchmark_files_are_refused_as_training_data_and_the_msrl_recipe_trains_on_vincicoder_s():
    from zoo.engines.checks import check_training_data
    from zoo.engines.reading import load_recipe
    from zoo.recipe import DataConfig, RecipeError

    for name in ("chartmimic", "plot2code"):
        with pytest.raises(RecipeError, match="evaluation data"):
            check_training_data(DataConfig(name=name, kwargs={"path": "x"}))
    recipe = load_recipe(Path(data.__file__).parent / "recipes" / "msrl-chart-grpo.yaml")
    assert recipe.data.name == "vincicoder-rl" and not recipe.data.allow_eval_data
