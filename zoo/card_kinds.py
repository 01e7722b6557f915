"""What a model card says depends on the kind of entry: one :class:`CardKind` per spec class.

A VLM card shows ``pipe(image, question)`` and the authors' prompt; an open_clip card shows
zero-shot ``pipe(image, labels)`` and its template protocol; a diffusion card ``pipe(prompt)``; a
policy card steps its field's environment with ``pipe.act(observation)``; an entry without released weights shows no
``zoo.load`` at all (it would raise) and says what the zoo ships instead. A kind's ``usage`` is the one generator of
its snippet, for the docs' model page and the card alike: it feeds the entry the example its demo page opens with and
names each output as what it is, and a :class:`SnippetOrigin` says where the reader has the model and that example
from (a checkout of this repository, or the Hub repository ``zoo push`` published both to), so it runs as written.
The table, :data:`CARD_KINDS`, is a registry like the zoo's others, keyed by spec class, so a new kind without its own
row fails loudly (:func:`card_kind`) instead of reusing a VLM card, and a domain's own kinds are there whatever was
imported first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from zoo.domains import load_entries
from zoo.kinds import ClipSpec, DiffusionSpec, PolicySpec, VLMSpec
from zoo.registry import ModelEntry
from zoo_common.registry import Registry


class CardKindError(ValueError):
    """No card template fits the entry's kind."""


@dataclass(frozen=True)
class SnippetOrigin:
    """Where the reader of a usage snippet has the model and its example inputs from, so the snippet runs as written.

    Attributes:
        repo_id: the Hub repository ``zoo push`` published the model to, its example inputs under ``examples/``
            (the snippet fetches them with ``hf_hub_download``); ``None``: a checkout of this repository, the
            snippet run from its root (``examples/`` ships with it).
    """

    repo_id: str | None = None

    def load_line(self, entry: ModelEntry) -> str:
        """``pipe = zoo.load(...)``: the entry by name, or the published repository read as the entry says."""
        named = self.repo_id is None or self.repo_id == entry.repo_id
        model = f'"{entry.name}"' if named else f'"hf-hub:{self.repo_id}", entry="{entry.name}"'
        if entry.trust_remote_code:
            return f"pipe = zoo.load({model}, trust_remote_code=True)  # runs the repository's own code: read it first"
        return f"pipe = zoo.load({model})"

    def image_line(self, file: str) -> str:
        """``image = <the path of examples/<file>>``, as the reader can have it."""
        path = json.dumps(f"examples/{file}")
        if self.repo_id is None:
            return f"image = {path}  # shipped in examples/ of the repository"
        return f"image = hf_hub_download({json.dumps(self.repo_id)}, {path})  # published with the model"


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
        usage: the Python snippet for the entry, run where a :class:`SnippetOrigin` says the reader has the model and
            its example inputs (only names that exist for this kind; one generator for the card and the docs page).
        how_it_works: the paragraph under the snippet.
        tags: Hub tags of the kind.
    """

    label: str
    library_name: str | None
    pipeline_tag: str | None
    pipeline: str | None
    output: str | None
    usage: Callable[[ModelEntry, SnippetOrigin], str]
    how_it_works: Callable[[ModelEntry], str]
    tags: tuple[str, ...] = field(default=())


#: A snippet run from the root of a checkout of this repository (the docs' model pages, ``zoo card``).
CHECKOUT = SnippetOrigin()

#: Field -> the example image that fits its models, where the field ships one (``examples/``; its ``.json`` holds
#: the text, none for a picture that is the task).
FIELD_EXAMPLES = {"gui": "screen.png", "driving": "driving-scene.png", "visual_code": "svg-scene-circle.png"}

#: What any other image model is shown with: the GUI screenshot, and a question that fits any image.
ANY_IMAGE = ("screen.png", "What is shown in this image?")

#: The prompt of a text-to-image entry without an example of its own.
ANY_PROMPT = "a photo of a red apple on a wooden table"


def example_input(entry: ModelEntry) -> tuple[str | None, str]:
    """``(image file in examples/, text)`` the entry's snippet feeds it: its demo page's opening example, else its
    field's, else the GUI screenshot; a text-to-image entry gets a prompt and no file."""
    from zoo.demo.examples import Example, example_for

    own = example_for(entry.name)
    if entry.kind == "diffusion":
        return None, own.text or ANY_PROMPT
    if own.image_path() is not None:
        return str(own.image), own.prompt()
    image, text = (FIELD_EXAMPLES[entry.domain], None) if entry.domain in FIELD_EXAMPLES else ANY_IMAGE
    text = Example(image).prompt() if text is None else text
    if entry.kind == "vlm" and _template_is_the_task(getattr(entry.spec, "user", "")):
        text = ""  # the picture is the question (image to SVG): any text would be read as part of the task
    return image, text


def _template_is_the_task(user: str) -> bool:
    """A user template that states the whole task and only then leaves room for more (``"Convert ... {question}"``)."""
    return user.endswith("{question}") and bool(user.removesuffix("{question}").strip())


