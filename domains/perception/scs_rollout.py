"""Self-Consistency Sampling's rollout (SCS, arXiv 2511.10648): truncate each trajectory, resample its tail.

Its reward is :mod:`.scs` (``scs-mcq``). Source: GenuineWWD/SCS @ 7014027d
``openrlhf/trainer/ppo_utils/experience_maker.py`` (``_generate_vllm``: every response is cut after
``int(len(response_tokens) * cut_keep_rate)`` tokens and continued ``n_cuts_per_prompt`` times from
the prompt plus that prefix, with the run's sampling settings) and
``openrlhf/trainer/ppo_utils/data_processor.py`` (``add_image_noise``, ``image_augment_from_PIL``:
Gaussian noise of standard deviation ``level% * 255``, ``level`` uniform in 1..40, clipped to
uint8, a fresh level per resample).

Two upstream behaviours are *not* reproduced, because they contradict the paper's method:
``image_augment_from_PIL`` returns a list of images unchanged (the noisy copy is bound to the loop
variable), so the Qwen runs resampled on clean images; and ``_generate_vllm`` attaches the resamples
of the *last* response of each micro-batch (4 rollouts) to the whole micro-batch. Here each rollout's
own resamples score it, each on its own noisy image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from zoo.engines.vlm.plugins import Rollout, RolloutPlugin, register_plugin


def add_image_noise(image: Image.Image, level: int, rng: np.random.Generator) -> Image.Image:
    """SCS's ``add_image_noise`` (Gaussian): ``N(0, (level / 100 * 255)^2)`` per channel, clipped, truncated to uint8."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
    noisy = pixels + rng.normal(0.0, level * 255.0 / 100, size=pixels.shape)
    return Image.fromarray(np.clip(noisy, 0, 255.0).astype(np.uint8))


@register_plugin
class ScsResampling(RolloutPlugin):
    """SCS's truncate-and-resample rollout: fills ``meta["scs_resampled"]`` for the ``scs-mcq`` reward.

    For every rollout, the first ``int(len(tokens) * cut_keep_rate)`` completion tokens are kept and
    the policy continues them ``n_cuts`` times, each from the same prompt with a freshly noised
    image, with the run's sampling settings and its whole ``max_completion_length`` budget (upstream
    reuses the rollout's sampling parameters, ``max_tokens`` included); the continuations' texts (the resampled tails, not the kept prefix: upstream decodes only
    the new tokens) become ``meta["scs_resampled"]``.

    Args (upstream flags in brackets; defaults are ``train_ppo_ray.py``'s):
        n_cuts: resamples per rollout [``--n_cuts_per_prompt``, 4].
        cut_keep_rate: share of the rollout's tokens kept [``--cut_keep_rate``, 0.8].
        image_noise: perturb the image of each resample [``--image_aug``, on in every SCS script].
        noise_levels: inclusive range of the noise level in percent of 255 (upstream ``randint(1, 40)``).
        seed: seed of the noise generator.
    """

    name = "scs"

    def __init__(self, n_cuts: int = 4, cut_keep_rate: float = 0.8, image_noise: bool = True,
                 noise_levels: Sequence[int] = (1, 40), seed: int = 0) -> None:  # fmt: skip
        if n_cuts < 1:
            raise ValueError(f"n_cuts must be >= 1, got {n_cuts}")
        if not 0.0 <= cut_keep_rate <= 1.0:
            raise ValueError(f"cut_keep_rate must be in [0, 1], got {cut_keep_rate}")
        low, high = (int(v) for v in noise_levels)
        if not 0 <= low <= high:
            raise ValueError(f"noise_levels must be [low, high] with 0 <= low <= high, got {list(noise_levels)}")
        self.n_cuts, self.cut_keep_rate, self.image_noise = int(n_cuts), float(cut_keep_rate), image_noise
        self.noise_levels, self._rng = (low, high), np.random.default_rng(seed)

    def kept_prefix(self, completion_ids: Sequence[int]) -> list[int]:
        """The tokens a resample continues from: ``completion_ids[: int(len * cut_keep_rate)]``."""
        return list(completion_ids[: int(len(completion_ids) * self.cut_keep_rate)])

    def perturb(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A copy of ``messages`` whose image parts carry noisy copies (one level per request)."""
        if not self.image_noise:
            return messages
        level = int(self._rng.integers(self.noise_levels[0], self.noise_levels[1] + 1))

        def part(p: Any) -> Any:
            if isinstance(p, dict) and p.get("type") == "image" and isinstance(p.get("image"), Image.Image):
                return {**p, "image": add_image_noise(p["image"], level, self._rng)}
            return p

        return [{**m, "content": [part(p) for p in m["content"]]} if isinstance(m.get("content"), list) else m
                for m in messages]  # fmt: skip

    def before_rewards(self, rollout: Rollout) -> None:
        prompts, prefixes = [], []
        for messages, completion in zip(rollout.prompts, rollout.completion_ids, strict=True):
            for _ in range(self.n_cuts):
                prompts.append(self.perturb(messages))
                prefixes.append(self.kept_prefix(completion))
        tails = rollout.continue_generation(prompts, prefixes)
        for i, meta in enumerate(rollout.metas):
            meta["scs_resampled"] = [rollout.decode(t) for t in tails[i * self.n_cuts : (i + 1) * self.n_cuts]]
