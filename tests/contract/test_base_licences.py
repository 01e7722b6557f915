"""A fine-tuned model carries its base's licence terms: no Qwen2.5-VL-3B derivative may print Apache-2.0.

Qwen/Qwen2.5-VL-3B-Instruct is published under the Qwen Research License (its Hub card writes
``license: other``, ``license_name: qwen-research``), unlike the Apache-2.0 7B base; weights trained
from it stay under those terms whatever the authors' code licence is.
"""

from __future__ import annotations

import zoo
from zoo.registry import MODELS

#: Licences a weights card may state that restrict more than the base's terms (the card's own wins the column).
_STRICTER_CARD_LICENCES = {"cc-by-nc-nd-4.0", "cc-by-nc-4.0"}


def _qwen_3b_derivatives() -> list[str]:
    return [n for n in zoo.list_models() if "Qwen2.5-VL-3B" in MODELS.get(n).base_model]


def test_every_qwen_3b_derivative_carries_the_qwen_research_licence():
    names = _qwen_3b_derivatives()
    assert {"vlm-r1-rec-3b", "vlm-r1-ovd-3b", "vlm-r1-math-3b", "shuffle-r1-3b", "curr-reft-3b"} <= set(names)
    for name in names:
        entry = MODELS.get(name)
        assert entry.license == "other" or entry.license in _STRICTER_CARD_LICENCES, f"{name}: {entry.license}"
        assert "Qwen Research License" in entry.license_source, f"{name}: the base's licence is not named"


def test_the_7b_siblings_keep_their_apache_licence():
    """Only the 3B base changes the column: the same authors' 7B weights stay Apache-2.0."""
    assert zoo.info("shuffle-r1-7b").license == "apache-2.0"
    assert zoo.info("shuffle-r1-3b").code_license == "apache-2.0"
