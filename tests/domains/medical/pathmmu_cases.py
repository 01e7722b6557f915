"""Responses for PathMMU's answer parser, shared by the tests and the golden script.

Golden choices come from PathMMU-Benchmark/PathMMU ``eval/utils/eval_utils.py::get_multi_choice_prediction``
(commit b34f21e, global ``random.seed(42)`` at import, cases run in this order) plus ``eval/main.py``'s
``if response == gt_content`` override. Plain Python only.
"""

from __future__ import annotations

OPTS = {"A": "Necrosis", "B": "Fibrosis", "C": "Mitosis", "D": "Inflammation"}
CASES = [
    ("(B)", OPTS, "Fibrosis"),
    ("The answer is C.", OPTS, "Mitosis"),
    ("A or (D)? I pick (D) over (A)", OPTS, "Inflammation"),
    ("I think it is B, not A really", OPTS, "Fibrosis"),
    ("the image shows prominent mitosis in many of the cells here", OPTS, "Mitosis"),
    ("Fibrosis", OPTS, "Fibrosis"),
    ("no idea", OPTS, "Necrosis"),
    ("cannot tell", OPTS, "Mitosis"),
    ("there is fibrosis and later clear necrosis in this slide region", OPTS, "Necrosis"),
    ("D.", OPTS, "Inflammation"),
]
