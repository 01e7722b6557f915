"""ChartMimic's low-level chart-to-code metrics: text, layout, type and colour F1 (arXiv 2406.09961).

The scoring rules follow ChartMimic/ChartMimic ``chart2code/utils/evaluator/`` at 7ee16fba:

* text, layout, type: multiset matching; ``precision = matched / len(generated)``,
  ``recall = matched / len(reference)``, F1 of the two; 0 when either list is empty
  (``text_evaluator.py``, ``layout_evaluator.py``);
* colour: colours grouped by the element that drew them; within a group, the one-to-one pairing
  that maximises ``sum(max(0, 1 - deltaE_CIE76(lab1, lab2) / 100))`` (ChartMimic enumerates
  permutations; the Hungarian algorithm finds the same maximum in polynomial time);
  ``precision = total / len(generated)``, ``recall = total / len(reference)`` (``color_evaluator.py``).

What the lists hold comes from the sandboxed ``matplotlib-facts`` kind
(:mod:`rewards.rendering.chart_facts`), which reads the finished figure instead of tracing
plotting calls as ChartMimic does; that difference is stated there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence

import numpy as np


def f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def multiset_f1(generated: Sequence[Hashable], reference: Sequence[Hashable]) -> dict[str, float]:
    """Precision, recall and F1 of a multiset match (each reference item matches one generated item)."""
    if not generated or not reference:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    matched = sum((Counter(generated) & Counter(reference)).values())
    precision, recall = matched / len(generated), matched / len(reference)
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall)}


def hex_to_lab(color: str) -> np.ndarray:
    """CIE L*a*b* (D65) of ``#rrggbb``: sRGB companding, the sRGB->XYZ matrix, then the CIE formulas
    (the conversion scikit-image's ``rgb2lab`` performs)."""
    rgb = np.array([int(color[i:i + 2], 16) / 255.0 for i in (1, 3, 5)])
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    matrix = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169],
                       [0.019334, 0.119193, 0.950227]])
    xyz = matrix @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16.0 / 116.0)
    return np.array([116.0 * f[1] - 16.0, 500.0 * (f[0] - f[1]), 200.0 * (f[1] - f[2])])


def color_similarity(a: str, b: str) -> float:
    """``max(0, 1 - deltaE_CIE76 / 100)`` between two hex colours."""
    return float(max(0.0, 1.0 - np.linalg.norm(hex_to_lab(a) - hex_to_lab(b)) / 100.0))


def _best_pairing(generated: Sequence[str], reference: Sequence[str]) -> float:
    if not generated or not reference:
        return 0.0
    from scipy.optimize import linear_sum_assignment

    sim = np.array([[color_similarity(g, r) for r in reference] for g in generated])
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return float(sim[rows, cols].sum())


def color_f1(generated: Mapping[str, Sequence[str]], reference: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Colour precision/recall/F1 over element groups (``{"bar": ["#1f77b4", ...], "line": [...]}``)."""
    n_gen = sum(len(v) for v in generated.values())
    n_ref = sum(len(v) for v in reference.values())
    total = sum(_best_pairing(generated.get(k, ()), reference.get(k, ())) for k in set(generated) | set(reference))
    precision = total / n_gen if n_gen else 0.0
    recall = total / n_ref if n_ref else 0.0
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall)}


def low_level_scores(generated: Mapping, reference: Mapping) -> dict[str, float]:
    """ChartMimic's four F1s from two ``matplotlib-facts`` dicts (``texts``, ``layout``, ``types``, ``colors``)."""
    layout = lambda facts: [tuple(cell) for cell in facts["layout"]]
    return {
        "text": multiset_f1(generated["texts"], reference["texts"])["f1"],
        "layout": multiset_f1(layout(generated), layout(reference))["f1"],
        "type": multiset_f1(generated["types"], reference["types"])["f1"],
        "color": color_f1(generated["colors"], reference["colors"])["f1"],
    }
