"""Hugging Face model cards generated from a catalog entry and the numbers this project measured.

Cards are rendered with ``huggingface_hub.ModelCard.from_template``; what they say depends on the
entry's kind (:mod:`zoo.card_kinds`: VLM, open_clip, diffusion, policy, not released). They are
validated locally (front matter re-parsed as ``ModelCardData``, licence and tags present,
``model-index`` well formed, the usage snippet naming only functions that exist for the kind): the
Hub's own ``validate()`` needs the network.

Two layouts, one module. An entry of the authors' gets the template (what it is, how to load it,
its licence, the recipes that re-run it). A checkpoint this project trained carries a
:class:`~zoo.records.TrainingRecord` in ``training.json``: its card is the record's summary and
sections, then a table of its stages and comparisons, with the record's evaluation as
``model-index``. A card only states results found in that record; entries the project did not
evaluate say so instead of quoting papers.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import re
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from zoo.card_kinds import CHECKOUT, CardKind, SnippetOrigin, card_kind
from zoo.hub import CHECKPOINTS_DIR, is_repo_id, repo_id_problem
from zoo.import_strings import PROJECT_ROOT, resolve
from zoo.records import TrainingRecord, read_record
from zoo.registry import ModelEntry, info

TEMPLATE = Path(__file__).parent / "templates" / "model_card.md"
#: Title of the card section listing a record's stages and comparisons (rendered from them, never stored).
TABLE_TITLE = "Training record"
#: The rendered cards, one folder per entry (``README.md`` and the figures its sections show).
CARDS_DIR = PROJECT_ROOT / "model_cards"

#: A fenced Python block of a card's Markdown (the first one is its usage snippet).
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", flags=re.DOTALL)

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


def training_record(entry: ModelEntry) -> TrainingRecord | None:
    """The record of a checkpoint this project trained (``checkpoints/<name>/training.json``), else ``None``."""
    path = CHECKPOINTS_DIR / entry.name / "training.json"
    return read_record(path) if path.is_file() else None


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


def render_card(
    entry: ModelEntry, record: TrainingRecord | None = None, origin: SnippetOrigin = CHECKOUT
) -> ModelCard:
    """The card for ``entry``: from its training record when it has one (default: read from checkpoints/); its
    usage snippet runs where ``origin`` says the reader has the model (a checkout, or the repository pushed to)."""
    record = record or training_record(entry)
    card = _record_card(entry, record, origin) if record is not None else _template_card(entry, origin)
    validate_card(card, entry)
    return card


def _template_card(entry: ModelEntry, origin: SnippetOrigin) -> ModelCard:
    kind = card_kind(entry)
    known = entry.license != "unknown"
    data = ModelCardData(
        license=entry.license if known else "other",
        license_name=None if known else "unknown",
        base_model=entry.base_model if is_repo_id(entry.base_model) else None,
        library_name=kind.library_name,
        pipeline_tag=kind.pipeline_tag,
        tags=_tags(entry, kind),
        model_name=entry.name,
    )
    paper = f"[arXiv:{entry.paper}](https://arxiv.org/abs/{entry.paper})" if entry.paper else "—"
    if entry.repo_id:
        weights = f"`{entry.repo_id}`"
    elif entry.released:
        weights = f"`checkpoints/{entry.name}/` in the rl-model-zoo repository"
    else:
        weights = "not released by the authors"
    return ModelCard.from_template(
        data,
        template_path=str(TEMPLATE),
        name=entry.name,
        summary=entry.notes or entry.task,
        task=entry.task,
        kind_label=kind.label,
        architecture=entry.architecture,
        base_model=entry.base_model,
        license_line=_license_line(entry),
        revision_line=_revision_line(entry),
        paper_link=paper,
        weights=weights,
        usage=kind.usage(entry, origin),
        how_it_works=kind.how_it_works(entry),
        intended_use=f"Research on {entry.task}.",
        out_of_scope=SAFETY_CRITICAL.get(entry.domain, "Anything beyond the task above."),
        training=_training_text(entry),
        evaluation="Not evaluated by this project yet: no number is quoted here.",
        limitations="See the paper.",
        citation=f"arXiv:{entry.paper}" if entry.paper else "This repository.",
    )


def _record_card(entry: ModelEntry, record: TrainingRecord, origin: SnippetOrigin) -> ModelCard:
    """A trained checkpoint's card: the record's summary and sections, its stages, its ``model-index``."""
    if record.entry != entry.name:
        raise CardError(f"checkpoints/{entry.name}/training.json records entry {record.entry!r}")
    kind = card_kind(entry)
    data = ModelCardData(
        license=entry.license,
        base_model=record.base_model,
        library_name=kind.library_name,
        pipeline_tag=kind.pipeline_tag,
        tags=list(record.tags) or _tags(entry, kind),
        model_name=entry.name,
        eval_results=[
            EvalResult(task_type=r.task_type, task_name=r.task_name or None, dataset_type=r.dataset_type,
                       dataset_name=r.dataset_name, dataset_split=r.dataset_split or None,
                       metric_type=r.metric_type, metric_name=r.metric_name or None, metric_value=r.value)
            for r in record.evaluation
        ] or None,
    )  # fmt: skip
    parts = [f"# {entry.name}", record.summary.strip(), *_sections_with_usage(record, kind.usage(entry, origin))]
    parts += [_record_table(record)] if record.stages or record.comparisons else []
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(parts) + "\n")


def _sections_with_usage(record: TrainingRecord, usage: str) -> list[str]:
    """The record's sections with the kind's usage in place of their first Python block, which marks where the card
    shows it (a "Use" section first where none has one): the one generator's snippet, run where the card is read,
    and the record's own words around it."""
    block, sections, placed = f"```python\n{usage}\n```", [], False
    for section in record.sections:
        text = section.markdown.strip()
        if not placed and PYTHON_BLOCK.search(text):
            text, placed = PYTHON_BLOCK.sub(lambda _: block, text, count=1), True
        sections.append(f"## {section.title}\n\n{text}")
    return sections if placed else [f"## Use\n\n{block}", *sections]


