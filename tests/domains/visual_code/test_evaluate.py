"""``zoo eval`` for chart-to-code: metrics, rows and the grid from a ChartMimic-format folder."""

import json

import pytest

from domains.visual_code import evaluate
from domains.visual_code.data import synthetic_charts


class CopyPipe:
    """Answers each chart with a fixed list of texts, in order (a model stand-in for the scoring path)."""

    def __init__(self, texts):
        self.texts, self.questions = list(texts), []

    def __call__(self, image, question):
        self.questions.append(question)
        return self.texts.pop(0)


def test_chartmimic_folder_end_to_end(tmp_path):
    charts = synthetic_charts(n=2, seed=4, size=64)
    folder = tmp_path / "ori_500"
    folder.mkdir()
    for i, sample in enumerate(charts):
        sample.images[0].save(folder / f"bar_{i}.png")
        (folder / f"bar_{i}.py").write_text(sample.target["code"])
    right = f"```python\n{charts[0].target['code']}```"
    metrics = evaluate.run(CopyPipe([right, "no code"]), "chartmimic", str(folder), tmp_path / "out")
    assert metrics["n"] == 2 and metrics["exec_rate"] == 0.5 and metrics["failed_references"] == 0
    # sample 0 is perfect on every F1, sample 1 did not run (0): means are 0.5, low-level 50
    assert {k: metrics[k] for k in evaluate.LOW_LEVEL} == dict.fromkeys(evaluate.LOW_LEVEL, 0.5)
    assert metrics["low_level"] == pytest.approx(50.0) and metrics["ssim"] == pytest.approx(0.5)
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [r["executed"] for r in rows] == [True, False]
    assert (tmp_path / "out" / "grid.png").stat().st_size > 0


def test_the_raw_question_goes_to_the_pipeline_which_asks_it_in_msrls_prompt():
    from types import SimpleNamespace

    import zoo
    from domains.visual_code.prompts import MSRL_PROMPT
    from zoo.pipelines.vlm import VLMPipeline

    (sample,) = synthetic_charts(n=1, seed=6, size=32)
    pipe = CopyPipe(["no code"])
    pipe.entry = zoo.info("msrl")
    evaluate.predict_codes(pipe, [sample])
    assert pipe.questions == [""]  # the chart's raw question: none
    # the msrl pipeline sends it as the README does (DocTron-hub/MSRL@203465d:README.md:244-268): [image, prompt]
    messages = VLMPipeline.messages(SimpleNamespace(entry=zoo.info("msrl")), "chart.png", pipe.questions[0])
    assert messages == [{"role": "user", "content": [{"type": "image", "image": "chart.png"},
                                                     {"type": "text", "text": MSRL_PROMPT}]}]  # fmt: skip


def test_a_model_without_a_prompt_is_asked_with_msrls_and_told_so(caplog):
    import zoo
    from domains.visual_code.prompts import MSRL_PROMPT

    (sample,) = synthetic_charts(n=1, seed=6, size=32)
    for name, promptless in (("visual-programmability", True), ("msrl", False), ("svg-scenes-tiny", False)):
        pipe = CopyPipe(["no code"])
        pipe.entry = zoo.info(name)
        caplog.clear()
        evaluate.predict_codes(pipe, [sample])
        assert ("asking with MSRL's prompt" in caplog.text) == promptless, name
        assert pipe.questions == [MSRL_PROMPT if promptless else ""], name


def test_unknown_data_and_missing_path_are_named_errors():
    with pytest.raises(ValueError, match="choose chartmimic"):
        evaluate.load_eval_data("imagenet", None, None)
    with pytest.raises(ValueError, match="--path"):
        evaluate.load_eval_data("chartmimic", None, None)


def chartmimic_summary(rows: list[dict], denominator: int) -> dict[str, float]:
    """ChartMimic/ChartMimic@c9e149c:scripts/direct_mimic/get_results.ipynb cell 6, written for these rows: each F1
    summed x 100 over the rows scored, divided by the set's size, and their mean (a failed reference's F1 is 0:
    chart2code/utils/evaluator/text_evaluator.py:89-93, layout_evaluator.py:76-80)."""
    f1s = {k: sum(r[k] for r in rows) * 100 / denominator for k in evaluate.LOW_LEVEL}
    return {**f1s, "Average": sum(f1s.values()) / len(f1s)}


def test_a_reference_that_does_not_run_scores_zero_and_stays_in_the_denominator(tmp_path):
    (sample,) = synthetic_charts(n=1, seed=5, size=64)
    folder = tmp_path / "ori_500"
    folder.mkdir()
    for name, code in (("line_0", sample.target["code"]), ("line_1", "import matplotlib.pyplot as plt\n1 / 0\n")):
        sample.images[0].save(folder / f"{name}.png")
        (folder / f"{name}.py").write_text(code)
    text = f"```python\n{sample.target['code']}```"
    metrics = evaluate.run(CopyPipe([text, text]), "chartmimic", str(folder), tmp_path / "out")
    assert metrics["n"] == 2 and metrics["failed_references"] == 1 and metrics["exec_rate"] == 1.0
    rows = [json.loads(line) for line in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert [r["reference_failed"] for r in rows] == [False, True]
    expected = chartmimic_summary(rows, denominator=2)
    assert {k: 100 * metrics[k] for k in evaluate.LOW_LEVEL} == pytest.approx({k: expected[k] for k in evaluate.LOW_LEVEL})
    assert metrics["low_level"] == pytest.approx(expected["Average"]) and expected["Average"] == pytest.approx(50.0)


def test_direct_600_is_the_default_set_and_ori_500_is_chosen_by_option(tmp_path):
    charts = synthetic_charts(n=3, seed=7, size=64)
    for set_name, picked in (("direct_600", charts[:1]), ("ori_500", charts[1:])):
        (tmp_path / set_name).mkdir()
        for i, sample in enumerate(picked):
            sample.images[0].save(tmp_path / set_name / f"bar_{i}.png")
            (tmp_path / set_name / f"bar_{i}.py").write_text(sample.target["code"])
    current = evaluate.run(CopyPipe(["no code"]), "chartmimic", str(tmp_path), tmp_path / "a")
    old = evaluate.run(CopyPipe(["no code"] * 2), "chartmimic", str(tmp_path), tmp_path / "b", chartmimic_set="ori_500")
    assert (current["set"], current["n"]) == ("direct_600", 1) and (old["set"], old["n"]) == ("ori_500", 2)
    with pytest.raises(ValueError, match="not one of direct_600"):
        evaluate.run(CopyPipe([]), "chartmimic", str(tmp_path), tmp_path / "c", chartmimic_set="ori_600")
    with pytest.raises(ValueError, match="no direct_1800/ folder"):
        evaluate.run(CopyPipe([]), "chartmimic", str(tmp_path), tmp_path / "d", chartmimic_set="direct_1800")
