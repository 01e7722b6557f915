"""Hugging Face model cards generated from a catalog entry and the numbers this project measured.

Cards are rendered with ``huggingface_hub.ModelCard.from_template`` and validated locally
(metadata re-parsed, licence and base model present, ``model-index`` well formed): the Hub's
own ``validate()`` needs the network. A card only states results found in the checkpoint's
``training.json``; entries the project did not evaluate say so instead of quoting papers.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.hub import CHECKPOINTS_DIR, is_repo_id
from zoo.registry import ModelEntry, info

TEMPLATE = Path(__file__).parent / "templates" / "model_card.md"

#: Domains whose models must spell out that they are not for clinical or driving decisions.
SAFETY_CRITICAL = {
    "medical": (
        "Not a medical device. Not for diagnosis, treatment or triage, nor for any decision about a "
        "patient. Outputs can be fluent and wrong; reasoning traces are not clinical justification."
    ),
    "driving": (
        "Not for controlling a vehicle. Outputs have not been validated for safety in closed-loop driving."
    ),
}


class CardError(ValueError):
    """A generated card failed local validation; the message names the missing piece."""


def _training_record(entry: ModelEntry) -> dict[str, Any]:
    record = CHECKPOINTS_DIR / entry.name / "training.json"
    return json.loads(record.read_text()) if record.is_file() else {}


def _evaluation(record: dict[str, Any]) -> tuple[str, list[EvalResult]]:
    rows = record.get("metrics", [])
    if not rows:
        return "Not evaluated by this project yet: no number is quoted here.", []
    lines = ["| dataset | split | stage | metric | value |", "|---|---|---|---|---|"]
    results = []
    for r in rows:
        lines.append(f"| {r['dataset']} | {r.get('split', '')} | {r.get('stage', '')} | {r['metric']} | {r['value']} |")
        if r.get("stage", "final") == "final":
            results.append(
                EvalResult(
                    task_type=r.get("task_type", "image-text-to-text"),
                    dataset_type=r.get("dataset_type", r["dataset"]),
                    dataset_name=r["dataset"],
                    dataset_split=r.get("split"),
                    metric_type=r["metric"],
                    metric_value=r["value"],
                )
            )
    note = record.get("evaluation_note", "")
    return "\n".join(lines) + (f"\n\n{note}" if note else ""), results


def render_card(entry: ModelEntry, record: dict[str, Any] | None = None) -> ModelCard:
    """The card for ``entry``; ``record`` is its ``training.json`` (default: read from checkpoints/)."""
    record = _training_record(entry) if record is None else record
    evaluation, results = _evaluation(record)
    data = ModelCardData(
        license=entry.license if entry.license != "unknown" else "other",
        base_model=record.get("base_model") or (entry.base_model if is_repo_id(entry.base_model) else None),
        library_name="transformers",
        pipeline_tag="image-text-to-text" if entry.kind == "vlm" else None,
        tags=["rl-model-zoo", entry.domain, "grpo", "reinforcement-learning"],
        model_name=entry.name,
        eval_results=results or None,
    )
    paper = f"[arXiv:{entry.paper}](https://arxiv.org/abs/{entry.paper})" if entry.paper else "—"
    spec = entry.spec
    card = ModelCard.from_template(
        data,
        template_path=str(TEMPLATE),
        name=entry.name,
        summary=record.get("summary", entry.notes or entry.task),
        task=entry.task,
        architecture=entry.architecture,
        base_model=entry.base_model,
        license=entry.license,
        gated=entry.gated,
        paper_link=paper,
        weights=f"`{entry.repo_id}`" if entry.repo_id else f"`checkpoints/{entry.name}/` in the rl-model-zoo repository",
        usage=record.get("usage", 'pred = pipe("image.png", "your question")\nprint(pred.to_dict())'),
        prompt_summary="system prompt + user template" if getattr(spec, "system", None) else "user template, no system prompt",
        min_pixels=getattr(spec, "min_pixels", "n/a"),
        max_pixels=getattr(spec, "max_pixels", "n/a"),
        parser=getattr(getattr(spec, "parser", None), "__name__", "none"),
        intended_use=record.get("intended_use", f"Research on {entry.task}."),
        out_of_scope=SAFETY_CRITICAL.get(entry.domain, record.get("out_of_scope", "Anything beyond the task above.")),
        training=record.get("training_text", "Trained by its authors; see the paper."),
        evaluation=evaluation,
        limitations=record.get("limitations", "See the paper."),
        citation=f"arXiv:{entry.paper}" if entry.paper else "This repository.",
    )
    validate_card(card)
    return card


def validate_card(card: ModelCard) -> None:
    """Local checks standing in for the Hub's validation: metadata parses and carries what the Hub needs."""
    reparsed = ModelCard(str(card))
    meta = reparsed.data.to_dict()
    for key in ("license", "tags"):
        if not meta.get(key):
            raise CardError(f"model card metadata has no {key!r}")
    for index in meta.get("model-index", []) or []:
        for result in index.get("results", []):
            if not result.get("metrics") or not result.get("dataset", {}).get("name"):
                raise CardError(f"model-index entry without metrics or dataset name: {result}")
    if "{{" in reparsed.text:
        raise CardError("the card still contains unrendered template fields")


def write_card(name: str, out_dir: Path = Path("model_cards")) -> Path:
    """Render ``name``'s card into ``out_dir/<name>/README.md`` and return the path.

    A checkpoint trained here may name its own renderer in ``training.json`` (``"card":
    "module:function"``, called as ``function(path, record, checkpoint)``): its card tells the
    training story (curves, controls) that the generic template cannot. Either way the result
    passes :func:`validate_card`.
    """
    entry = info(name)
    path = Path(out_dir) / entry.name / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = _training_record(entry)
    if "card" in record:
        module, _, func = record["card"].partition(":")
        getattr(importlib.import_module(module), func)(path, record, CHECKPOINTS_DIR / entry.name)
        validate_card(ModelCard(path.read_text()))
    else:
        path.write_text(str(render_card(entry, record)))
    return path
