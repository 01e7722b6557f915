"""Task rewards of the visual-code domain (the maths lives in ``rewards/``; this file names and configures).

===================== ==========================================================================
``msrl-chart``        VinciCoder's reward on matplotlib code: 0.9 DINOv2-tiled visual + 0.1 format
``svg-dino``          the same on SVG (skia renderer, 336 px as VinciCoder renders SVG)
``rlrf-svg``          RLRF-style: z-normalised L2 + Canny-edge L2 + perceptual + length; failure -1
``cad-geometry``      CAD-RL style (zoo's weights): 0.1 executes + 0.9 volume IoU; Chamfer logged
``visual-programmability`` answer + 0.5 decision + 0.5 data accuracy (the zoo's own, not the paper's Eq. 3)
``svg-shape-iou``     zoo's own: IoU of the drawn pixels (colours agreeing) of the SVG's render and the picture
===================== ==========================================================================

MSRL's own reward (five rule-based textual checks, then a VLM judge) is unpublished (research
§A1); ``msrl-chart`` is the same group's released VinciCoder reward. The default encoder is
``facebook/dinov2-large`` from the local Hugging Face cache; recipes pass
``kwargs: {encoder: {model: tiny, tile: 28}}`` for CPU smoke runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from domains.visual_code.prompts import extract_fenced
from rewards.base import RewardResult, SampleReward, register, require, text_of
from rewards.cad import CadGeometryReward
from rewards.code_render import RenderedCodeReward
from rewards.image_similarity import RenderedImageSimilarity
from rewards.parsing import ParseError, answer_span, extract_tag, parse_number
from rewards.rlrf import RlrfSvgReward

register("msrl-chart", RenderedCodeReward("matplotlib", name="msrl-chart"))
register("svg-dino", RenderedCodeReward("svg-skia", name="svg-dino"))
register("cad-geometry", CadGeometryReward())
register("rlrf-svg", RlrfSvgReward("svg-skia", encoder={"model": "facebook/dinov2-large"}))
register("svg-shape-iou", RenderedImageSimilarity("svg-skia", "foreground-iou", name="svg-shape-iou"))


class VisualProgrammability(SampleReward):
    """A reward in the spirit of Visual Programmability (arXiv 2509.09286), of the zoo's own design.

    The paper's reward (Eq. 3, §5.1, App. C) is ``0.8 acc + 0.3 decision + 0.15 data + 0.05 format``
    over answers that open with ``<CODE>`` or ``<DIRECT>`` and end in ``\\boxed{}``, its data term
    scoring the ``chart_data`` DataFrame the code builds against a ground-truth CSV; the partial
    decision value is unpublished and the code (github.com/Aphelios-Tang/Code-as-Thought) was not
    readable here. This reward keeps the three ideas with the zoo's tags and weights:

    The answer names its pathway in ``<mode>code</mode>`` or ``<mode>direct</mode>``, puts the
    extracted data in a ```` ```python ```` block when it chose code, and ends with
    ``<answer>...</answer>``. Score (zoo's weights) = ``answer + 0.5 * decision + 0.5 * data``:

    * ``answer``: the answer equals ``target["answer"]`` (numbers within 5 % relative);
    * ``decision``: the chosen mode equals ``target["best_mode"]`` (omitted, so 0, without it);
    * ``data``: for the code pathway, the share of ``target["data"]`` values found (within 5 %)
      among the numbers of the code block, which is what grounds the extracted data.
    """

    name = "visual-programmability"
    component_names = ("answer", "decision", "data")

    def score_one(self, prediction: Any, target: Mapping[str, Any]) -> RewardResult:
        text = text_of(prediction)
        expected = require(target, "answer", self.name)
        mode = (extract_tag(text, "mode", required=False) or "").strip().lower()
        if mode not in ("code", "direct"):
            raise ParseError("missing <mode>code</mode> or <mode>direct</mode>")
        answer = answer_span(text)
        parts = {"answer": float(_same_answer(answer, expected)),
                 "decision": float(mode == target.get("best_mode")), "data": 0.0}
        if mode == "code" and target.get("data"):
            code = extract_fenced(text, "python") or ""
            found = [float(m) for m in re.findall(r"-?\d+(?:\.\d+)?", code)]
            hits = sum(any(math.isclose(v, f, rel_tol=0.05) for f in found) for v in map(float, target["data"]))
            parts["data"] = hits / len(target["data"])
        return RewardResult(parts["answer"] + 0.5 * parts["decision"] + 0.5 * parts["data"], parts)


def _same_answer(answer: str, expected: Any) -> bool:
    try:
        return math.isclose(parse_number(answer), float(expected), rel_tol=0.05)
    except (ParseError, TypeError, ValueError):
        return answer.strip().lower().rstrip(".") == str(expected).strip().lower().rstrip(".")


register("visual-programmability", VisualProgrammability())
