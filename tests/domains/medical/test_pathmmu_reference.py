"""PathMMU scored as its authors' code scores it, on hand-made Patho-R1-style answers.

The reference below is PathMMU-Benchmark/PathMMU@f1ca4d3's own code, ported into the test:
``eval/utils/data_utils.py`` (``get_pathmmu_data``, ``construct_prompt``), ``eval/utils/eval_utils.py``
(``get_multi_choice_prediction``, ``evaluate``) and the loop of ``eval/main.py``. The only change is
that the random fallback draws from a generator passed in (seeded 42, as ``eval_utils.py:6`` seeds the
module) that counts its draws.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from domains.medical.evaluate import evaluate
from domains.medical.prompts import parse_think_answer
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR
from zoo.outputs import Prediction


class CountingRandom(random.Random):
    """``random.Random`` that counts ``choice`` calls: how many answers the fallback decided."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws = 0

    def choice(self, seq):
        self.draws += 1
        return super().choice(seq)


# --- the authors' code (f1ca4d3), ported ------------------------------------------------------


def get_pathmmu_data(data_root_path, category):
    with open(os.path.join(data_root_path, "data.json")) as fp:
        data = json.load(fp)
    split = "_".join(category.split("_")[1:])
    category = category.split("_")[0]
    samples = data[category][split]
    datas = []
    for data in samples:
        img_path = os.path.join(data_root_path, "images", data["img"])
        if not os.path.exists(img_path):
            continue
        datas.append({"No": data["No"], "question": data["question"], "options": data["options"],
                      "answer": data["answer"], "img_path": img_path})  # fmt: skip
    return datas


def construct_prompt(sample, config):
    question = sample["question"]
    options = sample["options"]
    example = ""
    start_chr = "A"
    prediction_range = []
    index2ans = {}
    new_options = []
    for option in options:
        prediction_range.append(start_chr)
        option = option.split(")")[1].strip()
        new_options.append(option)
        example += f"({start_chr}) {option}\n"
        index2ans[start_chr] = option
        start_chr = chr(ord(start_chr) + 1)
    empty_prompt = config["multi_choice_example_format"].format(question, example)
    res_dict = {}
    res_dict["index2ans"] = index2ans
    res_dict["correct_choice"] = sample["answer"][0]
    res_dict["all_choices"] = prediction_range
    res_dict["empty_prompt"] = empty_prompt
    res_dict["final_input_prompt"] = empty_prompt
    res_dict["gt_content"] = new_options[ord(sample["answer"][0].upper()) - ord("A")]
    res_dict.update(sample)
    return res_dict


def get_multi_choice_prediction(response, all_choices, index2ans, rng):
    for char in [",", ".", "!", "?", ";", ":", "'"]:
        response = response.strip(char)
    response = " " + response + " "
    index_ans = True
    ans_with_brack = False
    candidates = []
    for choice in all_choices:
        if f"({choice})" in response:
            candidates.append(choice)
            ans_with_brack = True
    if len(candidates) == 0:
        for choice in all_choices:
            if f" {choice} " in response:
                candidates.append(choice)
    if len(candidates) == 0 and len(response.split()) > 5:
        for index, ans in index2ans.items():
            if ans.lower() in response.lower():
                candidates.append(index)
                index_ans = False
    if len(candidates) == 0:
        pred_index = rng.choice(all_choices)
    elif len(candidates) > 1:
        start_indexes = []
        if index_ans:
            if ans_with_brack:
                for can in candidates:
                    start_indexes.append(response.rfind(f"({can})"))
            else:
                for can in candidates:
                    start_indexes.append(response.rfind(f" {can} "))
        else:
            for can in candidates:
                start_indexes.append(response.lower().rfind(index2ans[can].lower()))
        pred_index = candidates[np.argmax(start_indexes)]
    else:
        pred_index = candidates[0]
    return index2ans[pred_index]


def reference_run(root: Path, category: str, responses: dict[int, str]) -> tuple[float, list[dict], int]:
    """eval/main.py:109-147 (construct_prompt errors skip the question) with run_model (lines 18-42) and
    eval_utils.evaluate (lines 132-162): accuracy, per-question records and random draws."""
    rng, samples = CountingRandom(42), []
    for sample in get_pathmmu_data(str(root), category):
        try:
            sample = construct_prompt(sample, {"multi_choice_example_format": "{}\n\n{}\n\nAnswer:"})
        except Exception:  # noqa: BLE001, S112 - main.py:118-122 prints the error and skips the question
            continue
        samples.append(sample)
    out = []
    for sample in samples:
        response = responses[sample["No"]]
        pred_ans = get_multi_choice_prediction(response, sample["all_choices"], sample["index2ans"], rng)
        if response == sample["gt_content"]:
            pred_ans = sample["gt_content"]
        out.append({"No": sample["No"], "gt_content": sample["gt_content"], "pred_ans": pred_ans})
    correct = sum(s["gt_content"].lower() == s["pred_ans"].lower() for s in out)
    return correct / len(out), out, rng.draws


# --- the cases --------------------------------------------------------------------------------

