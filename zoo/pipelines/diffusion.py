"""Diffusion and flow models through diffusers, with the entry's sampling settings.

``pipe("a red square")`` returns an :class:`~zoo.outputs.ImageOutput`. The diffusers pipeline
class is read from the directory's ``model_index.json`` (``DiffusionPipeline.from_pretrained``),
so any pipeline diffusers can run loads; the entry's :class:`~zoo.kinds.DiffusionSpec` supplies
the authors' steps, guidance and resolution, and its LoRA file when the entry is an adapter on a
base pipeline. Weights are read as safetensors only.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from zoo.hub import ResolvedModel
from zoo.model_files import read_json
from zoo.outputs import ImageOutput
from zoo.registry import ModelEntry

logger = logging.getLogger(__name__)


class DiffusionPipeline:
    """A diffusers pipeline with the entry's sampling defaults and a seeded, typed call.

    Attributes:
        pipe: the diffusers pipeline (its components are swappable as diffusers allows).
        entry: the catalog entry it was loaded for.
        revision, source: how the files were found (recorded for reproducibility).
    """

    def __init__(self, pipe: Any, entry: ModelEntry, resolved: ResolvedModel) -> None:
        self.pipe = pipe
        self.entry = entry
        self.revision = resolved.revision
        self.source = resolved.source
        self._accepts = set(inspect.signature(pipe.__call__).parameters)

    @property
    def call_parameters(self) -> frozenset[str]:
        """What the diffusers pipeline's ``__call__`` takes (``image`` marks an editing pipeline)."""
        return frozenset(self._accepts - {"self", "kwargs"})

    def __repr__(self) -> str:
        return f"DiffusionPipeline({self.entry.name!r}, {type(self.pipe).__name__}, revision={self.revision!r})"

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """The sampling keyword arguments: the entry's defaults, then ``overrides``, kept to what the
        pipeline accepts (an unconditional pipeline takes no guidance)."""
        spec = self.entry.spec
        defaults = {"num_inference_steps": spec.num_inference_steps, "guidance_scale": spec.guidance_scale,
                    "height": spec.height, "width": spec.width}  # fmt: skip
        merged = {k: v for k, v in {**defaults, **overrides}.items() if v is not None}
        unknown = [k for k in overrides if k not in self._accepts]
        if unknown:
            raise TypeError(f"{type(self.pipe).__name__} takes no {', '.join(unknown)}; it accepts "
                            f"{', '.join(sorted(self._accepts - {'self', 'kwargs'}))}")  # fmt: skip
        return {k: v for k, v in merged.items() if k in self._accepts}

    @torch.inference_mode()
    def __call__(self, prompt: str | Sequence[str] | None = None, *, seed: int | None = 0, **kwargs: Any) -> ImageOutput:
        """Generate images for ``prompt`` (a string or a list; ``None`` for unconditional models).

        Args:
            prompt: text prompt(s); unconditional pipelines take none.
            seed: seeds the generator so the same call gives the same images; ``None`` leaves it random.
            **kwargs: sampling settings passed to the diffusers pipeline (``num_inference_steps``, ...).
        """
        settings = self.settings(**kwargs)
        device = getattr(self.pipe, "device", torch.device("cpu"))
        generator = torch.Generator(device=device).manual_seed(seed) if seed is not None else None
        call = dict(settings, generator=generator, output_type="pil")
        prompts: list[str | None]
        if prompt is None:
            if "prompt" in self._accepts:
                raise ValueError(f"{self.entry.name} is text-conditioned; pass a prompt")
            prompts = [None] * int(call.get("batch_size", 1))
        else:
            if "prompt" not in self._accepts:
                raise ValueError(f"{self.entry.name} is unconditional; call it without a prompt")
            prompts = [prompt] if isinstance(prompt, str) else list(prompt)
            call["prompt"] = prompts
        images = list(self.pipe(**call).images)
        if len(images) != len(prompts):  # num_images_per_prompt > 1
            per = len(images) // max(1, len(prompts))
            prompts = [p for p in prompts for _ in range(per)]
        return ImageOutput(images=images, prompts=prompts, settings={**settings, "seed": seed})


def absent_components(directory: str | Path, skipped: tuple[str, ...] = ()) -> dict[str, None]:
    """``{name: None}`` for the components ``model_index.json`` records as ``[null, null]``, and for those of
    ``skipped`` it lists (components the caller never calls, so they are not loaded).

    diffusers saves a pipeline built without a component (an SD3 pipeline without its T5 encoder) that
    way, but refuses to load it back unless each such component is passed as ``None``.
    """
    index = Path(directory) / "model_index.json"
    if not index.is_file():
        return {}
    entries = read_json(index)
    return {name: None for name, value in entries.items() if value == [None, None] or name in skipped}


def load_diffusion_pipeline(
    entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: torch.dtype
) -> DiffusionPipeline:
    """Load the diffusers pipeline (safetensors only): ``resolved.path``, or the entry's base pipeline
    with the LoRA of ``resolved.path`` applied."""
    from diffusers import DiffusionPipeline as DiffusersPipeline

    spec = entry.spec
    source = resolved.path
    if spec.base_repo is not None:
        from zoo.hub import resolve_repo

        source = resolve_repo(spec.base_repo).path
    pipe = DiffusersPipeline.from_pretrained(source, dtype=dtype, use_safetensors=True, **absent_components(source))
    if spec.lora_weight_name:
        pipe.load_lora_weights(resolved.path, weight_name=spec.lora_weight_name)
    pipe.set_progress_bar_config(disable=True)
    return DiffusionPipeline(pipe.to(device), entry, resolved)
