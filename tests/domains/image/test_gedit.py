"""GEdit-Bench's statistic on hand-made score tables, against a reference written from GEdit's own scoring code
(stepfun-ai/Step1X-Edit@570eba6:GEdit-Bench/calculate_statistics.py), and the negative-prompt template of the
authors' OmniGen2 GEdit-Bench runs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from domains.image import gedit

GROUPS = ["background_change", "color_alter", "material_alter", "motion_change", "ps_human", "style_change",
          "subject-add", "subject-remove", "subject-replace", "text_change", "tone_transfer"]  # calculate_statistics.py:9-11


def their_analyze_scores(rows_by_group: dict[str, list[dict]], language: str = "en") -> dict[str, float]:
    """``analyze_scores`` (calculate_statistics.py:13-122) with each group's CSV (L31-33) given as its rows:
    the language filter (L51-54), O = sqrt(SC * PQ) per row (L56), group means with ``np.mean`` (L66-78, an empty
    group gives NaN) and the average over all GROUPS (L84-117), for the full set and the intersection rows."""
    out: dict[str, float] = {}
    for subset in ("all", "intersection"):
        means = {"sc": [], "pq": [], "overall": []}
        for group_name in GROUPS:
            sc, pq, overall = [], [], []
            for row in rows_by_group.get(group_name, []):
                if row["instruction_language"] != language or (subset == "intersection" and not row["intersection_exist"]):
                    continue
                sc.append(row["sementics_score"])
                pq.append(row["quality_score"])
                overall.append(math.sqrt(row["sementics_score"] * row["quality_score"]))
            with warnings.catch_warnings():  # np.mean([]) warns, then gives NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                means["sc"].append(np.mean(sc))
                means["pq"].append(np.mean(pq))
                means["overall"].append(np.mean(overall))
        for key, values in means.items():
            out[f"{subset}/{key}"] = float(np.mean(values))
    return out


def _table(rng: np.random.Generator, sizes: dict[str, int]) -> tuple[list[dict], dict[str, list[dict]]]:
    """The same random scores as the zoo's rows and as their CSV rows (0-10 integers, as the judge gives)."""
    rows, theirs = [], {}
    for task, size in sizes.items():
        sc, pq, inter = rng.integers(0, 11, size), rng.integers(0, 11, size), rng.random(size) < 0.5
        inter[0] = True  # every group in the intersection subset too
        theirs[task] = [{"sementics_score": float(a), "quality_score": float(b), "intersection_exist": bool(i),
                         "instruction_language": "en"} for a, b, i in zip(sc, pq, inter)]  # fmt: skip
        rows += [{"task_type": task, "language": "en", "intersection": bool(i), "sc": float(a), "pq": float(b),
                  "overall": math.sqrt(a * b)} for a, b, i in zip(sc, pq, inter)]  # fmt: skip
    return rows, theirs


def test_headline_is_their_mean_of_all_eleven_group_means_and_intersection_too():
    """Groups of unequal size, so the mean of group means differs from the mean over samples (kept beside it)."""
    rows, theirs = _table(np.random.default_rng(0), {task: 4 + 3 * i for i, task in enumerate(GROUPS)})
    reference = their_analyze_scores(theirs)
    summary = gedit.summarise([*rows, {"task_type": "ps_human", "language": "en", "overall": None}])  # a failed judge
    assert summary["n"] == len(rows) + 1 and summary["scored"] == len(rows) and summary["missing_groups"] == []
    for key in ("sc", "pq", "overall"):
        assert summary[key] == pytest.approx(reference[f"all/{key}"])
        assert summary["intersection"][key] == pytest.approx(reference[f"intersection/{key}"])
    per_sample = np.mean([r["overall"] for r in rows])
    assert summary["sample_mean"]["overall"] == pytest.approx(per_sample) and abs(summary["overall"] - per_sample) > 0.01
    # O comes from the row's SC and PQ, as their L56 recomputes it (a multi-pass judge's mean O can differ)
    one_each = [{"task_type": t, "sc": 4.0, "pq": 9.0, "overall": 5.0} for t in GROUPS]
    assert gedit.summarise(one_each)["overall"] == 6.0


