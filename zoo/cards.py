"""Hugging Face model cards generated from a catalog entry and the numbers this project measured.

Cards are rendered with ``huggingface_hub.ModelCard.from_template``; what they say depends on the
entry's kind (:mod:`zoo.card_kinds`: VLM, open_clip, diffusion, policy, not released). They are
validated locally (front matter re-parsed as ``ModelCardData``, licence and tags present,
``model-index`` well formed, the usage snippet naming only functions that exist for the kind): the
Hub's own ``validate()`` needs the network. A card only states results found in the checkpoint's
``training.json``; entries the project did not evaluate say so instead of quoting papers.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import re
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.card_kinds import CardKind, card_kind
from zoo.hub import CHECKPOINTS_DIR, is_repo_id
from zoo.import_strings import PROJECT_ROOT, resolve
from zoo.model_files import read_json
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
    return read_json(record) if record.is_file() else {}


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


def _tags(entry: ModelEntry, kind: CardKind) -> list[str]:
    rl = ["reinforcement-learning", *(m for m in entry.rl_methods if m != "rl")] if entry.rl_methods else []
    return ["rl-model-zoo", entry.domain, *kind.tags, *rl]


def _license_line(entry: ModelEntry) -> str:
    line = f"{entry.license} (weights)" if entry.released else f"{entry.license} (no weights published)"
    line += ", gated: request access on the Hub page" if entry.gated else ""
    if entry.code_license and entry.code_license != entry.license:
        line += f"; code: {entry.code_license}"
    return line + (f". Source: {entry.license_source}" if entry.license_source else "")


def _revision_line(entry: ModelEntry) -> str:
    if entry.revision:
        return f"`{entry.revision}` (pinned; `zoo.load` fetches this commit)"
    return entry.revision_note or "not pinned (follows `main`)"


def render_card(entry: ModelEntry, record: dict[str, Any] | None = None) -> ModelCard:
    """The card for ``entry``; ``record`` is its ``training.json`` (default: read from checkpoints/)."""
    record = _training_record(entry) if record is None else record
    kind = card_kind(entry)
    evaluation, results = _evaluation(record)
    known = entry.license != "unknown"
    data = ModelCardData(
        license=entry.license if known else "other",
        license_name=None if known else "unknown",
        base_model=record.get("base_model") or (entry.base_model if is_repo_id(entry.base_model) else None),
        library_name=kind.library_name,
        pipeline_tag=kind.pipeline_tag,
        tags=_tags(entry, kind),
        model_name=entry.name,
        eval_results=results or None,
    )
    paper = f"[arXiv:{entry.paper}](https://arxiv.org/abs/{entry.paper})" if entry.paper else "—"
    if entry.repo_id:
        weights = f"`{entry.repo_id}`"
    elif entry.released:
        weights = f"`checkpoints/{entry.name}/` in the rl-model-zoo repository"
    else:
        weights = "not released by the authors"
    card = ModelCard.from_template(
        data,
        template_path=str(TEMPLATE),
        name=entry.name,
        summary=record.get("summary", entry.notes or entry.task),
        task=entry.task,
        kind_label=kind.label,
        architecture=entry.architecture,
        base_model=entry.base_model,
        license_line=_license_line(entry),
        revision_line=_revision_line(entry),
        paper_link=paper,
        weights=weights,
        usage=record.get("usage", kind.usage(entry)),
        how_it_works=kind.how_it_works(entry),
        intended_use=record.get("intended_use", f"Research on {entry.task}."),
        out_of_scope=SAFETY_CRITICAL.get(entry.domain, record.get("out_of_scope", "Anything beyond the task above.")),
        training=record.get("training_text", _training_text(entry)),
        evaluation=evaluation,
        limitations=record.get("limitations", "See the paper."),
        citation=f"arXiv:{entry.paper}" if entry.paper else "This repository.",
    )
    validate_card(card, entry)
    return card


def _training_text(entry: ModelEntry) -> str:
    if not entry.released:
        text = "The authors' training is described in the paper; its code, data and weights are not published."
    elif entry.rl_methods:
        text = f"Trained by its authors ({', '.join(entry.rl_methods)}); see the paper."
    else:
        text = "Trained by its authors without an RL stage; see the paper."
    return text + _reproduction_text(entry)


def _reproduction_text(entry: ModelEntry) -> str:
    """The shipped recipes that re-run the authors' training, where the zoo differs first, then the sources."""
    from zoo import provenance
    from zoo.recipe import read_yaml

    parts = []
    for path in provenance.reproducing_recipes(entry.name):
        rows = provenance.rows(read_yaml(path).get("provenance") or {})
        where = path.relative_to(PROJECT_ROOT).as_posix() if path.is_relative_to(PROJECT_ROOT) else path.name
        differ = [f"- `{row.field}`: {row.why}" for row in rows if row.differs]
        cited = sorted({row.source.split(":", 1)[0] if row.kind == "code" else row.source.split()[0] for row in rows
                        if row.kind in ("code", "paper")})  # fmt: skip
        parts.append(
            f"\n\nTo re-run it: `zoo train {where}` ({len(rows) - len(differ)} settings cited to the authors' code "
            f"or paper, `zoo info {where}` lists each). "
            + ("Where this recipe differs from the authors' run:\n\n" + "\n".join(differ)
               if differ else "It differs from the authors' run in no setting.")
            + (f"\n\nSources: {', '.join(f'`{c}`' for c in cited[:6])}{' ...' if len(cited) > 6 else ''}." if cited else "")
        )  # fmt: skip
    return "".join(parts)


