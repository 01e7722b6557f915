"""Small U2-Bench tables shared by the tests and by the script that produced their golden numbers.

Golden numbers come from running dolphin-sound/u2-bench-evalkit's own functions (commit 782350bc,
``vlmeval/eval_func/cla_eval.py::model_eval``, ``seg_eval_v1.1.py::new_seg_eval``,
``measure_eval_v1.2.py::meaeval``, ``report_eval.py::report_eval``) on these rows in a scratch
venv (Python 3.11, numpy 2.4.6, pandas 3.1.1, scikit-learn 1.9.1, pycocoevalcap 1.2).
Plain Python only: the golden script imports this file outside the project's venv. The rows keep the
column names the golden script fed those functions (``class``, ``gt_bbox``, ``measurement``,
``caption``); the tests write them into the release's columns with :func:`write_release_tsv`.
"""

from __future__ import annotations

import csv
from pathlib import Path

CLA_STR = {
    "class": ["benign", "malignant", "['normal']", "benign", "malignant", "normal", "benign"],
    "response": ["Benign", "benign", "normal", "benign ", "Malignant", "normal", "malignant"],
}
CLA_INT = {  # LUS severity score (dataset 44 style): integer labels
    "class": [0, 1, 2, 3, 2, 1],
    "response": ["0", "2", "two", "3", "2", " 1"],
}
SEG = {
    "gt_bbox": [
        "{'lesion': [0.3, 0.2, 0.1, 0.1]}",
        "[{'lesion': [0.5, 0.5, 0.2, 0.2]}]",
        "",
        "{'lesion': [0.45, 0.55, 0.1, 0.1]}",
        "{'lesion': [0.8, 0.9, 0.1, 0.1]}",
        "{'lesion': [0.7, 0.5, 0.1, 0.1]}",
        "{'lesion': [0.1, 0.6, 0.1, 0.1]}",
    ],
    "response": ["Upper Left", "center", "not visible", "lower center", "lower right ", "", "lower left"],
}
MEASURE_18 = {
    "measurement": ["{'EF': 55.0}", "{'EF': 30}", "[{'EF': 62.5}]", "", "{'EF': 70}", "{'EF': 12}"],
    "response": ["50", "abc", "62.5", "40", " 75.5 ", "20"],
}
MEASURE_27 = {
    "measurement": ["{'IMT': [0.8]}", "{'IMT': [1.1]}", "{'IMT': [0.5]}"],
    "response": ["0.7", "null", "0.45"],
}
REPORT = {
    "id": ["c1", "c2", "c3", "c4"],
    "caption": [
        "Thyroid nodule in the right lobe. TI-RADS level 3, Benign.",
        "Fetal phantom ultrasound image showing standard diagnostic plane for femur length (FL) measurement",
        "The liver morphology is full with a smooth capsule.",
        "no B-lines",
    ],
    "response": [
        "Thyroid nodule in the left lobe. TI-RADS level 3, Benign.",
        "Fetal phantom ultrasound image showing standard diagnostic plane for femur length (FL) measurement",
        "The liver is normal with a smooth capsule and homogeneous echotexture.",
        "white lung",
    ],
}


#: The columns of the U2-Bench release, in the order its dataset viewer shows them
#: (https://huggingface.co/datasets/DolphinAI/u2-bench; the column file at commit 6b74ff0 lists the same
#: fields with ``split`` for ``prompt``). Every released TSV carries them, empty where a task has no use.
RELEASE_COLUMNS = (
    "dataset_name", "img_data", "patient_id", "prompt", "anatomy_location", "demographic", "classification_task",
    "class_label", "options", "seg_data", "seg_channel_name", "gt_bbox", "keypoints", "measurement", "caption",
    "report", "notes",
)


#: An 8x6 grey PNG, base64: the ``img_data`` of the test tables.
PNG_8X6 = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAGCAIAAABxZ0isAAAAFElEQVR4nGNsaGhgwAaYsIrSSQIA4hoBjJwAPGsAAAAASUVORK5CYII="


def write_release_tsv(
    columns: dict[str, list], path: Path, extra: tuple[str, ...] = (), img_data: str = PNG_8X6
) -> Path:
    """A TSV in the release's layout: :data:`RELEASE_COLUMNS` (given ``columns`` filled in, the rest empty,
    ``img_data`` in every row unless given), then the ``extra`` columns an evaluation adds (``response``)."""
    n = len(next(iter(columns.values())))
    names = [*RELEASE_COLUMNS, *extra]
    filled = {"img_data": [img_data] * n, **columns}
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(names)
        for i in range(n):
            writer.writerow([filled[c][i] if c in filled else "" for c in names])
    return path