OPTIONS = ["(A) Necrosis", "(B) Fibrosis", "(C) Mitosis", "(D) Inflammation"]
QUESTIONS = [
    {"No": 1, "question": "Which feature?", "img": "a.png", "answer": "D", "options": OPTIONS},
    {"No": 2, "question": "Which stain?", "img": "a.png", "answer": "A",
     "options": ["(A) H&E (routine) stain", "(B) PAS", "(C) Trichrome", "(D) Congo red"]},
    {"No": 3, "question": "No bracket", "img": "a.png", "answer": "A", "options": ["(A) x", "B y"]},
    {"No": 4, "question": "Answer past the options", "img": "a.png", "answer": "E", "options": OPTIONS},
    {"No": 5, "question": "Missing image", "img": "missing.png", "answer": "A", "options": OPTIONS},
    {"No": 6, "question": "Lower-case answer", "img": "a.png", "answer": "b", "options": OPTIONS},
    {"No": 7, "question": "Which process?", "img": "a.png", "answer": "C", "options": OPTIONS},
    {"No": 8, "question": "Which change?", "img": "a.png", "answer": "A", "options": OPTIONS},
]  # fmt: skip
#: Patho-R1-style outputs: a bare answer span (PathMMU's raw parser finds no letter in it), a think trace
#: naming another option, a long trace matching option texts, a plain answer equal to the answer's text.
TEXTS = {
    1: "<answer>D</answer>",
    2: "<think>The routine stain colours nuclei blue.</think><answer>(A) H&E (routine</answer>",
    6: "<think>Not (C) here, the collagen is dense</think><answer>B</answer>",
    7: "<think>Many dividing cells point to mitosis rather than necrosis in this field</think><answer>C</answer>",
    8: "Necrosis",
}


def _write(root: Path) -> Path:
    (root / "images").mkdir(parents=True)
    Image.new("RGB", (8, 8), "pink").save(root / "images" / "a.png")
    (root / "data.json").write_text(json.dumps({"PubMed": {"test_tiny": QUESTIONS}}))
    return root


def _outputs() -> dict[str, Prediction | str]:
    """What a Patho-R1 pipeline returns: Predictions parsed by the entry's parser (No. 8 a plain string)."""
    return {str(no): text if no == 8 else Prediction.from_parsed(text, parse_think_answer(text))
            for no, text in TEXTS.items()}  # fmt: skip


def test_left_out_questions_and_truncated_options_are_pathmmu_s(tmp_path: Path) -> None:
    root = _write(tmp_path)
    got = evaluate(_outputs(), "pathmmu", str(root), out_dir=tmp_path / "out")
    _, reference, _ = reference_run(root, "PubMed_test_tiny", dict(TEXTS))
    assert got["n"] == len(reference) == 5
    assert got["left_out"] == {"image missing": 1, "option without ')'": 1, "answer names no option": 1}
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert [r["gt_content"] for r in record["samples"]] == [r["gt_content"] for r in reference]
    assert record["samples"][1]["gt_content"] == "H&E (routine"  # split(')')[1] keeps PathMMU's truncation


def test_both_readings_match_pathmmu_on_their_texts(tmp_path: Path) -> None:
    """Raw reading = PathMMU on the raw texts; answer reading = PathMMU on the <answer> spans."""
    root = _write(tmp_path)
    got = evaluate(_outputs(), "pathmmu", str(root), out_dir=tmp_path / "out")
    record = json.loads((tmp_path / "out" / "metrics.json").read_text())
    raw_acc, raw, raw_draws = reference_run(root, "PubMed_test_tiny", dict(TEXTS))
    spans = {no: parse_think_answer(t).get("answer") or t for no, t in TEXTS.items()}
    span_acc, span, span_draws = reference_run(root, "PubMed_test_tiny", spans)
    assert got["headline"] == got["response_source"] == "raw" and got["acc"] == raw_acc
    assert got["readings"] == {"raw": {"acc": raw_acc, "random_guesses": raw_draws},
                               "answer": {"acc": span_acc, "random_guesses": span_draws}}  # fmt: skip
    assert [r["pred_ans"] for r in record["samples"]] == [r["pred_ans"] for r in raw]
    assert [r["answer"]["pred_ans"] for r in record["samples"]] == [r["pred_ans"] for r in span]
    # raw: the bare <answer>D</answer> is a coin toss, and so is the one-word "Necrosis" (whose draw main.py's
    # response == gt_content rule then overrides); the answer reading tosses only for "Necrosis"
    assert (raw_draws, span_draws) == (2, 1)
    assert got["answer_spans"] == 4
    flipped = evaluate(_outputs(), "pathmmu", str(root), response_source="answer")
    assert flipped["headline"] == "answer" and flipped["acc"] == span_acc


def test_plain_string_answers_have_one_reading(tmp_path: Path) -> None:
    root = _write(tmp_path)
    got = evaluate({str(no): text for no, text in TEXTS.items()}, "pathmmu", str(root))
    assert "readings" not in got and got["acc"] == reference_run(root, "PubMed_test_tiny", dict(TEXTS))[0]


def test_zoo_eval_reports_both_readings_for_a_think_answer_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _write(tmp_path)
    code = main(["eval", str(CHECKPOINTS_DIR / "gui-grounding-tiny"), "--entry", "patho-r1-3b", "--data", "pathmmu",
                 "--path", str(root), "--limit", "2", "--device", "cpu", "--option", "max_new_tokens=3",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())["metrics"]
    assert metrics["headline"] == "raw" and set(metrics["readings"]) == {"raw", "answer"}
    assert metrics["readings"]["raw"]["random_guesses"] <= metrics["n"] == 2
