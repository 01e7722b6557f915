"""The model catalog: :class:`ModelEntry` records, discovered from the domains.

The catalog is data. Importing :mod:`zoo` loads no model code; entries are frozen
dataclasses that a domain's ``entries.py`` registers. ``zoo`` never names a
domain: it imports every ``domains.<name>.entries`` module it finds, plus any
module advertised under the ``zoo.domains`` entry-point group by another
distribution, so a new field is a new folder and nothing else.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from rewards.registry import Registry

logger = logging.getLogger(__name__)

Kind = Literal["vlm", "diffusion", "edit", "policy", "reward_model", "clip"]
CoordFrame = Literal["resized", "norm1000", "original", "none"]


@dataclass(frozen=True)
class PromptSpec:
    """How the authors prompt the model and how it sees the image.

    Attributes:
        user: user-turn template; ``{question}`` is replaced by the caller's text.
        system: system prompt, or ``None`` when the authors use none.
        variants: other named system prompts the authors publish (``{"cod": "..."}``).
        min_pixels: smallest image area fed to the vision tower (qwen-vl-utils ``min_pixels``).
        max_pixels: largest image area fed to the vision tower (qwen-vl-utils ``max_pixels``).
        coord_frame: frame of the coordinates the model emits: ``resized`` (absolute pixels on
            the smart-resized image, Qwen2.5-VL), ``norm1000`` (0-1000, Qwen3-VL),
            ``original`` or ``none``.
        max_new_tokens: the authors' generation budget.
        image_first: the image comes before the text in the user turn (Qwen's default layout).
    """

    user: str = "{question}"
    system: str | None = None
    variants: dict[str, str] = field(default_factory=dict)
    min_pixels: int = 4 * 28 * 28
    max_pixels: int = 16384 * 28 * 28
    coord_frame: CoordFrame = "resized"
    max_new_tokens: int = 512
    image_first: bool = True

    def __hash__(self) -> int:  # dict field: hash on the immutable parts
        return hash((self.user, self.system, tuple(sorted(self.variants)), self.min_pixels, self.max_pixels))


@dataclass(frozen=True)
class ModelEntry:
    """One pretrained model of the zoo: where its weights live and how to talk to it.

    Attributes:
        name: lowercase kebab-case registry key (``patho-r1-7b``).
        repo_id: Hugging Face repository, or ``None`` for models shipped in ``checkpoints/``
            or not released yet (``released=False``).
        revision: pinned commit or tag; ``None`` follows ``main``.
        kind: which pipeline serves it (``vlm``, ``clip``, ``diffusion``, ...).
        architecture: the HF ``model_type`` (or open_clip model name) the weights must have.
        base_model: what it was fine-tuned from.
        domain: the ``domains/<domain>`` folder that registered it.
        task: what it does, in a few words (``pathology MCQ``).
        prompt: the authors' prompt and image settings.
        parser: ``parser(text, question) -> dict`` turns the model's raw text into task fields
            (``think``, ``answer``, ``bbox``...) in the model's coordinate frame, with ``parse_error``
            set instead of raising when the text does not follow the format.
        license: SPDX-style licence id of the weights.
        gated: the Hub repository requires accepting terms before download.
        paper: arXiv id.
        aliases: other accepted names.
        released: ``False`` for systems without public weights (recipe/reward/eval only).
        trust_remote_code: the weights need custom code; still only used when the caller opts in.
        notes: anything a user must know (licence terms, intended use).
    """

    name: str
    repo_id: str | None
    kind: Kind
    architecture: str
    base_model: str
    domain: str
    task: str
    prompt: PromptSpec = field(default_factory=PromptSpec)
    parser: Callable[[str, str], dict[str, Any]] | None = None
    license: str = "unknown"
    gated: bool = False
    paper: str | None = None
    aliases: tuple[str, ...] = ()
    revision: str | None = None
    released: bool = True
    trust_remote_code: bool = False
    notes: str = ""


MODELS: Registry[ModelEntry] = Registry("model")
_discovered = False


def register(entry: ModelEntry) -> ModelEntry:
    """Add a model entry to the catalog (called from a domain's ``entries.py``)."""
    return MODELS.register(entry.name, entry, entry.aliases)


def discover_domains() -> list[str]:
    """Import every domain's ``entries`` module once; returns the domain names found."""
    global _discovered
    found: list[str] = []
    try:
        import domains
    except ImportError:  # installed without the domains package
        domains = None
    if domains is not None:
        for mod in sorted(pkgutil.iter_modules(domains.__path__), key=lambda m: m.name):
            if mod.ispkg:
                importlib.import_module(f"domains.{mod.name}.entries")
                found.append(mod.name)
    for ep in entry_points(group="zoo.domains"):
        if ep.value.split(".")[0] != "domains":
            importlib.import_module(ep.value)
            found.append(ep.name)
    _discovered = True
    return found


def _ensure() -> None:
    if not _discovered:
        discover_domains()


def list_models(domain: str | None = None, kind: str | None = None) -> list[str]:
    """Names of registered models, optionally only one domain's or one kind's."""
    _ensure()
    names = MODELS.list()
    return [
        n
        for n in names
        if (domain is None or MODELS.get(n).domain == domain) and (kind is None or MODELS.get(n).kind == kind)
    ]


def info(name: str) -> ModelEntry:
    """The :class:`ModelEntry` for ``name`` (alias and case tolerant; close matches on a miss)."""
    _ensure()
    return MODELS.get(name)
