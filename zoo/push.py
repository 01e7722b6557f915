"""Publish a model folder to the Hugging Face Hub the way the ecosystem expects it.

What goes up is decided here and shown before anything is sent (``--dry-run``): the safetensors
weights, the config / generation / processor / tokenizer files at the top of the folder, the
rendered and validated model card as ``README.md`` (:func:`zoo.cards.render_card`) and
``training.json`` when the checkpoint has one, and the example inputs the card's usage snippet fetches
(``examples/<file>`` of this checkout, which the card downloads with ``hf_hub_download`` from the repository
pushed to: the snippet runs as written for someone who has only that repository). Pickled weights (``.bin``,
``.pt``...) are refused: loading them runs code (the zoo only loads safetensors, and so should the people who download).
Sub-folders (an SFT warm start, optimiser states) stay behind. Only what lies inside the folder goes:
a symlink (or a symlinked component folder) that leads out of it, say ``vocab.json ->
~/.cache/huggingface/token``, refuses the whole push before anything is read, staged or sent, and a
``model_index.json`` may name only plain sub-folders as components. The upload itself is
``huggingface_hub``'s ``create_repo`` + ``upload_folder``; the commit it makes is recorded in
``model_cards/<name>/hub_revisions.json`` so an entry can pin it (``ModelEntry.revision``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from zoo.demo.examples import EXAMPLES_DIR
from zoo.hub import CHECKPOINTS_DIR, hub_offline, repo_id_problem
from zoo.model_files import CONFIG_FILES, read_json
from zoo.registry import ModelEntry, info

#: Files a model folder needs besides its weights: its kind's config (:data:`zoo.model_files.CONFIG_FILES`),
#: generation, processor, tokenizer and normalisation files, and the training record.
MODEL_FILES = frozenset({
    *CONFIG_FILES.values(), "generation_config.json", "processor_config.json", "preprocessor_config.json",
    "video_preprocessor_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "added_tokens.json", "vocab.json", "merges.txt", "chat_template.jinja", "chat_template.json",
    "model.safetensors.index.json", "training.json", "normalization.json", "scheduler_config.json",
    "metrics.csv",  # a shipped checkpoint's training log, next to training.json
})  # fmt: skip
#: Weight formats that unpickle (and so can run code) when loaded.
PICKLE_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


class PushError(ValueError):
    """The folder cannot be published as it is; the message says what to change."""


@dataclass(frozen=True)
class PushPlan:
    """Everything one push would send.

    Attributes:
        name: the registry entry whose card is published.
        repo_id: the target Hub repository (``org/name``).
        source: the local model folder.
        files: paths, relative to ``source``, uploaded as they are.
        card: the rendered ``README.md``.
        card_assets: the card's figures (a training curve) from ``model_cards/<name>/``, as (name, bytes).
        private: create the repository private.
        skipped: what in ``source`` is left behind, with why.
        examples: the example inputs the card's usage downloads, as ``examples/<file>`` (copied from this checkout).
    """

    name: str
    repo_id: str
    source: Path
    files: tuple[str, ...]
    card: str
    private: bool
    card_assets: tuple[tuple[str, bytes], ...] = ()
    skipped: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def describe(self) -> str:
        """The files (with sizes) and the card, as ``zoo push --dry-run`` prints them."""
        visibility = "private" if self.private else "public"
        lines = [f"would push {self.name} from {self.source} to https://huggingface.co/{self.repo_id} ({visibility}):"]
        for rel in self.files:
            lines.append(f"  {rel}  ({(self.source / rel).stat().st_size:,} bytes)")
        lines.append(f"  README.md  ({len(self.card.encode()):,} bytes, rendered model card)")
        lines += [f"  {asset}  ({len(data):,} bytes, a figure of the card)" for asset, data in self.card_assets]
        lines += [f"  {example}  ({(EXAMPLES_DIR.parent / example).stat().st_size:,} bytes, the card's example input)"
                  for example in self.examples]  # fmt: skip
        lines += [f"left behind: {s}" for s in self.skipped]
        return "\n".join(lines + ["", "--- README.md ---", self.card])


def source_folder(entry: ModelEntry, source: str | None) -> Path:
    """The folder to publish: ``source`` when given, else the checkpoint this repository ships."""
    if source is not None:
        folder = Path(source)
        if not folder.is_dir():
            raise PushError(f"--source {source!r} is not a directory")
        return folder
    shipped = CHECKPOINTS_DIR / entry.name
    if shipped.is_dir():
        return shipped
    raise PushError(
        f"{entry.name} has no folder in {CHECKPOINTS_DIR}: `zoo push` publishes weights you have locally. "
        f"Pass --source DIR (e.g. a training run's final/ folder) to publish it under {entry.name}'s card."
    )


def _pipeline_components(folder: Path) -> set[str]:
    """The component sub-folders a diffusers pipeline's ``model_index.json`` names (none for other models).

    A component name is a folder name inside ``folder``: one that is a path (``../outside``, ``a/b``,
    absolute) is refused, as it would list, stage and send files from elsewhere."""
    index = folder / CONFIG_FILES["diffusion"]
    if not index.is_file():
        return set()
    _refuse_links_out(folder, [index])  # read it only if it is the folder's own
    entries = read_json(index)
    if not isinstance(entries, dict):
        raise PushError(f"{index} is not a JSON object; it cannot describe a diffusers pipeline")
    named = {k for k, v in entries.items() if isinstance(v, list) and v != [None, None]}
    paths = sorted(k for k in named if k in ("", "..") or Path(k).name != k)
    if paths:
        raise PushError(f"{index} names components {paths}, which are not plain sub-folder names; refusing to push")
    return {k for k in named if (folder / k).is_dir()}


def _files(folder: Path) -> list[Path]:
    """The folder's files, and those of its pipeline components (relative paths ``component/file``)."""
    components = _pipeline_components(folder)
    _refuse_links_out(folder, [folder / c for c in sorted(components)])  # before listing what they lead to
    nested = [p for c in sorted(components) for p in sorted((folder / c).iterdir()) if not p.is_dir()]
    return sorted([p for p in folder.iterdir() if p.name not in components], key=lambda p: p.name) + nested


