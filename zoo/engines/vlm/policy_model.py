"""The policy a VLM recipe trains: a tiny model built offline, a local directory, a zoo entry, a Hub base model
or the checkpoint a resumed run wrote; and the LoRA adapters it gets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zoo.recipe import RecipeError

if TYPE_CHECKING:
    from peft import LoraConfig

    from zoo.data import Sample
    from zoo.engines.vlm.recipe import ModelConfig, VLMRLRecipe
    from zoo.precision import Precision
    from zoo.recipe import TrainingBase

#: How a recipe opts in to code shipped with its model.
_OPT_IN = "model.trust_remote_code: true (or --set model.trust_remote_code=true)"


class PolicyRecipe(Protocol):
    """What the policy is built from: the ``model`` and ``training`` sections that every VLM recipe has
    (the GRPO family's :class:`~zoo.engines.vlm.recipe.VLMRLRecipe`, the ``vlm-sft`` engine's ``SFTRecipe``).

    A protocol rather than a union of the two classes, so this module, which both engines import,
    imports neither engine back.
    """

    @property
    def model(self) -> ModelConfig: ...

    @property
    def training(self) -> TrainingBase: ...


def policy_precision(recipe: PolicyRecipe, *, cuda: bool) -> Precision:
    """The run's :class:`~zoo.precision.Precision`: ``model.dtype`` computes (``auto``: bf16 on a GPU, float32 on
    the CPU) over float32 master weights, unless ``training.fp32_master_weights`` is false."""
    from zoo.precision import PrecisionError, resolve

    try:
        return resolve(recipe.model.dtype, fp32_master_weights=recipe.training.fp32_master_weights, cuda=cuda)
    except PrecisionError as err:
        raise RecipeError(str(err)) from None


def load_dtype(recipe: PolicyRecipe, precision: Precision) -> Any:
    """The dtype the policy's weights are loaded in: the master dtype of trained weights, or for LoRA (whose
    adapters peft creates in float32 over a frozen base) the compute dtype of the base."""
    lora = getattr(recipe.training, "lora", None)
    return precision.dtype("frozen" if lora is not None and lora.enabled else "trained")


def load_policy(
    recipe: PolicyRecipe, samples: list[Sample] | None = None, corpus: list[str] | None = None, *,
    precision: Precision | None = None,
) -> tuple[Any, Any]:
    """``(model, processor)`` for ``recipe.model.name``: ``tiny:<arch>``, a local directory or a zoo name, its
    weights in :func:`load_dtype` of ``precision`` (default: the CPU's, :func:`policy_precision`).

    A ``tiny:`` model's tokenizer learns ``corpus`` (default: the prompts and targets of ``samples``)
    unless ``model.tiny`` gives its own.
    """
    from transformers import AutoProcessor

    from zoo.load import load_vlm_weights

    name = recipe.model.name
    dtype = load_dtype(recipe, precision or policy_precision(recipe, cuda=False))
    if name.startswith("tiny:"):
        from zoo.tiny import DEFAULT_CORPUS, build_tiny_vlm

        kwargs = dict(recipe.model.tiny)
        kwargs.setdefault("seed", recipe.training.seed)
        kwargs.setdefault("added_tokens", added_tokens(recipe.model.added_tokens))
        if "corpus" not in kwargs:
            kwargs["corpus"] = [DEFAULT_CORPUS, *(corpus if corpus is not None else _corpus(samples or []))]
        arch = name.split(":", 1)[1]
        if arch not in ("qwen2_5_vl", "qwen3_vl"):
            raise RecipeError(f"model.name={name!r}: tiny models are tiny:qwen2_5_vl or tiny:qwen3_vl")
        model, processor = build_tiny_vlm(arch, **kwargs)
        set_pixel_limits(processor, *pixel_limits(recipe))
        return model.to(dtype), processor
    source, revision = policy_source(recipe)
    trust = recipe.model.trust_remote_code
    model = load_vlm_weights(source, dtype=dtype, revision=revision, trust_remote_code=trust)
    processor = AutoProcessor.from_pretrained(source, revision=revision, trust_remote_code=trust)
    set_pixel_limits(processor, *pixel_limits(recipe))
    missing = [t for t in added_tokens(recipe.model.added_tokens) if t not in processor.tokenizer.get_vocab()]
    if missing:
        processor.tokenizer.add_tokens(missing)
        # new rows start at the mean embedding (transformers' default), not at random vectors
        model.resize_token_embeddings(len(processor.tokenizer), mean_resizing=True)
    return model, processor


def resumed_policy(recipe: PolicyRecipe, checkpoint: Path) -> tuple[Any, Any]:
    """``(model, processor)`` saved in a run's ``checkpoint``: a resumed run goes on from the weights it wrote
    (in the dtype they were saved in: the float32 masters of a mixed-precision run), not from ``recipe.model.name``."""
    from transformers import AutoProcessor

    from zoo.load import load_vlm_weights

    trust = recipe.model.trust_remote_code
    return (load_vlm_weights(checkpoint, trust_remote_code=trust),
            AutoProcessor.from_pretrained(checkpoint, trust_remote_code=trust))  # fmt: skip



def peft_config(recipe: VLMRLRecipe) -> LoraConfig | None:
    """A peft ``LoraConfig`` when ``training.lora.enabled``, else ``None`` (full fine-tune)."""
    lora = recipe.training.lora
    if not lora.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        # Only language-model projections: the vision tower's attention is named qkv/proj, so these
        # names leave it frozen, as the papers do.
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
    )


def pixel_limits(recipe: PolicyRecipe) -> tuple[int | None, int | None]:
    """``(min_pixels, max_pixels)`` for the policy's processor: ``model.min_pixels``/``model.max_pixels``
    when set, else the limits of ``model.entry`` (the contract the run trains with) or of the zoo entry
    ``model.name`` is (its authors' resolution), else ``None`` (the processor keeps its own)."""
    from zoo.hub import lookup
    from zoo.kinds import VLMSpec

    model = recipe.model
    entry = None if model.name.startswith("tiny:") or model.entry else lookup(model.name).entry
    spec = model.contract() or (entry.spec if entry is not None and isinstance(entry.spec, VLMSpec) else None)
    return (model.min_pixels if model.min_pixels is not None else getattr(spec, "min_pixels", None),
            model.max_pixels if model.max_pixels is not None else getattr(spec, "max_pixels", None))


def set_pixel_limits(processor: Any, min_pixels: int | None, max_pixels: int | None) -> None:
    """Resize images within ``[min_pixels, max_pixels]`` (``None`` keeps the processor's bound).

    Set on the image processor's ``size``, which ``save_pretrained`` writes, so a checkpoint the run saves
    is read back (``zoo eval``, ``zoo.load``) at the resolution it was trained at.
    """
    if min_pixels is None and max_pixels is None:
        return
    size = processor.image_processor.size
    low = size["shortest_edge"] if min_pixels is None else min_pixels
    high = size["longest_edge"] if max_pixels is None else max_pixels
    if low > high:
        raise RecipeError(f"model.min_pixels={low} is above model.max_pixels={high} (a bound left unset is the "
                          "processor's own); set both")
    processor.image_processor.size = {"shortest_edge": low, "longest_edge": high}


def added_tokens(target: str | None) -> list[str]:
    """The strings ``model.added_tokens`` names (``"package.module:NAME"``), or none."""
    from zoo.recipe import import_named

    if target is None:
        return []
    tokens = import_named("model.added_tokens", target, expected=(list, tuple))
    if not all(isinstance(t, str) for t in tokens):
        raise RecipeError(f"model.added_tokens={target!r} must name a sequence of strings")
    return list(tokens)


def policy_source(recipe: PolicyRecipe) -> tuple[str, str | None]:
    """``(path or repo id, revision)`` of a non-tiny ``recipe.model.name``, read as :func:`zoo.hub.lookup`
    reads every model name.

    A local directory or a zoo name is checked as :func:`zoo.load` checks it (safetensors weights;
    code shipped with the model only with ``model.trust_remote_code``); a Hub repository the registry
    does not list (the instruct base models the recipes start from, e.g. ``Qwen/Qwen2.5-VL-7B-Instruct``)
    is loaded at ``model.revision`` with ``use_safetensors=True``.
    """
    from zoo.hub import hub_offline, lookup
    from zoo.load import require_safetensors
    from zoo.remote_code import require_opt_in

    name, trust = recipe.model.name, recipe.model.trust_remote_code
    named = lookup(name)
    if named.repo_id is not None:
        if hub_offline():  # found in the cache, or the zoo's "hf download ..." line instead of transformers' own
            named.files(recipe.model.revision, trust_remote_code=trust)
        return named.repo_id, recipe.model.revision
    if named.entry is not None and named.entry.trust_remote_code and not trust:
        raise RecipeError(f"model.name={name!r} runs code from its repository; read it, then set {_OPT_IN}")
    path = named.files(recipe.model.revision, trust_remote_code=trust).path
    try:
        require_safetensors(path)
        require_opt_in(path, trust, how=_OPT_IN)
    except ValueError as err:
        raise RecipeError(f"model.name={name!r}: {err}") from err
    return str(path), None


def _corpus(samples: list[Sample]) -> list[str]:
    """Prompt and target text, so a tiny tokenizer learns the task's words as whole tokens."""
    texts = []
    for sample in samples[:512]:
        texts.append(sample.question)
        texts.extend(str(v) for v in sample.target.values())
    return texts