#: An import of this project's packages (isort's first-party section, after the libraries').
FIRST_PARTY = re.compile(r"(from|import) (zoo|zoo_common|domains|rewards)\b")


def _import_order(line: str) -> tuple[bool, str]:
    """isort's order within a section: ``import x`` lines first, then ``from x import y``, each by module."""
    return line.startswith("from"), line.split()[1]


def usage_snippet(entry: ModelEntry, origin: SnippetOrigin, body: list[str], *, image: str | None = None,
                  imports: tuple[str, ...] = ()) -> str:  # fmt: skip
    """The imports, ``pipe = zoo.load(...)``, ``image = <examples/image>`` where the body reads one, then ``body``.

    ``imports`` are the body's own import lines; the download helper is added where the image comes from the Hub."""
    if image is not None and origin.repo_id is not None:
        imports = (*imports, "from huggingface_hub import hf_hub_download")
    ours = sorted({"import zoo", *(line for line in imports if FIRST_PARTY.match(line))}, key=_import_order)
    others = sorted(set(imports) - set(ours), key=_import_order)
    lines = [*others, "", *ours] if others else ours
    lines += ["", origin.load_line(entry)]
    lines += [origin.image_line(image)] if image is not None else []
    return "\n".join([*lines, *body])


def _vlm_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    image, question = example_input(entry)
    asked = f"question = {json.dumps(question)}" + ("" if question else "  # the prompt template states the whole task")
    body = [asked, "prediction = pipe(image, question)  # a zoo.outputs.Prediction",
            "print(prediction.to_dict())  # raw text, parsed fields; boxes and points in the image's pixels"]
    body += [f'prediction = pipe(image, question, system="{v}")  # published prompt variant "{v}"'
             for v in entry.spec.variants if entry.spec.variants[v] != entry.spec.system]  # fmt: skip
    return usage_snippet(entry, origin, body, image=image)


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


def _clip_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    image, _ = example_input(entry)
    body = ['labels = ["a screenshot", "a photograph", "a drawing"]',
            "probabilities = pipe(image, labels)  # zero-shot: {label: probability}, the entry's caption templates",
            "print(max(probabilities, key=probabilities.get), probabilities)",
            'probabilities = pipe(image, labels, template=["a photo of {}.", "an image of {}."])  # your own templates',
            "similarity = pipe.embed_images([image]) @ pipe.embed_texts(labels).T  # retrieval: cosine similarities"]
    return usage_snippet(entry, origin, body, image=image)


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


def diffusion_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    """A text-to-image entry's snippet: its demo's first prompt, written inline (the input is no file)."""
    _, prompt = example_input(entry)
    return usage_snippet(entry, origin, [
        f"image_output = pipe({json.dumps(prompt)}, seed=0)  # a zoo.outputs.ImageOutput",
        'image_output.images[0].save("out.png")  # a PIL image; image_output.settings: steps, seed...',
    ])  # fmt: skip


def _diffusion_how(entry: ModelEntry) -> str:
    spec = entry.spec
    text = f"Samples with the authors' inference settings: {spec.num_inference_steps} steps"
    text += f", guidance {spec.guidance_scale}" if spec.guidance_scale is not None else ""
    text += f"; LoRA `{spec.lora_weight_name}` applied on `{spec.base_repo}`" if spec.base_repo else ""
    return text + ". `image_output.settings` records what was used, seed included."


def _policy_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    """A policy steps the environment its field registers (a zero observation where the field registers none)."""
    from zoo.domains import DOMAINS

    environments = list(DOMAINS.get(entry.domain).environments) if entry.domain in DOMAINS else []
    if len(environments) != 1:
        return usage_snippet(entry, origin, [
            f"action_output = pipe(np.zeros({entry.spec.observation_dim}))  # a zoo.outputs.ActionOutput",
            "print(action_output.first())  # (1, action_dim): the action to execute now",
        ], imports=("import numpy as np",))  # fmt: skip
    return usage_snippet(entry, origin, [
        f'env = make_environment("{environments[0]}")  # the environment the {entry.domain} field registers',
        "observation, info = env.reset(seed=0)",
        "pipe.reset()  # a new episode: forget queued actions",
        "for _ in range(20):",
        "    action = pipe.act(observation)  # the next action, in the environment's units",
        "    observation, reward, terminated, truncated, info = env.step(action)",
        "    if terminated or truncated:",
        "        break",
        "action_output = pipe(observation)  # a zoo.outputs.ActionOutput: .actions is (1, chunk, action_dim)",
        "print(action_output.first())",
    ], imports=("from zoo.engines.policy.envs import make_environment",))  # fmt: skip


def _policy_how(entry: ModelEntry) -> str:
    spec = entry.spec
    return (f"Observations of size {spec.observation_dim} in, actions of size {spec.action_dim} out "
            f"({spec.action_chunk} per call), normalised with `{spec.normalization}`, which travels with the weights.")  # fmt: skip


def _unreleased_usage(entry: ModelEntry, origin: SnippetOrigin) -> str:
    """No ``zoo.load`` (it would raise), wherever the reader is: what is published, in words."""
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
                                           diffusion_usage, _diffusion_how))
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
