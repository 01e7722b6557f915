"""U2-Bench's metric rules as pure functions, shared by the rewards and the evaluation.

Source of every rule: dolphin-sound/u2-bench-evalkit (commit 782350bc),
``vlmeval/eval_func/cla_eval.py``, ``seg_eval_v1.1.py`` and ``measure_eval_v1.2.py``.
They are re-implemented here (no sklearn dependency) and the tests check them against
numbers from scikit-learn 1.9.1 / the evalkit's own formulas.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

#: U2-Bench's position grid: a normalised coordinate below ``LOW`` is upper/left, below
#: ``HIGH`` middle/center, otherwise lower/right (``get_bounding_box_location_v1``).
POSITION_LOW = 0.45
POSITION_HIGH = 0.55
NOT_VISIBLE = "not visible"
#: The ten answers U2-Bench's localisation prompts allow.
POSITION_LABELS = (
    "upper left",
    "upper center",
    "upper right",
    "middle left",
    "center",
    "middle right",
    "lower left",
    "lower center",
    "lower right",
    NOT_VISIBLE,
)

#: Per-dataset min-max range used to scale measurements before computing errors
#: (``MIN_MAX_DICT`` of measure_eval_v1.2.py): key = U2-Bench dataset id.
MEASUREMENT_RANGES: dict[str, tuple[float, float]] = {
    "18": (10.0, 75.0),  # ejection fraction, %
    "27": (0.3, 1.5),  # carotid intima-media thickness, mm
    "50": (100.0, 400.0),  # fetal abdominal circumference, mm
    "57": (0.0, 85.0),  # liver fat value
}
#: The key of the measurement inside the dataset's ``measurement`` JSON (``extract_mea``).
MEASUREMENT_KEYS: dict[str, str] = {"18": "EF", "27": "IMT", "50": "abdominal_circumference", "57": "fat value"}
#: ``%_within_tolerance`` threshold on the scaled error (``judge_kwargs.get('tolerance', 0.1)``).
MEASUREMENT_TOLERANCE = 0.1


def position_label(center_x: float, center_y: float) -> str:
    """The 3x3 grid label of a normalised (0-1) point; the middle cell is just ``"center"``."""
    if math.isnan(center_x) or math.isnan(center_y):
        return NOT_VISIBLE
    row = "upper" if center_y < POSITION_LOW else "middle" if center_y < POSITION_HIGH else "lower"
    col = "left" if center_x < POSITION_LOW else "center" if center_x < POSITION_HIGH else "right"
    return "center" if (row, col) == ("middle", "center") else f"{row} {col}"


def box_position_label(bbox: Sequence[float] | None, image_size: Sequence[float]) -> str:
    """Position label of a pixel box ``[x1, y1, x2, y2]`` in an image of ``(width, height)``.

    U2-Bench stores boxes as normalised ``[cx, cy, w, h]`` and labels the centre; this is the
    same rule for the zoo's pixel boxes. ``None`` (no lesion) is ``"not visible"``.
    """
    if bbox is None:
        return NOT_VISIBLE
    if len(bbox) != 4 or len(image_size) != 2:
        raise ValueError(f"expected bbox [x1, y1, x2, y2] and image_size (w, h), got {bbox!r} and {image_size!r}")
    width, height = float(image_size[0]), float(image_size[1])
    if width <= 0 or height <= 0:
        raise ValueError(f"image_size must be positive, got {image_size!r}")
    cx = (float(bbox[0]) + float(bbox[2])) / 2 / width
    cy = (float(bbox[1]) + float(bbox[3])) / 2 / height
    return position_label(cx, cy)


def macro_prf(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> dict[str, float]:
    """Macro precision, recall and F1 as ``sklearn.metrics.*_score(average="macro")``.

    Labels are the union of both lists (a predicted label that never occurs in the truth
    counts, with recall 0); a 0/0 ratio is 0, sklearn's ``zero_division="warn"`` value.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} items but y_pred has {len(y_pred)}")
    labels = set(y_true) | set(y_pred)
    if not labels:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    precision = recall = f1 = 0.0
    for label in labels:
        tp = sum(t == label and p == label for t, p in zip(y_true, y_pred))
        fp = sum(t != label and p == label for t, p in zip(y_true, y_pred))
        fn = sum(t == label and p != label for t, p in zip(y_true, y_pred))
        precision += tp / (tp + fp) if tp + fp else 0.0
        recall += tp / (tp + fn) if tp + fn else 0.0
        f1 += 2 * tp / (2 * tp + fp + fn)
    n = len(labels)
    return {"precision": precision / n, "recall": recall / n, "f1": f1 / n}


def measurement_range(dataset: str) -> tuple[float, float]:
    """The scaling range of a U2-Bench measurement dataset id (``"18"``, ``"27"``, ``"50"``, ``"57"``)."""
    key = str(dataset).strip()
    if key not in MEASUREMENT_RANGES:
        raise ValueError(
            f"no U2-Bench min-max range for measurement dataset {dataset!r}; known: {sorted(MEASUREMENT_RANGES)}. "
            "Pass value_range=(min, max) for other measurements."
        )
    return MEASUREMENT_RANGES[key]


def min_max_scale(value: float, value_range: tuple[float, float]) -> float:
    """``(value - min) / (max - min)``; 0 when the range is empty, as the evalkit does."""
    low, high = value_range
    return 0.0 if high == low else (value - low) / (high - low)


@dataclass(frozen=True)
class RegressionMetrics:
    """U2-Bench measurement metrics on min-max scaled values (``meaeval``)."""

    mae: float | None
    rmse: float | None
    std: float | None
    pct_within_tolerance: float | None
    n: int

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "MAE": self.mae,
            "RMSE": self.rmse,
            "Std": self.std,
            "%_within_tolerance": self.pct_within_tolerance,
            "n": self.n,
        }


def regression_metrics(
    y_true: Sequence[float],
    y_pred: Sequence[float],
    value_range: tuple[float, float],
    tolerance: float = MEASUREMENT_TOLERANCE,
) -> RegressionMetrics:
    """MAE, RMSE, population std of the error and % of |error| <= tolerance, on scaled values.

    ``None`` metrics (and ``n=0``) when there is nothing to score; the evalkit would return NaN.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} items but y_pred has {len(y_pred)}")
    errors = [min_max_scale(t, value_range) - min_max_scale(p, value_range) for t, p in zip(y_true, y_pred)]
    n = len(errors)
    if n == 0:
        return RegressionMetrics(None, None, None, None, 0)
    mean = sum(errors) / n
    return RegressionMetrics(
        mae=sum(abs(e) for e in errors) / n,
        rmse=math.sqrt(sum(e * e for e in errors) / n),
        std=math.sqrt(sum((e - mean) ** 2 for e in errors) / n),
        pct_within_tolerance=100.0 * sum(abs(e) <= tolerance for e in errors) / n,
        n=n,
    )
