"""Finding a model's files: local directory, shipped checkpoint, Hugging Face cache, download.

Resolution order (ARCHITECTURE.md §3), each step real ``huggingface_hub`` code:

1. ``name`` is an existing directory -> use it;
2. ``checkpoints/<name>/`` shipped in this repository;
3. the Hugging Face cache (``snapshot_download(..., local_files_only=True)``);
4. ``snapshot_download`` from the Hub, safetensors and configs only, at the entry's pinned
   revision. Fast transfers: ``huggingface_hub`` >= 1.0 uses hf-xet; set
   ``HF_XET_HIGH_PERFORMANCE=1`` (the old ``HF_HUB_ENABLE_HF_TRANSFER`` is ignored by it).

Every failure is a :class:`ModelNotAvailableError` whose message is the next thing to do.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import snapshot_download
from huggingface_hub.errors import (
    GatedRepoError,
    HFValidationError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import validate_repo_id

from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, info
from zoo_common.registry import UnknownNameError

logger = logging.getLogger(__name__)

#: What is fetched from a repository: weights as safetensors, configs, tokenizer and processor files.
#: Pickled weights (``*.bin``, ``*.pt``) are not; ``*.py`` only with trust_remote_code. The one exception
#: is an entry whose authors publish only a pickle (``ClipSpec.pickled_weights``): its pipeline fetches
#: that file and converts it tensors-only (:mod:`zoo.safe_weights`) before anything reads it.
ALLOW_PATTERNS = ["*.safetensors", "*.safetensors.index.json", "*.json", "*.jinja", "*.txt", "*.model", "*.tiktoken"]

#: Shipped checkpoints live next to the packages; ``ZOO_CHECKPOINTS`` points elsewhere.
CHECKPOINTS_DIR = Path(os.environ.get("ZOO_CHECKPOINTS", Path(__file__).resolve().parents[1] / "checkpoints"))


#: ``zoo.load("hf-hub:owner/name")`` loads that repository even when a registry name is spelt the same.
HUB_PREFIX = "hf-hub:"


def repo_id_problem(name: str) -> str | None:
    """Why ``name`` is not a Hub repository id ``owner/name`` (``None`` when it is one).

    The rules are the Hub's own (``huggingface_hub.utils.validate_repo_id``: each part 1-96 of
    ``[A-Za-z0-9_.-]``, not starting or ending with ``-`` or ``.``, no ``--`` or ``..``), so a dry run
    refuses exactly what the upload would, and ``../..`` or ``./x`` never pass as an id."""
    if not isinstance(name, str) or name.count("/") != 1:
        return f"a Hub repository id looks like 'owner/name', got {name!r}"
    try:
        validate_repo_id(name)
    except HFValidationError as err:
        return str(err)
    return None


def is_repo_id(name: str) -> bool:
    """True when ``name`` is a valid Hub repository id ``owner/name`` (``Qwen/Qwen2.5-VL-7B-Instruct``)."""
    return repo_id_problem(name) is None


class ModelNotAvailableError(RuntimeError):
    """The model's files cannot be had right now; the message says how to get them."""


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model's files are and how they were found.

    Attributes:
        path: local directory holding config, weights and processor files.
        revision: the commit hash of a Hub snapshot, or ``"local"`` for directories.
        source: ``local``, ``checkpoints``, ``cache`` or ``download``.
    """

    path: Path
    revision: str
    source: str


@dataclass(frozen=True)
class NamedModel:
    """What a model name points at: exactly one of a local directory, a registry entry, or a Hub
    repository the registry does not list (see :func:`lookup`)."""

    name: str
    directory: Path | None = None
    entry: ModelEntry | None = None
    repo_id: str | None = None

    @property
    def label(self) -> str:
        """How logs and generic entries call it: the entry's name, the repository id or the folder's name."""
        if self.entry is not None:
            return self.entry.name
        return self.directory.name if self.directory is not None else str(self.repo_id)

    def files(self, revision: str | None = None, *, trust_remote_code: bool = False) -> ResolvedModel:
        """Where the files are, without loading them: the directory as it is; the entry's shipped
        checkpoint, cache or download (:func:`resolve`); the repository's cache or download."""
        if self.directory is not None:
            return ResolvedModel(self.directory, "local", "local")
        if self.entry is not None:
            return resolve(self.entry, revision, trust_remote_code=trust_remote_code)
        assert self.repo_id is not None
        return resolve_repo(self.repo_id, revision, trust_remote_code=trust_remote_code)