def test_a_group_without_scores_leaves_no_average_as_theirs_gives_nan():
    rows, theirs = _table(np.random.default_rng(1), {task: 3 for task in GROUPS if task != "text_change"})
    assert math.isnan(their_analyze_scores(theirs)["all/overall"])
    summary = gedit.summarise(rows)
    assert summary["sc"] is summary["pq"] is summary["overall"] is None and summary["missing_groups"] == ["text_change"]
    assert summary["headline"] == ("no GEdit-Bench average: it needs all 11 task groups and 1 have no scored edit "
                                   "(text_change)")  # fmt: skip
    assert summary["by_task"]["tone_transfer"]["sc"] == pytest.approx(np.mean([r["sc"] for r in rows if r["task_type"] == "tone_transfer"]))
    empty = gedit.summarise([{"task_type": "color_alter", "overall": None}])
    assert empty["scored"] == 0 and empty["overall"] is None and len(empty["missing_groups"]) == 11


def test_languages_are_summarised_apart():
    rows, _ = _table(np.random.default_rng(2), {task: 2 for task in GROUPS})
    cn = [{**r, "language": "cn", "sc": 10.0, "pq": 10.0, "overall": 10.0} for r in rows]
    summary = gedit.summarise(rows + cn)
    assert summary["overall"] is None and summary["by_language"]["cn"]["overall"] == 10.0
    assert summary["by_language"]["en"]["overall"] == pytest.approx(gedit.summarise(rows)["overall"])


def test_judged_edit_is_their_resize_to_the_source():
    """test_gedit_score.py:33-34: ``.convert("RGB").resize(raw.size)`` with PIL's default filter."""
    from PIL import Image

    rng = np.random.default_rng(3)
    edit = Image.fromarray(rng.integers(0, 256, (30, 50, 4), dtype=np.uint8), "RGBA")
    source = Image.new("RGB", (37, 21))
    theirs = edit.convert("RGB").resize((source.size[0], source.size[1]))
    assert np.array_equal(np.asarray(gedit.judged_edit(edit, source)), np.asarray(theirs))
    assert not np.array_equal(np.asarray(gedit.judged_edit(edit, source)),
                              np.asarray(edit.convert("RGB").resize(source.size, Image.Resampling.BILINEAR)))  # fmt: skip


class RecordingTokenizer:
    """Records the chat it is asked to render and renders it in Qwen's ``<|im_start|>`` layout."""

    def __init__(self):
        self.calls = []

    def apply_chat_template(self, messages, *, tokenize, add_generation_prompt):
        self.calls.append((messages, tokenize, add_generation_prompt))
        return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def test_omnigen2_negative_prompt_is_encoded_as_the_authors_flag_does():
    """VectorSpaceLab/EditScore@6e0f1b9:examples/OmniGen2-RL/evaluation/GEdit-Bench/inference.py:296-310."""
    tokenizer = RecordingTokenizer()

    class Pipeline:  # the two members of OmniGen2Pipeline the authors' flag uses
        processor = type("Processor", (), {"tokenizer": tokenizer})()

        def _get_qwen2_prompt_embeds(self, *, prompt, device, max_sequence_length):
            self.encoded = (prompt, device, max_sequence_length)
            return "embeds", "mask"

    pipe = Pipeline()
    kwargs = gedit.omnigen2_negative_prompt_embeds(pipe, "cuda:0")
    assert kwargs == {"negative_prompt_embeds": "embeds", "negative_prompt_attention_mask": "mask"}
    messages, tokenize, generation = tokenizer.calls[0]
    assert messages == [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": ""}]
    assert (tokenize, generation) == (False, False)
    assert pipe.encoded == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|im_end|>\n",
                            "cuda:0", 1024)  # fmt: skip
