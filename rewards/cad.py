"""CAD code reward in the style of CAD-RL (arXiv 2508.10118): does the code execute, and how close is its solid?

CAD-RL names three rewards (executability, geometric accuracy, external evaluation) without
public formulas. The zoo's version, every weight its own:
``score = 0.1 * executes + 0.9 * IoU``, with IoU the exact volume IoU of the answer's solid and
the reference's (OCC booleans, in the sandbox: :mod:`rewards.rendering.cad`) and the normalised
Chamfer distance logged as a component. No code block scores 0; code that raises or builds no
valid solid, times out or crashes scores 0 (``executes`` = 0: the job's own failure is the answer's,
:mod:`rewards.base`); only a failure outside the job (a lost worker) is ``None`` (masked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rewards.base import RewardResult, check_lengths, require, target_of, text_of
from rewards.code_render import extract_code

_FACTS_SIZE = (32, 32)  # 3 KB of JSON room


class CadGeometryReward:
    """``exec_weight * executes + (1 - exec_weight) * IoU`` against ``target["code"]`` (CadQuery).

    Components: ``executes``, ``iou``, ``chamfer`` (NaN when the code did not build a solid).
    """

    component_names = ("executes", "iou", "chamfer")

    def __init__(self, exec_weight: float = 0.1, timeout: float = 20.0, name: str = "cad-geometry") -> None:
        if not 0.0 <= exec_weight <= 1.0:
            raise ValueError(f"exec_weight must be in [0, 1], got {exec_weight}")
        self.exec_weight, self.timeout, self.name = float(exec_weight), timeout, name

    def with_options(self, **kwargs: Any) -> CadGeometryReward:
        return type(self)(**{"exec_weight": self.exec_weight, "timeout": self.timeout, "name": self.name, **kwargs})

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        from rewards.rendering import render_many
        from rewards.rendering.cad import cad_source
        from rewards.rendering.chart_facts import decode_facts

        check_lengths(predictions, samples, self.name)
        references = [require(target_of(s), "code", self.name) for s in samples]
        codes = [getattr(p, "code", None) or extract_code(text_of(p), "cadquery") for p in predictions]
        todo = [i for i, c in enumerate(codes) if c]
        jobs = [cad_source(codes[i], references[i]) for i in todo]
        done = dict(zip(todo, render_many("cadquery-geometry", jobs, size=_FACTS_SIZE, timeout=self.timeout),
                        strict=True))
        failed = {"executes": 0.0, "iou": 0.0, "chamfer": math.nan}
        out = []
        for i in range(len(predictions)):
            result = done.get(i)
            if result is None:
                out.append(RewardResult(0.0, failed, "no ```python``` CadQuery block in the answer"))
            elif result.infra_failure:
                out.append(RewardResult(None, dict.fromkeys(self.component_names, math.nan),
                                        f"{result.status}: {result.error}"))
            elif not result.ok:
                out.append(RewardResult(0.0, failed, f"the code did not build a solid: {result.error}"))
            else:
                facts = decode_facts(result.image)
                score = self.exec_weight + (1.0 - self.exec_weight) * facts["iou"]
                out.append(RewardResult(score, {"executes": 1.0, "iou": facts["iou"], "chamfer": facts["chamfer"]}))
        return out

    def __repr__(self) -> str:
        return f"CadGeometryReward(exec_weight={self.exec_weight}, timeout={self.timeout})"
