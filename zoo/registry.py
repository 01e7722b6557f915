"""The model catalog: :class:`ModelEntry` records, registered by the domains.

The catalog is data. Importing :mod:`zoo` loads no model code; entries are frozen dataclasses
that a domain's entries module registers when the catalog is first read (:mod:`zoo.domains`
finds the domains). Each entry holds the spec of its kind (:mod:`zoo.kinds`), which says how
the weights are used and which pipeline serves them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from zoo.domains import load_entries
from zoo.kinds import ClipSpec, DiffusionSpec, KindSpec, PolicySpec, VLMSpec
from zoo_common.registry import Registry

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    """One pretrained model of the zoo: where its weights live and how to use them.

    Attributes:
        name: lowercase kebab-case registry key (``patho-r1-7b``).
        repo_id: Hugging Face repository, or ``None`` for models shipped in ``checkpoints/``
            or not released yet (``released=False``).
        spec: how the weights are used, of the entry's kind (:class:`~zoo.kinds.VLMSpec`,
            :class:`~zoo.kinds.ClipSpec`, :class:`~zoo.kinds.DiffusionSpec`, :class:`~zoo.kinds.PolicySpec`).
        architecture: the HF ``model_type`` (or open_clip model name) the weights must have.
        base_model: what it was fine-tuned from.
        domain: the ``domains/<domain>`` folder that registered it.
        task: what it does, in a few words (``pathology MCQ``).
        license: SPDX-style licence id of the weights the entry loads (the Hub card's ``license``),
            ``unknown`` when no weights are published.
        gated: the Hub repository requires accepting terms before download.
        paper: arXiv id.
        aliases: other accepted names.
        revision: pinned commit or tag; ``None`` follows ``main``.
        released: ``False`` for systems without public weights (recipe/reward/eval only).
        trust_remote_code: the weights need custom code; still only used when the caller opts in.
        notes: anything a user must know (licence terms, intended use).
        license_source: where ``license`` was read (Hub card and commit, or the page stating it).
        code_license: licence of the authors' code repository when it differs from the weights'
            (UI-S1: MIT code, Apache-2.0 weights); ``None`` when the same or unknown.
        revision_note: where a pinned ``revision`` was read, or why it is ``None`` for an entry with a Hub repository.
        rl_methods: RL algorithms the released weights went through (``("grpo", "dapo")``);
            empty for models that were not RL-tuned (a CLIP, an SFT-only model).
    """

    name: str
    repo_id: str | None
    spec: KindSpec
    architecture: str
    base_model: str
    domain: str
    task: str
    license: str = "unknown"
    gated: bool = False
    paper: str | None = None
    aliases: tuple[str, ...] = ()
    revision: str | None = None
    released: bool = True
    trust_remote_code: bool = False
    notes: str = ""
    license_source: str = ""
    code_license: str | None = None
    revision_note: str = ""
    rl_methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.spec, VLMSpec | ClipSpec | DiffusionSpec | PolicySpec):
            raise TypeError(f"entry {self.name!r}: spec must be a zoo.kinds spec, got {type(self.spec).__name__}")

    @property
    def kind(self) -> str:
        """The model kind (``vlm``, ``clip``, ``diffusion``, ``policy``), from the spec."""
        return self.spec.kind


#: The catalog; its first miss or listing imports every domain's entries module.
MODELS: Registry[ModelEntry] = Registry("model", discover=load_entries)


def register(entry: ModelEntry) -> ModelEntry:
    """Add a model entry to the catalog (called from a domain's entries module)."""
    return MODELS.register(entry.name, entry, entry.aliases)


def list_models(domain: str | None = None, kind: str | None = None) -> list[str]:
    """Names of registered models, optionally only one domain's or one kind's."""
    return [
        n
        for n in MODELS.list()
        if (domain is None or MODELS.get(n).domain == domain) and (kind is None or MODELS.get(n).kind == kind)
    ]


def info(name: str) -> ModelEntry:
    """The :class:`ModelEntry` for ``name`` (alias and case tolerant; close matches on a miss)."""
    return MODELS.get(name)
