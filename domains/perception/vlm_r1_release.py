"""VLM-R1's REC rewards as they were when ``omlab/Qwen2.5VL-3B-VLM-R1-REC-500steps`` was released.

The checkpoint was announced on 2025-02-21 (om-ai-lab/VLM-R1@ec920b2:README.md:12). The REC rewards of that code
differ from the later ones the ``vlm-r1-rec-iou``/``vlm-r1-rec-format`` rewards follow (the continuous IoU in the
original frame arrived in fd242e0, 2025-03-13):

* accuracy (om-ai-lab/VLM-R1@ec920b2:src/open-r1-multimodal/src/open_r1/grpo_rec.py:227-271): 1.0 when the IoU of
  the first box in the first ``<answer>`` with the solution box exceeds 0.5, else 0.0. The ``<answer>`` regex has
  no DOTALL (an answer spanning lines is not found); the box regex accepts signs and decimals but the values go
  through ``int()``, so a decimal raises and scores 0 while a negative integer is read; the box is compared as
  written, in the frame of the image the model saw, with the solution (no rescaling); a zero union raises and
  scores 0 (the ``try`` around it).
* format (grpo_rec.py:274-280): ``re.fullmatch`` of the same pattern as today's ``vlm-r1-rec-format``, with
  ``re.DOTALL``: the completion must be the ``<think>`` block and the ``<answer>`` and nothing else.

Both are registered under ``vlm-r1-rec-release-*`` and summed as ``vlm-r1-rec-release`` (the script's default
``accuracy format``); ``domains/perception/recipes/vlm-r1-rec-release.yaml`` trains with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domains.perception.boxes import pixel_iou
from rewards.base import RewardResult, SampleReward, WeightedSum, register, require, text_of

#: grpo_rec.py@ec920b2:246-247, as written (no DOTALL on the answer).
_ANSWER = re.compile(r"<answer>(.*?)</answer>")
_BOX = re.compile(r"\[(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*),\s*(\s*-?\d*\.?\d+\s*)\]")
#: grpo_rec.py@ec920b2:277.
_FORMAT = re.compile(r"<think>.*?</think>\s*<answer>.*?\{.*\[\d+,\s*\d+,\s*\d+,\s*\d+\].*\}.*?</answer>", re.DOTALL)


class ReleaseRecAccuracy(SampleReward):
    """1.0 when the answer's box overlaps the solution at IoU > 0.5 (module docstring), else 0 with the reason."""

    component_names = ("hit",)
    name = "vlm-r1-rec-release-iou"

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        truth = [float(v) for v in require(target, "bbox", self.name)]
        answer = _ANSWER.search(text_of(prediction))
        found = _BOX.search(answer.group(1).strip()) if answer else None
        if found is None:
            why = "no <answer>...</answer> on one line" if answer is None else "no [x1, y1, x2, y2] in the answer"
            return RewardResult(0.0, {"hit": 0.0}, why)
        try:
            box = [int(v) for v in found.groups()]  # int(" 3.5") raises, as upstream
            overlap = pixel_iou(box, truth)
        except (ValueError, ZeroDivisionError) as err:
            return RewardResult(0.0, {"hit": 0.0}, f"upstream's try/except scores 0: {err}")
        hit = float(overlap > 0.5)
        return RewardResult(hit, {"hit": hit}, None if hit else f"IoU {overlap:.3f} <= 0.5")


class ReleaseRecFormat(SampleReward):
    """1.0 when the whole completion is ``<think>..</think> <answer>..{..[int, int, int, int]..}..</answer>``."""

    component_names = ("format",)
    name = "vlm-r1-rec-release-format"

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        ok = float(_FORMAT.fullmatch(text_of(prediction)) is not None)
        return RewardResult(ok, {"format": ok}, None if ok else "not <think>..</think> then an <answer> with a JSON box")


RELEASE_ACCURACY, RELEASE_FORMAT = ReleaseRecAccuracy(), ReleaseRecFormat()
for _reward in (RELEASE_ACCURACY, RELEASE_FORMAT,
                WeightedSum([(RELEASE_ACCURACY, 1.0), (RELEASE_FORMAT, 1.0)], name="vlm-r1-rec-release")):  # fmt: skip
    register(_reward.name, _reward)
