"""What a model card says depends on the kind of entry: one :class:`CardKind` per spec class.

A VLM card shows ``pipe(image, question)`` and the authors' prompt; an open_clip card shows
zero-shot ``pipe(image, labels)`` and its template protocol; a diffusion card ``pipe(prompt)``; a
policy card ``pipe(observation)``; an entry without released weights shows no ``zoo.load`` at all
(it would raise) and says what the zoo ships instead. The table, :data:`CARD_KINDS`, is a registry like the
zoo's others, keyed by spec class, so a new kind without its own row fails loudly (:func:`card_kind`) instead of
reusing a VLM card, and a domain's own kinds are there whatever was imported first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zoo.domains import load_entries
from zoo.kinds import ClipSpec, DiffusionSpec, PolicySpec, VLMSpec
from zoo.registry import ModelEntry
from zoo_common.registry import Registry


class CardKindError(ValueError):
    """No card template fits the entry's kind."""


@dataclass(frozen=True)
class CardKind:
    """How one kind of entry is presented on its card.

    Attributes:
        label: the kind in words, shown in the card's table.
        library_name: Hub ``library_name`` of the weights (``None``: not a Hub library).
        pipeline_tag: Hub ``pipeline_tag``.
        pipeline: ``module:Class`` of the object ``zoo.load`` returns (``pipe`` in the usage), or
            ``None`` when the usage must not load anything.
        output: ``module:Class`` of ``pipe(...)``'s result (``None``: a plain dict or nothing).
        usage: the Python snippet for the entry (only names that exist for this kind).
        how_it_works: the paragraph under the snippet.
        tags: Hub tags of the kind.
    """

    label: str
    library_name: str | None
    pipeline_tag: str | None
    pipeline: str | None
    output: str | None
    usage: Callable[[ModelEntry], str]
    how_it_works: Callable[[ModelEntry], str]
    tags: tuple[str, ...] = field(default=())


def load_line(entry: ModelEntry) -> str:
    """``pipe = zoo.load(...)``, with the remote-code opt-in spelled out when the entry needs it."""
    opt_in = ", trust_remote_code=True)  # runs the repository's own code: read it first" if entry.trust_remote_code else ")"
    return f'pipe = zoo.load("{entry.name}"{opt_in}'


def _vlm_usage(entry: ModelEntry) -> str:
    lines = ["import zoo", "", load_line(entry), 'pred = pipe("image.png", "your question")',
             "print(pred.to_dict())"]  # fmt: skip
    lines += [f'pred = pipe("image.png", "your question", system="{v}")  # published prompt variant "{v}"'
              for v in entry.spec.variants if entry.spec.variants[v] != entry.spec.system]  # fmt: skip
    return "\n".join(lines)


def _vlm_how(entry: ModelEntry) -> str:
    spec = entry.spec
    prompt = "system prompt + user template" if spec.system else "user template, no system prompt"
    parser = getattr(spec.parser, "__name__", None)
    text = (f"The pipeline applies the authors' prompt ({prompt}) and resizes images with qwen-vl-utils within "
            f"{spec.min_pixels}–{spec.max_pixels} pixels. ")  # fmt: skip
    text += f"It parses the text with `{parser}`" if parser else "It returns the raw text (no parser)"
    if spec.coord_frame == "none":
        text += "; this model answers in text and emits no coordinates."
    else:
        text += ", and returns coordinates in the pixels of the image you pass in."
    if spec.variants:
        text += " Prompt variants (`system=`): " + ", ".join(f"`{v}`" for v in spec.variants) + "."
    return text


def _clip_usage(entry: ModelEntry) -> str:
    return "\n".join([
        "import zoo",
        "",
        load_line(entry),
        'probs = pipe("image.png", ["tumor", "normal tissue"])  # zero-shot: {label: probability}',
        'probs = pipe("image.png", ["tumor", "normal tissue"], template=["An H&E image of {}.", "a photomicrograph of {}"])',
        'scores = pipe.embed_images(["image.png"]) @ pipe.embed_texts(["a caption"]).T  # retrieval',
    ])  # fmt: skip


def _clip_how(entry: ModelEntry) -> str:
    text = (
        "Zero-shot protocol: each label is written into every caption template of a template set, the "
        "L2-normalised text embeddings are averaged per label (CLIP's prompt ensembling), and the "
        "probabilities are a softmax over the model's logit scale times cosine similarity. Without "
        f"`template=` the entry's templates are used ({', '.join(repr(t) for t in entry.spec.templates)}). "
        "Retrieval ranks captions by the cosine similarity of normalised embeddings."
    )
    if entry.spec.pickled_weights:
        text += (
            " The authors publish a pickled checkpoint; on first load it is read tensors-only "
            "(`torch.load(weights_only=True)`, anything else refused) and cached as safetensors."
        )
    return text


