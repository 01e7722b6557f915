"""The prompts U2-Bench asks, as its evalkit builds them (dolphin-sound/u2-bench-evalkit@4ab2465).

The evalkit never reads the release's ``prompt`` column. Classification and measurement ask each dataset's entry
of ``vlmeval/dataset/cla_prompt.json`` / ``mea_prompt.json`` (``image_cla.py:82-85``, ``image_measurement.py:104-107``),
read here from the user's own copy of the evalkit (the ``evalkit`` setting: ``zoo eval --option
evalkit=PATH``; the zoo does not ship those files). Localisation and report/caption prompts are Python in
``image_seg.py:212-250`` and ``image_report.py:69-97``, transcribed below. The release's ``prompt`` cell is asked
only on request (``prompts="row"``). :class:`U2Prompts` says which was used, for ``metrics.json``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from domains.medical.prompts import U2BENCH_LOCALIZATION_PROMPT

PromptSource = Literal["evalkit", "row"]
PROMPT_SOURCES = ("evalkit", "row")
#: The evalkit's per-dataset prompt files (in its ``vlmeval/dataset/``), per scoring rule.
PROMPT_FILES = {"cla": "cla_prompt.json", "measurement": "mea_prompt.json"}
_POSITIONS = ("upper left, upper center, upper right, middle left, center, middle right, lower left, lower center, "
              "lower right, not visible.\n")  # fmt: skip
_ONE_OR_TWO_WORDS = ("Output format: only one or two word(s) representing the chosen location. No additional text or "
                     "formatting is allowed.")  # fmt: skip
#: image_report.py:86-97: the caption examples of datasets 10, 11 and 44.
_CAPTION_EXAMPLES = {
    "10": "Example1: Fetal phantom ultrasound image showing standard diagnostic plane for abdominal circumference (AC) "
    "measurement\nExample2: Fetal phantom ultrasound image showing standard diagnostic plane for biparietal diameter "
    "(BPD) measurement\nExample3: Fetal phantom ultrasound image showing standard diagnostic plane for femur length "
    "(FL) measurement\n",
    "11": "Example1: Thyroid nodule in the right lobe. TI-RADS level 3, Benign.\nExample2: Thyroid nodule in the left "
    "lobe. TI-RADS level 3, Benign.\nExample3: Thyroid nodule in the right lobe. TI-RADS level 4, Benign.\n",
    "44": "Example1: no single B-lines, B-lines are fused together into the picture of a white lung\nExample2: liver "
    "on the right side\nExample3: white lung? ",
}
_REPORT_39 = (
    "Your task is generate a concise and informative radiological report based strictly on the visual findings within "
    "the provided image. Your report should describe the primary organ's appearance (size, shape, borders/capsule), "
    "its parenchymal echotexture (e.g., homogeneous, heterogeneous, echogenicity relative to reference structures), "
    "and identify any visible abnormalities (e.g., masses, cysts, fluid collections, calcifications, ductal "
    "dilation). Comment on relevant adjacent structures if visualized. Use standard radiological terminology."
    "Output format: Strings, that is your report."
    "Example: The liver morphology is full with a smooth capsule. The parenchymal echotexture is fine and diffusely "
    "increased. Visualization of the portal venous system is suboptimal. Intrahepatic and extrahepatic bile ducts are "
    "not dilated. The main portal vein diameter is within normal limits. The gallbladder is normal in size and shape. "
    "The wall is smooth and not thickened. No obvious abnormal echoes are seen within the lumen. The pancreas is "
    "normal in size and shape with homogeneous parenchymal echotexture. The pancreatic duct is not dilated. No "
    "definite space-occupying lesion is seen within the pancreas. The spleen is normal in size and shape with "
    "homogeneous parenchymal echotexture. No obvious space-occupying lesion is seen within the spleen."
)
_CAPTION = (
    "Your task is to generate a concise and informative caption that accurately describes the key anatomical "
    "structures and any significant findings visible in the provided ultrasound image."
    "Output format: A single string constituting the image caption. Output only the generated caption text itself. "
    "Do not include any introductory phrases (like \"Caption:\"), labels, explanations, or additional formatting."
    "Examples:"
)


def _cell(row: Mapping[str, Any], column: str) -> Any:
    """An optional cell (the evalkit's ``hint``): ``None`` when absent or NaN, as its ``pd.isna`` test reads it."""
    value = row.get(column)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def seg_prompt(row: Mapping[str, Any], dataset: str) -> str:
    """``ImageSegDataset.build_prompt`` (image_seg.py:212-250): the lesion prompt of datasets 04, 17, 23, 32, 64, the
    valve prompt of 48 (its ``keypoints`` cell's first key), the per-structure prompt of the others."""
    anatomy, hint = row.get("anatomy_location"), _cell(row, "hint")
    prompt = f"{hint}.\n" if hint is not None else ""
    if dataset in ("04", "17", "23", "32", "64"):
        return prompt + U2BENCH_LOCALIZATION_PROMPT.format(anatomy=anatomy)
    if dataset == "48":
        try:
            keypoint = next(iter(json.loads(row["keypoints"])))
        except (json.JSONDecodeError, TypeError, KeyError, StopIteration):  # the evalkit's default (L227-237)
            keypoint = "heart valve location"
        return (prompt + "You are a radiologist analyzing an ultrasound image of the heart.\n"
                f"Your task is to determine the {keypoint}.\n"
                "Choose the single most appropriate location from the following list: " + _POSITIONS + _ONE_OR_TWO_WORDS)  # fmt: skip
    return (prompt + f"You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
            "Your task is to determine the primary location, relative to the image boundaries, for each visible "
            f"structure listed in {row.get('seg_channel_name')}.\n"
            "*   Consider the structure's center or most prominent area when deciding its location.\n"
            "*   Choose the single option from the list below that best describes the location, even if the fit is "
            "approximate.\nLocation Options: " + _POSITIONS + _ONE_OR_TWO_WORDS)  # fmt: skip


def report_prompt(row: Mapping[str, Any], dataset: str) -> str:
    """``ImageReportDataset.build_prompt`` (image_report.py:69-97): dataset 39's report prompt, every other
    dataset's caption prompt (with examples for 10, 11 and 44). The joins without spaces are the evalkit's."""
    hint = _cell(row, "hint")
    prompt = f"Hint: {hint}\n" if hint is not None else ""
    prompt += f"You are a radiologist analyzing an ultrasound image focused on the {row.get('anatomy_location')}."
    if dataset == "39":
        return prompt + _REPORT_39
    return prompt + _CAPTION + _CAPTION_EXAMPLES.get(dataset, "")


def fill_prompt(template: str, row: Mapping[str, Any]) -> str:
    """The text of a released ``prompt`` cell, ``{column}`` placeholders filled from the row.

    The dataset viewer of DolphinAI/u2-bench shows its cells as ``You are a radiologist analyzing an ultrasound
    image focused on the {anatomy\\_location}.\\n\\nYour ...``: markdown-escaped underscores and written-out
    newlines, which are undone here before the placeholders that name one of the row's text columns are filled.
    """
    text = template.replace("\\n", "\n").replace("\\_", "_")
    return re.sub(r"\{(\w+)\}", lambda m: row[m[1]] if isinstance(row.get(m[1]), str) else m[0], text)


@dataclass(frozen=True)
class U2Prompts:
    """Where one table's questions come from: the evalkit's (its JSON from ``file``, or its transcribed code) or
    the release's ``prompt`` cells (``source="row"``)."""

    source: PromptSource
    file: Path | None = None
    per_dataset: Mapping[str, str] | None = None

    @classmethod
    def choose(cls, rule: str, source: PromptSource = "evalkit", evalkit: str | Path | None = None,
               prompt_file: str | Path | None = None) -> U2Prompts:  # fmt: skip
        """The prompts of one scoring rule: ``prompt_file`` (a JSON of the evalkit's form) when given, else the
        rule's file in the ``evalkit`` checkout for ``cla``/``measurement``, the transcribed code otherwise."""
        if source not in PROMPT_SOURCES:
            raise ValueError(f"prompts={source!r}; use one of {PROMPT_SOURCES}")
        if source == "row" or (rule not in PROMPT_FILES and prompt_file is None):
            return cls(source)
        file = Path(prompt_file) if prompt_file else _evalkit_file(evalkit, PROMPT_FILES[rule])
        try:
            table = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"cannot read U2-Bench's prompts from {file}: {err}") from None
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise ValueError(f"{file} is not the evalkit's prompt file (a JSON object of dataset id -> prompt text)")
        return cls(source, file.resolve(), table)

    def question(self, row: Mapping[str, Any], rule: str, dataset: str) -> str:
        """The question of one row of dataset ``dataset``."""
        if self.source == "row":
            if not (isinstance(row.get("prompt"), str) and row["prompt"].strip()):
                raise ValueError(f"prompts='row', but a row of U2-Bench dataset {dataset!r} has no 'prompt' cell")
            return fill_prompt(row["prompt"], row)
        if self.per_dataset is not None:
            if dataset not in self.per_dataset:
                near = [k for k in self.per_dataset if k.startswith(dataset)] if dataset else []
                hint = f"its entries for this dataset: {', '.join(near)}; pick one with --data u2bench-<task>:<entry>"
                raise ValueError(f"{self.file} has no prompt for U2-Bench dataset {dataset!r} ("
                                 + (hint if near else f"it has {', '.join(sorted(self.per_dataset))}") + ")")
            return self.per_dataset[dataset]
        return seg_prompt(row, dataset) if rule == "seg" else report_prompt(row, dataset)

    def record(self, rule: str) -> dict[str, Any]:
        """What ``metrics.json`` says of the prompts asked."""
        if self.source == "row":
            return {"source": "row", "what": "the release's prompt cells (the evalkit does not ask them)"}
        if self.file is not None:
            return {"source": "evalkit", "file": str(self.file)}
        code = "vlmeval/dataset/image_seg.py" if rule == "seg" else "vlmeval/dataset/image_report.py"
        return {"source": "evalkit", "code": f"dolphin-sound/u2-bench-evalkit@4ab2465:{code}, as transcribed here"}


def _evalkit_file(evalkit: str | Path | None, name: str) -> Path:
    if evalkit is None:
        raise ValueError(f"U2-Bench asks this task's prompts from the evalkit's {name}, which the zoo does not ship: "
                         "pass evalkit=<your checkout of dolphin-sound/u2-bench-evalkit> (zoo eval --option "
                         "evalkit=PATH), or prompts=row to ask the release's prompt cells instead")  # fmt: skip
    root = Path(evalkit)
    for file in (root / "vlmeval" / "dataset" / name, root / name):
        if file.is_file():
            return file
    raise ValueError(f"evalkit={root} holds no vlmeval/dataset/{name}: point it at a checkout of "
                     "dolphin-sound/u2-bench-evalkit")  # fmt: skip
