"""Default instances of the primitives, registered by name so recipes and verl's
``data_source`` can name them (``rewards.get("multiple-choice")``). Parameterised variants are
built by constructing the class (``NumericMatch(rel_tol=0.05)``) and registering it under a new name.
"""

from __future__ import annotations

from rewards.action import ActionMatch
from rewards.base import register
from rewards.choice import MultipleChoice
from rewards.format import CodeFenceFormat, JsonFormat, TagFormat
from rewards.grounding import BoxIoU, PointInBox
from rewards.image_similarity import RenderedImageSimilarity
from rewards.image_stats import Brightness, Colourfulness, JpegSize
from rewards.numeric import NumericMatch
from rewards.prompt_colour import PromptColour
from rewards.text import EditSimilarity, ExactMatch

BUILTIN = [
    TagFormat(), JsonFormat(), CodeFenceFormat(),
    MultipleChoice(), NumericMatch(), NumericMatch(rel_tol=0.05, name="numeric-relaxed"),
    ExactMatch(), EditSimilarity(), EditSimilarity(metric="cer", name="ocr-cer"),
    BoxIoU(), BoxIoU(threshold=0.5, name="box-iou-0.5"), PointInBox(), ActionMatch(),
    RenderedImageSimilarity("svg", "ssim"), RenderedImageSimilarity("matplotlib", "ssim"),
    Brightness(), Colourfulness(), JpegSize(-1), JpegSize(+1), PromptColour(),
]
for _reward in BUILTIN:
    register(_reward.name, _reward)