def _diffusion_usage(entry: ModelEntry) -> str:
    return "\n".join(["import zoo", "", load_line(entry), 'out = pipe("a prompt", seed=0)',
                      'out.images[0].save("out.png")'])  # fmt: skip


def _diffusion_how(entry: ModelEntry) -> str:
    spec = entry.spec
    text = f"Samples with the authors' inference settings: {spec.num_inference_steps} steps"
    text += f", guidance {spec.guidance_scale}" if spec.guidance_scale is not None else ""
    text += f"; LoRA `{spec.lora_weight_name}` applied on `{spec.base_repo}`" if spec.base_repo else ""
    return text + ". `out.settings` records what was used, seed included."


def _policy_usage(entry: ModelEntry) -> str:
    return "\n".join(["import zoo", "", load_line(entry), "pipe.reset()  # new episode",
                      "action = pipe.act(observation)  # one observation in, the next action out",
                      "chunk = pipe(observation).first()  # or the whole batch's first actions"])  # fmt: skip


def _policy_how(entry: ModelEntry) -> str:
    spec = entry.spec
    return (f"Observations of size {spec.observation_dim} in, actions of size {spec.action_dim} out "
            f"({spec.action_chunk} per call), normalised with `{spec.normalization}`, which travels with the weights.")  # fmt: skip


def _unreleased_usage(entry: ModelEntry) -> str:
    return "\n".join(["import zoo", "", f'entry = zoo.info("{entry.name}")  # paper, licence, what is published',
                      "print(entry.notes)"])  # fmt: skip


def _unreleased_how(entry: ModelEntry) -> str:
    return (
        "**No weights are published for this model**, so `zoo.load` cannot return it. What the zoo ships "
        "is its own recipe, rewards and evaluation in the style of the paper (see `zoo domains` and "
        f"`domains/{entry.domain}/README.md`), to run on a base model you choose. It does not ship the "
        "authors' weights, nor their prompts or reward formulas, which are unpublished."
    )


CARD_KINDS: Registry[CardKind] = Registry("card kind", discover=load_entries)
"""Spec class (:func:`spec_key`) -> its card presentation. The built-in kinds are below; a domain's entries module
registers its own spec classes' rows (:func:`register_card_kind`), found on the first miss or listing."""


def spec_key(spec_class: type) -> str:
    """The name a spec class's row is registered under: its import string (``zoo.kinds:VLMSpec``)."""
    return f"{spec_class.__module__}:{spec_class.__qualname__}"


def register_card_kind(spec_class: type, kind: CardKind) -> CardKind:
    """Give a domain's own spec class (a VLM with its own pipeline, say) its card presentation."""
    try:
        return CARD_KINDS.register(spec_key(spec_class), kind)
    except ValueError:
        raise ValueError(f"{spec_class.__name__} already has a different card kind") from None


register_card_kind(VLMSpec, CardKind("vision-language model", "transformers", "image-text-to-text",
                                     "zoo.pipelines.vlm:VLMPipeline", "zoo.outputs:Prediction", _vlm_usage, _vlm_how))
register_card_kind(ClipSpec, CardKind("contrastive image-text model (open_clip)", "open_clip",
                                      "zero-shot-image-classification", "zoo.pipelines.clip:ClipPipeline", None,
                                      _clip_usage, _clip_how, ("clip",)))
register_card_kind(DiffusionSpec, CardKind("diffusion / flow image generator", "diffusers", "text-to-image",
                                           "zoo.pipelines.diffusion:DiffusionPipeline", "zoo.outputs:ImageOutput",
                                           _diffusion_usage, _diffusion_how))
register_card_kind(PolicySpec, CardKind("control policy", None, "reinforcement-learning",
                                        "zoo.pipelines.policy:PolicyPipeline", "zoo.outputs:ActionOutput",
                                        _policy_usage, _policy_how, ("robotics",)))

UNRELEASED = CardKind("not released (recipe, rewards and evaluation only)", None, None, None, None,
                      _unreleased_usage, _unreleased_how)  # fmt: skip


def kind_of(spec_class: type, entry: ModelEntry | None = None) -> CardKind:
    """The card presentation of entries whose spec is a ``spec_class`` (exactly that class: a subclass is a new
    kind, which fails here instead of borrowing its parent's card); ``entry`` names the entry in the error."""
    key = spec_key(spec_class)
    if key not in CARD_KINDS:
        what = f"{entry.name!r} of kind {entry.kind!r} ({spec_class.__name__})" if entry else spec_class.__name__
        raise CardKindError(f"no model-card template for {what}; register one with "
                            "zoo.card_kinds.register_card_kind in the entries module that defines its spec class")
    return CARD_KINDS.get(key)


def card_kind(entry: ModelEntry) -> CardKind:
    """The card presentation of ``entry``: ``UNRELEASED`` without weights, else its spec class's row."""
    return kind_of(type(entry.spec), entry) if entry.released else UNRELEASED
