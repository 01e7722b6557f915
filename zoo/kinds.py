"""What each kind of model needs to be used correctly: one frozen spec class per kind.

A :class:`~zoo.registry.ModelEntry` holds the spec of its kind (as timm's pretrained cfg travels
with the weights): a VLM needs the authors' prompt, pixel limits, coordinate frame and output
parser; a contrastive model its architecture's prompt templates; a diffusion model its pipeline
class and sampling defaults; a policy its observation/action sizes and normalisation file. The
spec class also names the pipeline that serves the kind, so :func:`zoo.load` has one table to
read and a new kind is one new spec class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

CoordFrame = Literal["resized", "norm1000", "original", "none"]

Parser = Callable[[str, str], dict[str, Any]]
"""``parser(text, question) -> dict`` of task fields, with ``parse_error`` set instead of raising."""

#: Where the image goes in a user template whose text comes both before and after it (Shuffle-R1 asks
#: ``"<thinking prompt> <image><question>"``); a template without it has the image first or last (``image_first``).
IMAGE_SLOT = "<image>"


@dataclass(frozen=True)
class VLMSpec:
    """How the authors prompt a vision-language model, how it sees the image, how to read its text.

    Attributes:
        user: user-turn template; ``{question}`` is replaced by the caller's text.
        system: system prompt, or ``None`` when the authors use none.
        variants: other named system prompts the authors publish (``{"cod": "..."}``); an empty one
            means no system prompt (Visual-RFT trains without the one it infers with).
        templates: other named user templates the authors ask other kinds of question with (Curr-ReFT's
            curriculum stages: ``{"judge": "{question} ... exactly 'yes' or 'no'."}``). A training sample
            picks one with ``meta["template"]``; the pipeline with ``template=``.
        min_pixels: smallest image area fed to the vision tower (qwen-vl-utils ``min_pixels``).
        max_pixels: largest image area fed to the vision tower (qwen-vl-utils ``max_pixels``).
        coord_frame: frame of the coordinates the model emits: ``resized`` (absolute pixels on
            the smart-resized image, Qwen2.5-VL), ``norm1000`` (0-1000, Qwen3-VL),
            ``original`` or ``none``.
        max_new_tokens: the authors' generation budget.
        generation: the authors' sampling settings for ``model.generate`` (``{"do_sample": True,
            "temperature": 0.1, "top_p": 1.0}``); empty means greedy decoding.
        image_first: the image comes before the text in the user turn (Qwen's default layout); a template
            holding :data:`IMAGE_SLOT` puts it there instead.
        parser: turns the model's raw text into task fields (``think``, ``answer``, ``bbox``...) in
            the model's coordinate frame; ``None`` keeps the raw text only.
    """

    kind: ClassVar[str] = "vlm"
    pipeline: ClassVar[str] = "zoo.pipelines.vlm:load_vlm_pipeline"

    user: str = "{question}"
    system: str | None = None
    variants: dict[str, str] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    min_pixels: int = 4 * 28 * 28
    max_pixels: int = 16384 * 28 * 28
    coord_frame: CoordFrame = "resized"
    max_new_tokens: int = 512
    generation: dict[str, Any] = field(default_factory=dict)
    image_first: bool = True
    parser: Parser | None = None

    def __hash__(self) -> int:  # dict field: hash on the immutable parts
        return hash((self.user, self.system, tuple(sorted(self.variants)), tuple(sorted(self.templates)),
                     self.min_pixels, self.max_pixels, tuple(sorted(self.generation.items()))))

    def user_text(self, question: str, template: str | None = None) -> str:
        """The user turn's text for ``question``, as the authors wrap it (inference and training alike):
        in their default template, or in the named one of :attr:`templates`."""
        if template and template not in self.templates:
            known = ", ".join(sorted(self.templates)) or "none"
            raise ValueError(f"no user template {template!r}; the authors publish: {known}")
        return (self.templates[template] if template else self.user).replace("{question}", question)

    def user_content(self, question: str, image: dict[str, Any], template: str | None = None) -> list[dict[str, Any]]:
        """The user turn's parts: ``image`` (a chat ``{"type": "image", ...}`` part) where the template's
        :data:`IMAGE_SLOT` is, else first or last as :attr:`image_first` says, and the wrapped question as text."""
        chosen = self.user_text("{question}", template)  # the template itself (an unknown name is refused)
        if IMAGE_SLOT not in chosen:
            part = {"type": "text", "text": chosen.replace("{question}", question)}
            return [image, part] if self.image_first else [part, image]
        before, after = ({"type": "text", "text": t.replace("{question}", question)} for t in chosen.split(IMAGE_SLOT, 1))
        return [p for p in (before, image, after) if p is image or p["text"]]

    @property
    def image_inside(self) -> bool:
        """Whether a user template puts the image between two texts (:data:`IMAGE_SLOT`)."""
        return any(IMAGE_SLOT in t for t in (self.user, *self.templates.values()))

    def asks_a_question(self, template: str | None = None) -> bool:
        """Whether the user turn carries the user's question (``{question}`` in the template): a blank question is
        then no question, and is refused; a template that is the whole task (a chart to redraw) needs none."""
        return "{question}" in (self.templates[template] if template in self.templates else self.user)

    def system_prompt(self, variant: str | None = None) -> str | None:
        """The system prompt: a named variant (``"cod"``), a prompt of the caller's own, or the authors' default."""
        return self.variants.get(variant, variant) if variant else self.system


@dataclass(frozen=True)
class ClipSpec:
    """A contrastive image-text model (open_clip).

    Attributes:
        templates: caption templates for zero-shot labels (``"a photo of {label}."``); the pipeline
            averages the text embeddings over them, as CLIP's zero-shot protocol does.
        pickled_weights: file patterns of pickled state dicts the authors publish instead of
            safetensors (Patho-CLIP's ``*.pt``). They are fetched and converted once to safetensors
            with ``torch.load(weights_only=True)`` (:mod:`zoo.safe_weights`); never unpickled freely.
    """

    kind: ClassVar[str] = "clip"
    pipeline: ClassVar[str] = "zoo.pipelines.clip:load_clip_pipeline"

    templates: tuple[str, ...] = ("{label}",)
    pickled_weights: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiffusionSpec:
    """A diffusers pipeline and the authors' sampling settings.

    Attributes:
        num_inference_steps: denoising steps the authors sample with.
        guidance_scale: classifier-free guidance scale (``None``: the pipeline's default or none).
        height, width: output resolution (``None``: the pipeline's default).
        base_repo: Hub repository of the base pipeline when the entry's repository holds only a LoRA
            (Flow-GRPO's adapters on SD3.5); ``None`` when the repository is a full pipeline.
        lora_weight_name: file of LoRA weights in the entry's repository, applied on ``base_repo``.
    """

    kind: ClassVar[str] = "diffusion"
    pipeline: ClassVar[str] = "zoo.pipelines.diffusion:load_diffusion_pipeline"

    num_inference_steps: int = 28
    guidance_scale: float | None = None
    height: int | None = None
    width: int | None = None
    base_repo: str | None = None
    lora_weight_name: str | None = None

    @property
    def component_folders(self) -> bool:
        """The repository is a whole pipeline whose weights live in its components' folders (``transformer/``,
        ``vae/``, ...): root-level single-file checkpoints are not fetched (:func:`zoo.hub.allow_patterns`)."""
        return self.base_repo is None


@dataclass(frozen=True)
class PolicySpec:
    """A control policy: observation in, action out.

    Attributes:
        observation_dim: length of the flat observation vector.
        action_dim: length of one action.
        action_chunk: actions predicted per call (chunked policies execute them in order).
        normalization: file (in the model directory) with the observation/action statistics that
            travel with the weights.
    """

    kind: ClassVar[str] = "policy"
    pipeline: ClassVar[str] = "zoo.pipelines.policy_architectures:load_policy_pipeline"

    observation_dim: int = 0
    action_dim: int = 0
    action_chunk: int = 1
    normalization: str = "normalization.json"


KindSpec = VLMSpec | ClipSpec | DiffusionSpec | PolicySpec

#: kind name -> spec class: the one table of model kinds.
SPECS: dict[str, type] = {cls.kind: cls for cls in (VLMSpec, ClipSpec, DiffusionSpec, PolicySpec)}
