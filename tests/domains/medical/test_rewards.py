"""Medical task rewards: the answers U2-Bench / PathMMU would score right get reward, malformed ones 0 + reason."""

from __future__ import annotations

import pytest

import domains.medical.rewards  # noqa: F401  (registers the rewards)
from rewards.base import REWARDS, RewardResult
from zoo.data import Sample

NAMES = ("patho-mcq", "patho-vqa", "us-classification", "us-localization", "us-measurement", "us-report")
TARGETS = {
    "patho-mcq": {"answer": "C", "options": {"A": "Necrosis", "B": "Fibrosis", "C": "Mitosis"}},
    "patho-vqa": {"answer": ["yes", "y"]},
    "us-classification": {"label": "['Benign']"},
    "us-localization": {"bbox": [10, 60, 30, 90], "image_size": [100, 100]},
    "us-measurement": {"value": 42.5, "dataset": "18"},
    "us-report": {"report": "an oval lesion with smooth margins"},
}


def score(name: str, text: str, target: dict | None = None) -> RewardResult:
    sample = Sample("s", target=TARGETS[name] if target is None else target)
    return REWARDS.get(name)([text], [sample])[0]


@pytest.mark.parametrize("name", NAMES)
def test_every_reward_turns_garbage_into_a_reasoned_zero(name: str) -> None:
    # a report with no word in common is merely bad (0 without error); an empty one is unreadable
    result = score(name, "<answer> </answer>" if name == "us-report" else "<think>unsure")
    assert result.score == 0.0
    assert result.error  # the reason is kept for the logs


def test_patho_mcq_letter_or_option_text_plus_format() -> None:
    assert score("patho-mcq", "<think>many mitoses</think><answer>C</answer>").score == 2.0
    assert score("patho-mcq", "<think>x</think><answer>Mitosis</answer>").score == 2.0
    by_text = score("patho-mcq", "The answer is C")
    assert by_text.score == 1.0 and by_text.components["format"] == 0.0
    wrong = score("patho-mcq", "<think>x</think><answer>A. Necrosis</answer>")
    assert wrong.score == 1.0 and wrong.components["accuracy"] == 0.0


def test_patho_vqa_normalised_match() -> None:
    assert score("patho-vqa", "<think>x</think><answer>Yes.</answer>").score == 2.0
    assert score("patho-vqa", "<think>x</think><answer>no</answer>").score == 1.0


def test_us_classification_uses_u2bench_normalisation() -> None:
    assert score("us-classification", "<answer> benign. </answer>").score == 1.0
    assert score("us-classification", "malignant").score == 0.0


@pytest.mark.parametrize(
    ("target", "answer", "expected"),
    [
        ({"bbox": [10, 60, 30, 90], "image_size": [100, 100]}, "Lower Left", 1.0),  # centre (0.2, 0.75)
        ({"bbox": [40, 40, 60, 60], "image_size": [100, 100]}, "center", 1.0),
        ({"bbox": [40, 40, 60, 60], "image_size": [100, 100]}, "middle center", 0.0),  # U2-Bench says "center"
        ({"bbox": None, "image_size": [100, 100]}, "not visible", 1.0),
        ({"center": [0.45, 0.55]}, "lower center", 1.0),
        ({"position": "upper right"}, "<think>top right</think><answer>upper right</answer>", 1.0),
    ],
)
def test_us_localization_position_label(target: dict, answer: str, expected: float) -> None:
    assert score("us-localization", answer, target).score == expected


def test_us_localization_refuses_free_text() -> None:
    result = score("us-localization", "the lesion is near the top")
    assert result.score == 0.0 and "not one of the U2-Bench locations" in result.error


def test_us_measurement_scaled_error() -> None:
    result = score("us-measurement", "<answer>49.0</answer>")  # |42.5 - 49| / 65 = 0.1
    assert result.score == pytest.approx(0.9)
    assert result.components["within_tolerance"] == 1.0
    assert score("us-measurement", "42.5 %").score == 1.0
    far = score("us-measurement", "500", {"value": 10.0, "range": [0, 100]})
    assert far.score == 0.0  # clipped at 0


def test_us_measurement_non_numeric_is_zero_with_reason() -> None:
    result = score("us-measurement", "<think>hard to say</think><answer>null</answer>")
    assert result.score == 0.0 and result.error


def test_us_measurement_unknown_dataset_is_a_data_error() -> None:
    with pytest.raises(ValueError, match="no U2-Bench min-max range"):
        score("us-measurement", "3", {"value": 1.0, "dataset": "99"})


def test_us_report_rouge_l() -> None:
    result = score("us-report", "<answer>an oval lesion with smooth margins</answer>")
    assert result.score == pytest.approx(1.0)
    partial = score("us-report", "an oval lesion")
    assert 0.0 < partial.score < 1.0 and 0.0 <= partial.components["bleu4"] <= 1.0


def test_rewards_plug_into_trl() -> None:
    from rewards.adapters import to_trl

    func = to_trl("us-localization")
    import json

    got = func(prompts=["p"], completions=["lower left"], target=[json.dumps(TARGETS["us-localization"])])
    assert got == [1.0]


def test_verl_hook_sees_the_same_component_keys_for_every_ultrasound_task() -> None:
    from domains.medical.data import synthetic_ultrasound
    from rewards.verl_hook import compute_score

    keys = set()
    for sample in synthetic_ultrasound(8, task="mixed", seed=0):
        out = compute_score("us-answer", "<answer>center</answer>", dict(sample.target))
        keys.add(tuple(sorted(out)))
    assert len(keys) == 1
    assert compute_score("us-localization", "<answer>center</answer>", {"position": "center"})["score"] == 1.0
