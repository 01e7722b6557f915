"""Stat trackers, per-step clipped loss and mean-KL against the authors' numbers (``golden/diffusion.json``).

Trackers: kvablack/ddpo-pytorch @ 1958463 ``ddpo_pytorch/stat_tracking.py`` and yifan123/flow_grpo @ ac4c86e
``flow_grpo/stat_tracking.py``, run unchanged. Loss and KL: flow_grpo ``scripts/train_sd3.py`` lines 881-897,
transcribed in ``golden/make_diffusion_golden.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.rl._golden import load, t
from zoo.rl.diffusion_loss import PerPromptStatTracker, mean_kl, step_policy_loss

GOLDEN = load("diffusion")


@pytest.mark.parametrize(
    "case", GOLDEN["trackers"]["ddpo"], ids=lambda c: f"buf{c['buffer_size']}-min{c['min_count']}-{c['rewards']}"
)
def test_ddpo_tracker(case: dict) -> None:
    tracker = PerPromptStatTracker(case["buffer_size"], case["min_count"], eps=1e-6)
    for update in case["updates"]:
        got = tracker.update(update["prompts"], update["rewards"])
        np.testing.assert_allclose(got, update["advantages_float_rewards"], rtol=1e-12, atol=1e-12)
        if case["rewards"] == "int":  # the authors' tracker truncates advantages of integer rewards; we do not
            np.testing.assert_array_equal(np.trunc(got), update["advantages"])


@pytest.mark.parametrize(
    "case", GOLDEN["trackers"]["flow_grpo"], ids=lambda c: f"global{c['global_std']}-{c['rewards']}"
)
def test_flow_grpo_tracker(case: dict) -> None:
    tracker = PerPromptStatTracker(global_std=case["global_std"], eps=1e-4)
    for update in case["updates"]:
        np.testing.assert_allclose(tracker.update(update["prompts"], update["rewards"]), update["advantages"],
                                   rtol=1e-12, atol=1e-12)  # fmt: skip
        tracker.clear()


def test_tracker_state_round_trip_and_bad_input() -> None:
    tracker = PerPromptStatTracker(4, 2, eps=1e-6)
    tracker.update(["a", "a", "b"], [1.0, 2.0, 3.0])
    clone = PerPromptStatTracker(4, 2, eps=1e-6)
    clone.load_state_dict(tracker.state_dict())
    np.testing.assert_array_equal(clone.update(["a", "b"], [0.5, 4.0]), tracker.update(["a", "b"], [0.5, 4.0]))
    with pytest.raises(ValueError, match="one reward per prompt"):
        tracker.update(["a", "b"], [1.0])


@pytest.mark.parametrize("case", GOLDEN["loss"], ids=lambda c: f"clip{c['clip_range']}-beta{c['beta']}")
def test_step_loss_and_kl(case: dict) -> None:
    loss, stats = step_policy_loss(t(case["log_prob"]), t(case["old_log_prob"]), t(case["advantages"]),
                                   clip_range=case["clip_range"], adv_clip_max=case["adv_clip_max"])  # fmt: skip
    kl = mean_kl(t(case["mean"]), t(case["mean_ref"]), t(case["std_dev_t"]))
    torch.testing.assert_close(loss, t(case["policy_loss"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(kl, t(case["kl_loss"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(loss + case["beta"] * kl, t(case["loss"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(stats["clipfrac"], t(case["clipfrac"]))


def test_step_loss_over_many_steps_is_the_mean_of_per_step_losses() -> None:
    case = GOLDEN["loss"][2]
    logp, old, adv = t(case["log_prob"]), t(case["old_log_prob"]), t(case["advantages"])
    two = step_policy_loss(
        torch.stack([logp, old + 0.1], 1), torch.stack([old, old], 1), adv, clip_range=0.2, adv_clip_max=2.0
    )[0]
    each = [step_policy_loss(a, old, adv, clip_range=0.2, adv_clip_max=2.0)[0] for a in (logp, old + 0.1)]
    torch.testing.assert_close(two, (each[0] + each[1]) / 2)
