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
    assert metrics["n"] == 2 and metrics["exec_rate"] == 0.5 and metrics["skipped_references"] == 0
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


def test_a_reference_that_does_not_run_is_skipped_and_counted(tmp_path):
    (sample,) = synthetic_charts(n=1, seed=5, size=64)
    folder = tmp_path / "ori_500"
    folder.mkdir()
    for name, code in (("line_0", sample.target["code"]), ("line_1", "import matplotlib.pyplot as plt\n1 / 0\n")):
        sample.images[0].save(folder / f"{name}.png")
        (folder / f"{name}.py").write_text(code)
    text = f"```python\n{sample.target['code']}```"
    metrics = evaluate.run(CopyPipe([text, text]), "chartmimic", str(folder), tmp_path / "out")
    assert metrics["n"] == 1 and metrics["skipped_references"] == 1 and metrics["exec_rate"] == 1.0
