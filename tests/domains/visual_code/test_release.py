"""The statistics ``svg-scenes-tiny``'s record reports: standard errors and paired per-scene differences."""

import numpy as np
import pytest

from domains.visual_code import release


def test_summarise_reports_means_and_the_standard_error_of_the_reward():
    rng = np.random.default_rng(0)
    reward = rng.uniform(0, 1, 50).tolist()
    scores = {"reward": reward, "rlrf": rng.uniform(-1, 1, 50).tolist(), "renders": [1.0] * 49 + [0.0]}
    out = release.summarise(scores)
    assert out["reward"] == pytest.approx(np.mean(reward))
    assert out["rlrf"] == pytest.approx(np.mean(scores["rlrf"]))
    assert out["renders"] == pytest.approx(0.98)
    assert out["reward_se"] == pytest.approx(np.std(reward, ddof=1) / np.sqrt(50))


def test_paired_differences_compare_each_seed_on_the_same_scenes():
    rng = np.random.default_rng(1)
    sft = rng.uniform(0, 1, 40)
    grpo0, grpo1, control0 = sft + rng.normal(0.1, 0.05, 40), sft + rng.normal(0, 0.2, 40), sft + 0.02
    per_scene = {"sft": sft.tolist(), "grpo-s0": grpo0.tolist(), "grpo-s1": grpo1.tolist(),
                 "control-s0": control0.tolist()}
    out = release.paired_differences(per_scene, [0, 1])
    assert set(out) == {"grpo-s0 - sft", "grpo-s0 - control", "grpo-s1 - sft"}  # seed 1 has no control
    diff = grpo0 - control0
    assert out["grpo-s0 - control"]["mean"] == pytest.approx(diff.mean())
    assert out["grpo-s0 - control"]["se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(40))
    assert out["grpo-s1 - sft"]["mean"] == pytest.approx((grpo1 - sft).mean())