def validate_card(card: ModelCard, entry: ModelEntry | None = None) -> None:
    """Local checks standing in for the Hub's validation: metadata parses and carries what the Hub needs.

    With ``entry``, also that the card is true to the entry's kind: its ``library_name``, no RL tag
    the entry did not earn, and a usage snippet that names only what exists for the kind.
    """
    reparsed = ModelCard(str(card))
    if not isinstance(reparsed.data, ModelCardData):
        raise CardError("model card front matter does not parse as huggingface_hub ModelCardData")
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
    if entry is not None:
        _validate_kind(reparsed, meta, entry)


def _validate_kind(card: ModelCard, meta: dict[str, Any], entry: ModelEntry) -> None:
    kind = card_kind(entry)
    if meta.get("library_name") != kind.library_name:
        raise CardError(f"{entry.name}: library_name {meta.get('library_name')!r}, expected {kind.library_name!r}")
    earned = {"reinforcement-learning", *entry.rl_methods} if entry.rl_methods else set()
    unearned = {"grpo", "dapo", "reinforcement-learning"} & set(meta["tags"]) - earned
    if unearned:
        raise CardError(f"{entry.name}: tags {sorted(unearned)} claim RL training the entry does not record")
    blocks = re.findall(r"```python\n(.*?)```", card.text, flags=re.DOTALL)
    if not blocks:
        raise CardError(f"{entry.name}: the card has no Python usage snippet")
    check_usage(blocks[0], kind, entry.name)


def _resolve(target: str | None, kind: CardKind) -> Any:
    return None if target is None else resolve(target, what=f"card kind {kind.label!r}")


def _has(obj: Any, attr: str) -> bool:
    fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
    return attr in fields or hasattr(obj, attr)


def check_usage(code: str, kind: CardKind, name: str) -> None:
    """Raise :class:`CardError` when ``code`` calls or reads a name that does not exist for ``kind``.

    ``zoo.X`` must be in :mod:`zoo`; ``pipe`` (what ``zoo.load`` returns) must have the methods and
    attributes used on it, and ``pred = pipe(...)`` the output's; an entry without weights may not
    call ``zoo.load`` at all (it raises).
    """
    import zoo

    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise CardError(f"{name}: the usage snippet is not valid Python ({err})") from None
    objects: dict[str, Any] = {"zoo": zoo}
    pipeline, output = _resolve(kind.pipeline, kind), _resolve(kind.output, kind)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            made = None
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "zoo":
                made = pipeline if func.attr == "load" else None
            elif isinstance(func, ast.Name) and func.id == "pipe":
                made = output
            for target in node.targets:
                if isinstance(target, ast.Name) and made is not None:
                    objects[target.id] = made
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in objects:
            owner = objects[node.value.id]
            if node.value.id == "zoo" and node.attr == "load" and pipeline is None:
                raise CardError(f"{name}: the usage calls zoo.load, but this entry has no weights to load")
            if not _has(owner, node.attr):
                raise CardError(f"{name}: the usage names {node.value.id}.{node.attr}, which does not exist for this kind")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called = node.func.id
            if called == "pipe" and (pipeline is None or not any("__call__" in vars(c) for c in pipeline.__mro__[:-1])):
                raise CardError(f"{name}: the usage calls pipe(...), which this kind does not have")
            if called not in objects and called != "pipe" and not hasattr(builtins, called):
                raise CardError(f"{name}: the usage calls {called}(), which is not defined")


def write_card(name: str, out_dir: Path = Path("model_cards")) -> Path:
    """Render ``name``'s card into ``out_dir/<name>/README.md`` and return the path.

    A checkpoint trained here may name its own renderer in ``training.json`` (``"card":
    "module:function"``, called as ``function(path, record, checkpoint)``): its card tells the
    training story (curves, controls) that the generic template cannot. The record is a file a
    colleague may drop into ``checkpoints/``, so the hook resolves only to installed or registered
    code (:mod:`zoo.import_strings`). Either way the result passes :func:`validate_card`.
    """
    entry = info(name)
    path = Path(out_dir) / entry.name / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = _training_record(entry)
    if "card" in record:
        checkpoint = CHECKPOINTS_DIR / entry.name
        hook = resolve(record["card"], what=f"the 'card' hook of {checkpoint / 'training.json'}")
        hook(path, record, checkpoint)
        validate_card(ModelCard(path.read_text()), entry)
    else:
        path.write_text(str(render_card(entry, record)))
    return path