def lookup(name: str) -> NamedModel:
    """The one reading of a model name, wherever the zoo takes one (``zoo.load``, a recipe's ``model.name``).

    In order: an existing directory; ``hf-hub:owner/name``; a registry name or alias; an
    ``owner/name`` Hub id the registry does not list (the instruct base models recipes start from,
    such as ``Qwen/Qwen2.5-VL-7B-Instruct``). Anything else is an unknown registry name, and the error
    suggests close matches. Nothing is downloaded here (:meth:`NamedModel.files` does that).
    """
    if not name or not name.strip():
        raise ValueError("empty model name; pass a registry name (`zoo list`), a Hub id or a directory")
    directory = Path(name).expanduser()
    if directory.is_dir():
        return NamedModel(name, directory=directory.resolve())
    if name.startswith(HUB_PREFIX):
        repo_id = name.removeprefix(HUB_PREFIX)
        if not is_repo_id(repo_id):
            raise ValueError(f"{name!r}: after {HUB_PREFIX!r} comes a Hub repository id, owner/name")
        return NamedModel(name, repo_id=repo_id)
    try:
        return NamedModel(name, entry=info(name))
    except UnknownNameError:
        if is_repo_id(name):
            return NamedModel(name, repo_id=name)
        raise


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set (read at call time, so tests and users can toggle it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def allow_patterns(entry: ModelEntry, trust_remote_code: bool = False) -> list[str]:
    """The files of ``entry``'s repository the zoo fetches: :data:`ALLOW_PATTERNS` (plus ``*.py`` with remote code).

    A full diffusers pipeline (a spec whose ``component_folders`` is true) keeps the weights ``from_pretrained``
    reads in its components' folders; the single-file checkpoints such repositories also carry at the root
    (FLUX.1-dev's 24 GB ``flux1-dev.safetensors``, SD3.5's ``sd3.5_medium.safetensors``) are left on the Hub.
    """
    patterns = ALLOW_PATTERNS + (["*.py"] if trust_remote_code else [])
    if getattr(entry.spec, "component_folders", False):
        patterns = [f"*/{p}" if p.startswith("*.safetensors") else p for p in patterns]
    return patterns


def download_command(entry: ModelEntry, revision: str | None) -> str:
    """The shell command that puts ``entry``'s files into the cache (what an offline user runs online)."""
    rev = f" --revision {revision}" if revision else ""
    includes = " ".join(f"--include '{p}'" for p in allow_patterns(entry))
    return f"hf download {entry.repo_id}{rev} {includes}"


def _gated_message(entry: ModelEntry) -> str:
    return (
        f"{entry.repo_id} is a gated repository (licence {entry.license}). To use {entry.name}:\n"
        f"  1. open https://huggingface.co/{entry.repo_id}, read the licence and request access"
        + (f" ({entry.notes})" if entry.notes else "")
        + "\n  2. once access is granted, log in on this machine: `hf auth login` (or set HF_TOKEN)\n"
        f"  3. retry, or pre-fetch with: {download_command(entry, entry.revision)}"
    )


def resolve(entry: ModelEntry, revision: str | None = None, *, trust_remote_code: bool = False) -> ResolvedModel:
    """Find ``entry``'s files (shipped checkpoint, cache, then download) without loading anything."""
    shipped = CHECKPOINTS_DIR / entry.name
    if shipped.is_dir() and revision is None:
        logger.info("%s: using the checkpoint shipped in %s", entry.name, shipped)
        return ResolvedModel(shipped, "local", "checkpoints")
    if entry.repo_id is None:
        if shipped.is_dir():  # only reached with a revision: a shipped checkpoint has no Hub history
            raise ModelNotAvailableError(
                f"{entry.name} is shipped in {shipped} and has no Hub repository, so revision={revision!r} "
                "cannot be resolved; call it without a revision"
            )
        if not entry.released:
            raise ModelNotAvailableError(
                f"{entry.name} has no public weights the zoo can load (none published, or only in a format it "
                f"will not unpickle). {entry.notes} "
                f"The zoo ships its recipe, reward and evaluation: see domains/{entry.domain}/README.md."
            )
        raise ModelNotAvailableError(
            f"{entry.name} is a checkpoint of this repository but {shipped} is missing; "
            "restore it with `git checkout -- checkpoints/` or rebuild it with the script named in its model card"
        )
    rev = revision or entry.revision
    patterns = allow_patterns(entry, trust_remote_code)
    try:
        path = snapshot_download(entry.repo_id, revision=rev, allow_patterns=patterns, local_files_only=True)
        source = "cache"
    except LocalEntryNotFoundError:
        if hub_offline():
            raise ModelNotAvailableError(
                f"{entry.name} ({entry.repo_id}{'@' + rev if rev else ''}) is not in the Hugging Face cache and "
                f"HF_HUB_OFFLINE is set. On a machine with network access run:\n  {download_command(entry, rev)}\n"
                "then copy the cache (HF_HOME) here, or unset HF_HUB_OFFLINE to download now."
                + ("\n" + _gated_message(entry) if entry.gated else "")
            ) from None
        path, source = _download(entry, rev, patterns), "download"
    snapshot = Path(path)
    logger.info("%s: %s @ %s (%s)", entry.name, entry.repo_id, snapshot.name, source)
    return ResolvedModel(snapshot, snapshot.name, source)


def _download(entry: ModelEntry, revision: str | None, patterns: list[str]) -> str:
    logger.info("%s: downloading %s%s", entry.name, entry.repo_id, f"@{revision}" if revision else "")
    try:
        return snapshot_download(entry.repo_id, revision=revision, allow_patterns=patterns)
    except GatedRepoError as err:
        raise ModelNotAvailableError(_gated_message(entry)) from err
    except RevisionNotFoundError as err:
        raise ModelNotAvailableError(
            f"{entry.repo_id} has no revision {revision!r}; pass an existing branch, tag or commit hash"
        ) from err
    except RepositoryNotFoundError as err:
        hint = _gated_message(entry) if entry.gated else "check the id, or log in if it is private (`hf auth login`)"
        raise ModelNotAvailableError(f"{entry.repo_id} was not found on the Hub or is not accessible. {hint}") from err
    except OSError as err:  # connection failures surface as OSError subclasses in huggingface_hub
        raise ModelNotAvailableError(
            f"could not download {entry.repo_id}: {err}. Check the network, or fetch it elsewhere with:\n"
            f"  {download_command(entry, revision)}"
        ) from err


def resolve_repo(repo_id: str, revision: str | None = None, *, trust_remote_code: bool = False) -> ResolvedModel:
    """Find the files of a Hub repository the registry does not list (cache, then download)."""
    unlisted = ModelEntry(name=repo_id, repo_id=repo_id, spec=VLMSpec(), architecture="unknown",
                          base_model="unknown", domain="unlisted", task="unlisted model")  # fmt: skip
    return resolve(unlisted, revision, trust_remote_code=trust_remote_code)