def _record_table(record: TrainingRecord) -> str:
    """The stages and comparisons of ``training.json``, in one table each (numbers as recorded)."""

    def number(value: float | None, digits: int = 3) -> str:  # an int (seed, steps) prints as it is
        return "" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)

    lines = [f"## {TABLE_TITLE}", "", f"As `training.json` records it; reproduce with `{record.reproduce}`.", ""]
    if record.stages:
        lines += ["| stage | recipe | seed | steps | CPU-min | held-out |", "|---|---|---|---|---|---|"]
        lines += [f"| {s.name} | {f'`{s.recipe}`' if s.recipe else ''} | {number(s.seed)} | {number(s.steps)} | "
                  f"{number(s.cpu_minutes, 1)} | {f'{s.metric} {number(s.value)}' if s.value is not None else ''} |"
                  for s in record.stages]  # fmt: skip
        lines.append("")
    if record.comparisons:
        lines += ["| comparison | difference | standard error | unit | n | > 2 SE |", "|---|---|---|---|---|---|"]
        lines += [f"| {c.label} | {c.difference:+.4f} | {number(c.standard_error, 4)} | {c.unit} | {number(c.n)} | "
                  f"{'—' if c.standard_error is None else 'yes' if c.clears else 'no'} |" for c in record.comparisons]  # fmt: skip
    return "\n".join(lines).rstrip()


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
    from zoo.engines.batches import authors_run_rows
    from zoo.engines.reading import load_recipe

    parts = []
    for path in provenance.reproducing_recipes(entry.name):
        recipe = load_recipe(path)
        rows = provenance.rows(recipe.provenance)
        where = path.relative_to(PROJECT_ROOT).as_posix() if path.is_relative_to(PROJECT_ROOT) else path.name
        differ = [f"- `{row.field}`: {row.why}" for row in rows if row.differs]
        differ += [f"- {row.sentence()}" for row in authors_run_rows(recipe) if row.differs]
        cited = sorted({row.source.split(":", 1)[0] if row.kind == "code" else row.source.split()[0] for row in rows
                        if row.kind in ("code", "paper")})  # fmt: skip
        parts.append(
            f"\n\nTo re-run it: `zoo train {where}` ({sum(r.cited for r in rows)} settings cited to the authors' code "
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
    check_usage(usage_code(card.text, entry.name), kind, entry.name)


def usage_code(card_text: str, name: str) -> str:
    """The card's usage snippet: its first Python block (:class:`CardError` when it has none)."""
    found = PYTHON_BLOCK.search(card_text)
    if found is None:
        raise CardError(f"{name}: the card has no Python usage snippet")
    return found.group(1)


def _resolve(target: str | None, kind: CardKind) -> Any:
    return None if target is None else resolve(target, what=f"card kind {kind.label!r}")


def _has(obj: Any, attr: str) -> bool:
    fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
    return attr in fields or hasattr(obj, attr)


def check_usage(code: str, kind: CardKind, name: str) -> None:
    """Raise :class:`CardError` when ``code`` calls or reads a name that does not exist for ``kind``.

    ``zoo.X`` must be in :mod:`zoo`; ``pipe`` (what ``zoo.load`` returns) must have the methods and
    attributes used on it, and ``pred = pipe(...)`` the output's; an entry without weights may not
    call ``zoo.load`` at all (it raises). A file fetched with ``hf_hub_download`` is one ``zoo push`` publishes:
    ``examples/<file>`` of this checkout, from a valid repository id, both written out.
    """
    import zoo

    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise CardError(f"{name}: the usage snippet is not valid Python ({err})") from None
    objects: dict[str, Any] = {"zoo": zoo}
    imported = _imported_names(tree, name)
    for repo_id, filename in _downloads(tree, name):
        _check_download(repo_id, filename, name)
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
            if called not in objects and called not in imported and called != "pipe" and not hasattr(builtins, called):
                raise CardError(f"{name}: the usage calls {called}(), which is not defined")


def downloaded_files(code: str, name: str) -> list[tuple[str, str]]:
    """``(repo_id, filename)`` of each ``hf_hub_download`` call of a usage snippet: what a push must publish."""
    try:
        return _downloads(ast.parse(code), name)
    except SyntaxError as err:
        raise CardError(f"{name}: the usage snippet is not valid Python ({err})") from None


def _downloads(tree: ast.Module, name: str) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hf_hub_download":
            given = {**dict(zip(("repo_id", "filename"), node.args)), **{k.arg: k.value for k in node.keywords}}
            repo_id, filename = given.get("repo_id"), given.get("filename")
            if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in (repo_id, filename)):
                raise CardError(f"{name}: the usage calls hf_hub_download without the repository id and file name "
                                "written out as strings, so a push cannot tell which file to publish")  # fmt: skip
            found.append((repo_id.value, filename.value))
    return found


