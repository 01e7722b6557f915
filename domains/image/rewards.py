"""The image domain's rewards, registered by name (``rewards.get("pickscore")``).

Image-only rewards the diffusion engine already had (``jpeg-compressibility``, ``jpeg-incompressibility``:
DDPO's kB at JPEG quality 95, :mod:`rewards.image_stats`) are built-ins and are not registered again.
Model-backed rewards load their weights on first call, so registering them costs nothing.
"""

from __future__ import annotations

from domains.image.editscore_reward import EditScoreReward
from domains.image.geneval_models import GenEvalReward, GenEvalScore
from domains.image.ocr import OcrReward
from domains.image.preference import AestheticScore, HPSv2
from domains.image.scorers import ClipScore, PickScore
from rewards.base import register

for _reward in (PickScore(), ClipScore(), OcrReward(), EditScoreReward(), GenEvalReward(), GenEvalScore(),
                AestheticScore(), HPSv2()):
    register(_reward.name, _reward)
