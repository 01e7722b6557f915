"""The Python examples of the README and of the documentation's pages run as written, offline, each in a
fresh interpreter.

A fresh interpreter matters: the README's reward example once raised ``UnknownNameError``
because ``rewards.get("gui-g1")`` only found a domain's reward after something had imported
``zoo``; in the test process something always has. Each block runs from the repository root
(where its relative paths point) with the Hub switched off, then a few of the names it bound are
checked, so an example that "runs" but no longer does what its comments say fails too. A block that needs
a download or a GPU starts with ``# needs: <what and why>`` and is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: ``(page, code)`` of every Python block. The generated model pages are not here: their load snippets
#: name Hub models, which the site's test checks are generated for every entry instead.
BLOCKS = [(page.relative_to(ROOT), code) for page in PAGES
          for code in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)]  # fmt: skip

# After a block has run: what it left behind, as JSON (only the names it bound).
REPORT = r"""
import json as _json
_out = {"names": sorted(k for k in globals() if not k.startswith("_"))}
if "pred" in globals():
    _out["pred"] = {"bbox": pred.bbox, "parse_error": pred.parse_error, "text": pred.text}
if "gui_g1" in globals():
    _result = gui_g1([model_text], [sample])[0]
    _out["gui_g1"] = {"score": _result.score, "error": _result.error}
print("README-REPORT " + _json.dumps(_out))
"""


def run_block(code: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code + REPORT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, f"the example failed:\n{code}\n{proc.stderr[-3000:]}"
    line = next(line for line in proc.stdout.splitlines() if line.startswith("README-REPORT "))
    return json.loads(line.removeprefix("README-REPORT "))


def test_the_readme_and_the_guide_have_python_examples() -> None:
    pages = [str(page) for page, _ in BLOCKS]
    assert pages.count("README.md") >= 2, "the README's quickstart and rewards examples are Python blocks"
    assert "docs/getting-started.md" in pages


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=lambda i: f"{BLOCKS[i][0]}-{i}")
def test_a_python_block_runs_as_written(index: int) -> None:
    page, code = BLOCKS[index]
    if code.startswith("# needs:"):  # a block that needs a download or a GPU says so on its first line
        pytest.skip(f"{page}: {code.splitlines()[0].removeprefix('# needs:').strip()}")
    report = run_block(code)
    if "pred" in report:  # the quickstart: a shipped checkpoint answers with a parsed box
        bbox = report["pred"]["bbox"]
        assert report["pred"]["parse_error"] is None, report["pred"]
        assert isinstance(bbox, list) and len(bbox) == 4 and bbox[0] < bbox[2] and bbox[1] < bbox[3], report["pred"]
    if "gui_g1" in report:  # the rewards example: the box is a hit, plus IoU and edge terms (max 1.375)
        assert report["gui_g1"]["error"] is None and 1.0 < report["gui_g1"]["score"] <= 1.375, report["gui_g1"]
