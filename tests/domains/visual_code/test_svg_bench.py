"""SVG-Bench: StarVector's metrics (L2, SSIM, DinoScore) against the authors' code, and ``zoo eval --data svg-*``."""

import json

import numpy as np
import pytest

from domains.visual_code import evaluate, svg_bench
from domains.visual_code.data import DataFormatError
from domains.visual_code.svg_bench_metrics import DINOV2_PREPROCESSING, DinoScore, l2, load_dino_score, ssim


def ramps(h: int = 40, w: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Two textured RGB images, written as formulas so the golden values below do not depend on an RNG."""
    i, j, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    a = ((7 * i + 13 * j + 29 * c) % 256).astype(np.uint8)
    b = ((i * i + 3 * j + 51 * c + 5 * (i * j % 7)) % 256).astype(np.uint8)
    return a, b


def squares(h: int = 40, w: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """A red and a shifted blue rectangle on white: what two renders of an icon look like."""
    a = np.full((h, w, 3), 255, np.uint8)
    b = a.copy()
    a[8:24, 10:30] = (200, 30, 30)
    b[12:28, 14:34] = (30, 30, 200)
    return a, b


# scikit-image 0.26.0, the call of joanrod/star-vector@0e083c1:starvector/metrics/compute_SSIM.py:26 on these pairs:
# structural_similarity(a, b, win_size=11, channel_axis=-1, sigma=1.5, full=True)[0]
SKIMAGE_SSIM = {"ramps": 0.023842194153327764, "squares": 0.2852693600442561}


@pytest.mark.parametrize("name, pair", [("ramps", ramps()), ("squares", squares())])
def test_ssim_is_scikit_images_as_the_authors_call_it(name, pair):
    assert ssim(*pair) == pytest.approx(SKIMAGE_SSIM[name], abs=1e-12)
    assert ssim(pair[0], pair[0]) == pytest.approx(1.0)


def test_ssim_equals_scikit_image_where_it_is_installed():
    structural_similarity = pytest.importorskip("skimage.metrics").structural_similarity
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 256, (33, 29, 3), dtype=np.uint8) for _ in range(2))
    expected = structural_similarity(a, b, win_size=11, channel_axis=-1, sigma=1.5, full=True)[0]
    assert ssim(a, b) == pytest.approx(expected, abs=1e-12)


def test_l2_is_the_authors_mse_of_two_tensors():
    """joanrod/star-vector@0e083c1:starvector/metrics/compute_l2.py:17-34, transcribed (masked_l2=False)."""
    import torch.nn.functional as F
    from PIL import Image
    from torchvision.transforms import ToTensor

    for a, b in (ramps(), squares()):
        authors = F.mse_loss(ToTensor()(Image.fromarray(a)), ToTensor()(Image.fromarray(b))).item()
        assert l2(a, b) == pytest.approx(authors, rel=1e-6)
        assert l2(a, a) == 0.0


def test_metrics_refuse_mismatched_rasters():
    a, _ = ramps()
    with pytest.raises(ValueError, match="differ in shape"):
        l2(a, a[:10])
    with pytest.raises(ValueError, match="at least 11 px"):
        ssim(a[:8, :8], a[:8, :8])


def authors_dino_score(model, processor, gt_im, gen_im) -> float:
    """joanrod/star-vector@0e083c1:starvector/metrics/compute_dino_score.py:31-55, transcribed for one pair."""
    import torch
    import torch.nn as nn

    def process_input(image):
        with torch.no_grad():
            inputs = processor(images=image, return_tensors="pt")
            outputs = model(**inputs)
            return outputs.last_hidden_state.mean(dim=1)

    cos = nn.CosineSimilarity(dim=1)
    sim = cos(process_input(gt_im), process_input(gen_im)).item()
    return (sim + 1) / 2


def test_dino_score_is_the_authors_formula_on_a_tiny_dinov2():
    import torch
    from PIL import Image
    from transformers import Dinov2Config, Dinov2Model
    from transformers.models.bit.image_processing_pil_bit import BitImageProcessorPil

    torch.manual_seed(0)
    model = Dinov2Model(Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, patch_size=14, image_size=224)).eval()
    processor = BitImageProcessorPil(**DINOV2_PREPROCESSING)
    (a, b), (c, d) = ramps(300, 260), squares(300, 260)
    refs, gens = [Image.fromarray(x) for x in (a, c, a)], [Image.fromarray(x) for x in (b, d, a)]
    scorer = DinoScore(model, processor, batch_size=2)  # batches of 2 over 3 pairs: batching changes nothing
    expected = [authors_dino_score(model, processor, r, g) for r, g in zip(refs, gens)]
    assert scorer.scores(refs, gens) == pytest.approx(expected, abs=1e-6)
    assert expected[2] == pytest.approx(1.0) and expected[0] < 0.9999
    # the feature is the mean of all tokens: the CLS alone gives another score
    with torch.no_grad():
        cls = [model(**processor(images=x, return_tensors="pt")).last_hidden_state[:, 0] for x in refs[:1] + gens[:1]]
    assert float((torch.cosine_similarity(*cls) + 1) / 2) != pytest.approx(expected[0], abs=1e-4)


def test_a_missing_dino_model_says_how_to_get_it(tmp_path):
    with pytest.raises(OSError, match="hf download"):
        load_dino_score(str(tmp_path / "no-such-model"))


def test_the_authors_placeholder_renders_as_the_white_canvas_the_bench_scores():
    """A failed answer becomes ``<svg></svg>`` (joanrod/star-vector@0e083c1:starvector/data/util.py:120-121),
    which cairosvg draws white: the bench scores the white canvas without rendering it."""
    from rewards.rendering import render

    result = render("svg", "<svg></svg>", size=(svg_bench.METRIC_SIZE,) * 2)
    assert result.ok and np.array_equal(np.asarray(result.image), np.asarray(svg_bench._white()))


SVG_HEAD = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
SQUARE = SVG_HEAD + '<rect x="4" y="6" width="18" height="14" fill="#c33"/></svg>'
CIRCLE = SVG_HEAD + '<circle cx="16" cy="16" r="9" fill="#33c"/></svg>'


class CopyPipe:
    """Answers each picture with a fixed list of texts, in order (a model stand-in for the scoring path)."""

    def __init__(self, texts):
        self.texts, self.sizes = list(texts), []

    def __call__(self, image, question):
        self.sizes.append(image.size)
        return self.texts.pop(0)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_svg_stack_rows_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(svg_bench, "CHUNK", 2)  # two chunks: a full one and a partial one
    rows = [{"Filename": "icon-a.svg", "Svg": SQUARE}, {"Filename": "icon-b.svg", "Svg": CIRCLE},
            {"Filename": "broken.svg", "Svg": "<svg><rect"}]
    path = write_jsonl(tmp_path / "test.jsonl", rows)
    pipe = CopyPipe([f"Here: {SQUARE} done", "<svg><circle", "<svg xmlns='http://www.w3.org/2000/svg'><g"])
    metrics = evaluate.run(pipe, "svg-stack", str(path), tmp_path / "out", dino_model="tiny")
    assert pipe.sizes == [(svg_bench.INPUT_SIZE,) * 2] * 3  # the authors' 224-px input render
    assert (metrics["n"], metrics["scored"], metrics["masked"], metrics["failed_references"]) == (3, 3, 0, 1)
    assert metrics["no_compile"] == pytest.approx(2 / 3)
    assert metrics["dino_model"].startswith("tiny") and "LPIPS" in metrics["not_computed"]
    assert set(svg_bench.METRICS) <= set(metrics)
    out = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in out] == ["icon-a", "icon-b", "broken"]
    perfect, missed, both_white = out
    assert perfect["L2"] == 0.0 and perfect["SSIM"] == pytest.approx(1.0) and perfect["DinoScore"] == pytest.approx(1.0)
    assert perfect["svg"] == SQUARE and not perfect["no_compile"]
    # the unrendered answer is scored as a white canvas against the circle, and stays in every mean
    circle = np.asarray(svg_bench._render([CIRCLE], svg_bench.METRIC_SIZE)[0].image)
    white = np.asarray(svg_bench._white())
    assert missed["no_compile"] and missed["L2"] == pytest.approx(l2(circle, white))
    assert missed["SSIM"] == pytest.approx(ssim(circle, white))
    # a reference that does not render is white too, so a white answer matches it perfectly (the authors' fallback)
    assert both_white["reference_failed"] and both_white["L2"] == 0.0
    assert metrics["L2"] == pytest.approx((0.0 + missed["L2"] + 0.0) / 3)
    assert (tmp_path / "out" / "grid.png").stat().st_size > 0


def test_a_folder_is_read_at_its_test_split(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "svg-icons" / "data"
    data.mkdir(parents=True)
    table = pa.table({"Filename": ["x.svg", "y.svg"], "Svg": [SQUARE, CIRCLE]})
    pq.write_table(table, data / "test-00000-of-00001.parquet")
    pq.write_table(pa.table({"Filename": ["train.svg"], "Svg": [SQUARE]}), data / "train-00000-of-00001.parquet")
    assert svg_bench.load_svg_bench("svg-icons", tmp_path / "svg-icons") == [("x", SQUARE), ("y", CIRCLE)]
    assert svg_bench.load_svg_bench("svg-icons", tmp_path / "svg-icons", limit=1) == [("x", SQUARE)]


def test_bad_inputs_are_named_errors(tmp_path):
    with pytest.raises(DataFormatError, match="no test"):
        svg_bench.bench_files(tmp_path)
    with pytest.raises(DataFormatError, match="'Svg'"):
        svg_bench.load_svg_bench("svg-stack", write_jsonl(tmp_path / "t.jsonl", [{"Filename": "a"}]))
    with pytest.raises(ValueError, match="needs --path"):
        evaluate.run(CopyPipe([]), "svg-fonts", None, tmp_path / "out")
    with pytest.raises(ValueError, match="dino_model applies to the SVG-Bench sets only"):
        evaluate.run(CopyPipe([]), "chart-synthetic", None, tmp_path / "out", dino_model="tiny")
    with pytest.raises(ValueError, match="chartmimic_set does not apply"):
        evaluate.run(CopyPipe([]), "svg-emoji", "x", tmp_path / "out", chartmimic_set="ori_500")


def test_every_svg_bench_set_is_a_benchmark_of_this_domain():
    from zoo.benchmarks import evaluating_domain

    assert {evaluating_domain(name, "visual_code").name for name in svg_bench.SVG_BENCH} == {"visual_code"}
