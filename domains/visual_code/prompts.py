"""The authors' prompts and output parsers for chart, SVG and CAD code models.

* MSRL (DocTron-hub/MSRL@203465d ``README.md:244-268``): one user turn ``[image, text]`` with the
  prompt below, leading and trailing newline included; the answer is one fenced ```` ```python ````
  block of matplotlib code. The README samples with ``generate(max_new_tokens=4096, top_p=1,
  temperature=0.1)`` (L268).
* VinciCoder, the MSRL group's released reward code (DocTron-hub/VinciCoder@dbe1e94
  ``examples/reward_function/vincicoder.py:142-148,646``), reads the **last** fenced block of the
  requested language; :func:`parse_python_block` does the same (zoo: it also takes ``py``/``python3``
  labels and, without a labelled block, an unlabelled one, where VinciCoder's regex takes only
  ```` ```python ````).
* StarVector im2svg (joanrod/star-vector ``README.md``, §A3) emits raw ``<svg ...>...</svg>``
  with no fence and no text prompt.
* CadQuery (CAD-RL style, §A2): the authors publish no prompt; the zoo's own asks for one
  ```` ```python ```` block that leaves the solid in a variable named ``result``.

Parsers never raise: unreadable text gives ``{"code": None, "parse_error": reason}``.
"""

from __future__ import annotations

import re
from typing import Any

#: DocTron-hub/MSRL@203465d:README.md:245-248, byte for byte: the README writes it as a triple-quoted string
#: that opens and closes on its own line, so the text starts and ends with a newline.
MSRL_PROMPT = (
    "\n"
    "You are an expert Python developer who specializes in writing matplotlib code based on a given picture. "
    "I found a very nice picture in a STEM paper, but there is no corresponding source code available. "
    "I need your help to generate the Python code that can reproduce the picture based on the picture I provide.\n"
    'Now, please give me the matplotlib code that reproduces the picture below, starting with "```python" '
    'and ending with "```".\n'
)
#: DocTron-hub/MSRL@203465d:README.md:250 ``AutoProcessor.from_pretrained(..., min_pixels=1280*28*28, max_pixels=16384*28*28)``.
MSRL_MIN_PIXELS = 1280 * 28 * 28
MSRL_MAX_PIXELS = 16384 * 28 * 28

#: The zoo's own SVG prompt for instruction-tuned VLMs (RLRF trains Qwen2.5-VL as well as
#: StarVector; its prompt is not published, UNVERIFIED). The ``rlrf`` and ``svg-scenes-tiny`` entries'
#: user template is this prompt followed by the question (none for an SVG sample: the picture is the task).
SVG_PROMPT = (
    "Convert the picture into SVG code. Answer with a single <svg> element whose viewBox matches the picture, "
    "and nothing else."
)
#: The zoo's own CadQuery prompt (CAD-RL publishes none): the ``cad-rl`` entry's user template, the part's
#: text description in place of ``{question}``.
CADQUERY_PROMPT = (
    "Write CadQuery Python code that builds the part described below. Import cadquery as cq and leave the final "
    'solid in a variable named result. Answer with one block starting with "```python" and ending with "```".'
    "\n\n{question}"
)

_FENCE = re.compile(r"```(?P<lang>[A-Za-z0-9_+-]*)[ \t]*\n?(?P<body>.*?)```", re.DOTALL)
_LABELS = {"python": ("python", "py", "python3"), "svg": ("svg", "xml")}
_SVG = re.compile(r"<svg\b.*?</svg\s*>", re.DOTALL | re.IGNORECASE)


def _error(reason: str) -> dict[str, Any]:
    return {"code": None, "parse_error": reason}


def extract_fenced(text: str, language: str = "python") -> str | None:
    """The body of the last ```` ```<language> ```` block (case-insensitive), or ``None``.

    An unlabelled fence counts when no labelled one is present, since models often drop the
    label; an unterminated last fence is not a block (the code was cut by the length limit).
    """
    if not isinstance(text, str):
        return None
    blocks = [(m.group("lang").lower(), m.group("body")) for m in _FENCE.finditer(text)]
    names = _LABELS.get(language.lower(), (language.lower(),))
    labelled = [body for lang, body in blocks if lang in names]
    chosen = labelled or [body for lang, body in blocks if lang == ""]
    return chosen[-1].strip() if chosen else None


def parse_python_block(text: str, question: str = "") -> dict[str, Any]:
    """``{"code": ...}`` from the last ```` ```python ```` block (MSRL / VinciCoder), else a parse error."""
    code = extract_fenced(text, "python")
    if code is None:
        return _error("no ```python ... ``` block in the answer")
    if not code:
        return _error("the ```python``` block is empty")
    return {"code": code}


def parse_svg(text: str, question: str = "") -> dict[str, Any]:
    """``{"code": "<svg ...>...</svg>"}``: the first complete ``<svg>`` element, fenced or not (StarVector)."""
    if not isinstance(text, str):
        return _error(f"expected text, got {type(text).__name__}")
    match = _SVG.search(extract_fenced(text, "svg") or text) or _SVG.search(text)
    if match is None:
        return _error("no complete <svg ...>...</svg> element in the answer")
    return {"code": match.group(0)}


def parse_cadquery_block(text: str, question: str = "") -> dict[str, Any]:
    """``{"code": ...}`` from the last ```` ```python ```` block; it must mention ``result``."""
    parsed = parse_python_block(text, question)
    if parsed.get("code") is not None and not re.search(r"\bresult\b", parsed["code"]):
        return _error("the CadQuery code does not assign the solid to a variable named result")
    return parsed


#: language -> parser, for rewards that take the language from the sample.
PARSERS = {"python": parse_python_block, "matplotlib": parse_python_block, "svg": parse_svg,
           "cadquery": parse_cadquery_block}


def reference_code(sample: Any) -> str:
    """A sample's reference code as the whole answer (``svg-code`` answer format: the SVG SFT target)."""
    return sample.target["code"]