def _refuse_links_out(folder: Path, paths: list[Path]) -> None:
    """Raise :class:`PushError` naming every path among ``paths`` that resolves outside ``folder``, and where to.

    A handed folder can hold ``vocab.json -> ~/.cache/huggingface/token`` or ``vae -> ~/.docker``:
    following the link would upload the target under an allow-listed name. Resolving reads the links
    only, never their targets; a link that stays inside the folder is fine."""
    root = folder.resolve()
    resolved = {path: path.resolve() for path in paths}
    outside = [f"{path.relative_to(folder)} -> {target}" for path, target in resolved.items()
               if not target.is_relative_to(root)]  # fmt: skip
    if outside:
        raise PushError(f"{folder} holds links to files outside it ({'; '.join(outside)}): refusing to push; "
                        "copy the files you mean to publish into the folder")  # fmt: skip


def select_files(folder: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files to upload, things left behind); raises :class:`PushError` on pickled or missing weights.

    A diffusers pipeline's component folders (``transformer/``, ``vae/``, ...) go up whole, as
    ``from_pretrained`` reads them; other sub-folders stay behind."""
    files = _files(folder)
    pickled = sorted(str(p.relative_to(folder)) for p in files if p.is_file() and p.suffix in PICKLE_WEIGHTS)
    if pickled:
        raise PushError(
            f"{folder} holds pickled weights {pickled}: refusing to publish them. Convert with "
            "`model.save_pretrained(folder, safe_serialization=True)` and remove the pickles, then push again."
        )
    candidates: list[Path] = []
    skipped: list[str] = []
    for path in files:
        rel = str(path.relative_to(folder))
        if path.is_dir():
            skipped.append(f"{rel}/ (sub-folder: not part of the published model)")
        elif path.suffix == ".safetensors" or path.name in MODEL_FILES or path.name.endswith("_curve.png"):
            candidates.append(path)
        elif rel != "README.md":  # the card is rendered afresh
            skipped.append(f"{rel} (not a weights, config, processor, tokenizer or training-record file)")
    _refuse_links_out(folder, candidates)
    # the links left stay inside: a dangling one or a FIFO (which would block the copy) stays behind
    skipped += [f"{p.relative_to(folder)} (not a regular file)" for p in candidates if not p.is_file()]
    keep = [str(p.relative_to(folder)) for p in candidates if p.is_file()]
    if not any(name.endswith(".safetensors") for name in keep):
        raise PushError(f"{folder} has no *.safetensors weights; save the model with safe_serialization=True")
    if not any(name in keep for name in CONFIG_FILES.values()):
        raise PushError(f"{folder} has none of {', '.join(CONFIG_FILES.values())}; save the model with its library's "
                        "save_pretrained() (zoo.pipelines.policy.save_policy for a policy) before pushing")
    return tuple(keep), tuple(skipped)


def plan_push(name: str, repo_id: str, *, private: bool = False, source: str | None = None) -> PushPlan:
    """Work out the push of ``name`` to ``repo_id`` without touching the network."""
    problem = repo_id_problem(repo_id)
    if problem:
        raise PushError(f"--repo-id {repo_id!r} is not a Hub repository id 'org/name': {problem}")
    entry = info(name)
    if entry.gated:
        raise PushError(f"{entry.name} is gated by its authors ({entry.license}): re-publishing it would bypass "
                        "their access terms. Push only models you trained and may redistribute.")  # fmt: skip
    folder = source_folder(entry, source)
    files, skipped = select_files(folder)
    from zoo.card_kinds import SnippetOrigin
    from zoo.cards import CARDS_DIR, downloaded_files, render_card, usage_code

    card = str(render_card(entry, origin=SnippetOrigin(repo_id)))
    examples = tuple(sorted({file for _, file in downloaded_files(usage_code(card, entry.name), entry.name)}))
    card_dir = CARDS_DIR / entry.name  # the card's figures (a training curve) live beside its README
    assets = tuple((p.name, p.read_bytes()) for p in sorted(card_dir.iterdir()) if p.name != "README.md"
                   and p.is_file() and not p.is_symlink()) if card_dir.is_dir() else ()  # fmt: skip
    clash = sorted({a for a, _ in assets} & set(files))
    if clash:
        raise PushError(f"{card_dir} has {clash}, which the model folder also has; rename one of them")
    return PushPlan(entry.name, repo_id, folder, files, card, private, assets, skipped, examples)


def push(plan: PushPlan, record_dir: Path = Path("model_cards")) -> dict[str, str]:
    """Create the repository (if needed), upload the planned files in one commit, record the revision.

    The folder is checked again for links leading out of it before anything is sent: it may have
    changed since :func:`plan_push` looked."""
    if hub_offline():
        raise PushError("HF_HUB_OFFLINE is set: nothing can be uploaded. Use --dry-run to see the push.")
    _refuse_links_out(plan.source, [plan.source / rel for rel in plan.files])
    from huggingface_hub import HfApi

    api = HfApi()
    repo = api.create_repo(plan.repo_id, repo_type="model", private=plan.private, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        staged = stage(plan, Path(tmp))
        commit = api.upload_folder(repo_id=plan.repo_id, folder_path=str(staged), repo_type="model",
                                   commit_message=f"zoo push {plan.name}")  # fmt: skip
    record = {
        "name": plan.name, "repo_id": plan.repo_id, "revision": commit.oid, "commit_url": commit.commit_url,
        "repo_url": str(repo), "files": published(plan),
        "pushed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }  # fmt: skip
    _append_record(Path(record_dir) / plan.name / "hub_revisions.json", record)
    return record


def published(plan: PushPlan) -> list[str]:
    """The repository's files after the push, as paths in it."""
    return [*plan.files, "README.md", *(a for a, _ in plan.card_assets), *plan.examples]


def stage(plan: PushPlan, folder: Path) -> Path:
    """Write exactly what the push uploads into ``folder`` (the files, the card, its figures, its example inputs)."""
    folder.mkdir(parents=True, exist_ok=True)
    for rel in plan.files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(plan.source / rel, folder / rel)
    (folder / "README.md").write_text(plan.card)
    for asset, data in plan.card_assets:
        (folder / asset).write_bytes(data)
    for example in plan.examples:
        (folder / example).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EXAMPLES_DIR.parent / example, folder / example)
    return folder


def _append_record(path: Path, record: dict[str, str]) -> None:
    history = json.loads(path.read_text()) if path.is_file() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*history, record], indent=1) + "\n")