def _check_download(repo_id: str, filename: str, name: str) -> None:
    from zoo.demo.examples import EXAMPLES_DIR

    problem = repo_id_problem(repo_id)
    if problem:
        raise CardError(f"{name}: the usage downloads from {repo_id!r}, which is no Hub repository id ({problem})")
    file = filename.removeprefix("examples/")
    if file == filename or Path(file).name != file or not (EXAMPLES_DIR / file).is_file():
        raise CardError(f"{name}: the usage downloads {filename!r}, which is no file of examples/ that zoo push "
                        "publishes; use one of the files in examples/")  # fmt: skip


def _imported_names(tree: ast.Module, name: str) -> set[str]:
    """Names the snippet imports, each checked to exist (found without running the module)."""
    import importlib.util

    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if importlib.util.find_spec(node.module) is None:
                raise CardError(f"{name}: the usage imports {node.module}, which does not exist")
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def write_card(name: str, out_dir: Path = CARDS_DIR) -> Path:
    """Render ``name``'s card into ``out_dir/<name>/README.md`` and return the path.

    The card is entry + record (:func:`render_card`); nothing a checkpoint folder names is imported
    or run, so rendering a colleague's checkpoint is as safe as reading it.
    """
    entry = info(name)
    path = Path(out_dir) / entry.name / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(render_card(entry)))
    return path
