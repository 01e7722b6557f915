"""Loaders of the image domain's entries: released weights on a base diffusers pipeline, and the EditScore judge.

* :func:`load_adapter_pipeline`: the base pipeline of the entry's ``base_entry`` (resolved through
  its catalog entry, so gated bases say how to get access), with a PEFT LoRA on its ``transformer``
  (Flow-GRPO, Adv-GRPO: what ``PeftModel.save_pretrained`` writes) or a full replacement
  ``transformer`` (DanceGRPO). Returns the zoo's :class:`~zoo.pipelines.diffusion.DiffusionPipeline`
  with the authors' steps, guidance and resolution.
* :func:`load_judge_pipeline`: a Qwen2.5-VL or Qwen3-VL with the EditScore LoRA merged in (as the authors'
  ``mllm_tools/qwen25vl.py`` and ``qwen3vl.py`` do), served by :class:`JudgePipeline`, the zoo's VLM pipeline
  with a batched several-images-per-question call in the judge's chat layout.
* :func:`load_omnigen2_pipeline`: diffusers has no OmniGen2 pipeline; it says what to run instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from domains.image.editscore import chat_text
from zoo.hub import ModelNotAvailableError, ResolvedModel, resolve, resolve_repo
from zoo.images import ImageInput
from zoo.load import WrongArchitectureError, from_pretrained_checked, load_vlm_weights
from zoo.pipelines.diffusion import DiffusionPipeline
from zoo.pipelines.vlm import VLMPipeline
from zoo.registry import ModelEntry, info

logger = logging.getLogger(__name__)

PEFT_CONFIG = "adapter_config.json"


def _weights_dir(entry: ModelEntry, resolved: ResolvedModel) -> Path:
    folder = Path(resolved.path) / (entry.spec.subfolder or "")
    expected = PEFT_CONFIG if entry.spec.adapter_format == "peft-lora" else "config.json"
    if not (folder / expected).is_file() or not any(folder.glob("*.safetensors")):
        found = ", ".join(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else "no such folder"
        raise WrongArchitectureError(
            f"{entry.name}: expected {expected} and *.safetensors weights ({entry.spec.adapter_format}) in {folder}; "
            f"found {found}"
        )
    return folder


def load_adapter_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> DiffusionPipeline:
    """The base entry's diffusers pipeline with ``entry``'s weights on its denoiser (safetensors only)."""
    from diffusers import DiffusionPipeline as DiffusersPipeline

    spec = entry.spec
    weights = _weights_dir(entry, resolved)  # before the (large) base is read
    base = resolve(info(spec.base_entry))
    pipe = DiffusersPipeline.from_pretrained(base.path, dtype=dtype, use_safetensors=True)
    if spec.adapter_format == "peft-lora":
        from peft import PeftModel

        pipe.transformer = PeftModel.from_pretrained(pipe.transformer, weights)
        if spec.merge:
            pipe.transformer = pipe.transformer.merge_and_unload()
    else:
        pipe.transformer = from_pretrained_checked(type(pipe.transformer), weights, dtype=dtype, use_safetensors=True)
    pipe.set_progress_bar_config(disable=True)
    logger.info("%s: %s weights from %s on %s (%s)", entry.name, spec.adapter_format, weights, spec.base_entry, base.source)
    return DiffusionPipeline(pipe.to(device), entry, resolved)


def load_omnigen2_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> Any:
    """Refuse with the way to run OmniGen2: diffusers (0.42.1) has no ``OmniGen2Pipeline``."""
    import diffusers

    raise ModelNotAvailableError(
        f"{entry.name}: the LoRA is at {resolved.path}, but OmniGen2 is not a diffusers pipeline (diffusers "
        f"{diffusers.__version__} has no OmniGen2Pipeline; its OmniGenPipeline is OmniGen v1, another architecture). "
        "To sample it, use the authors' code: clone github.com/VectorSpaceLab/OmniGen2, then "
        f"`OmniGen2Pipeline.from_pretrained('{entry.spec.base_repo_id}')` and "
        f"`pipe.load_lora_weights('{resolved.path}', weight_name='pytorch_lora_weights.safetensors')` with "
        f"{entry.spec.num_inference_steps} steps, text guidance {entry.spec.guidance_scale}, image guidance "
        f"{entry.spec.image_guidance_scale}, time_shift_base_res {entry.spec.time_shift_base_res} and negative "
        f"prompt {entry.spec.negative_prompt!r} at {entry.spec.width}x{entry.spec.height} (the authors' GEdit-Bench "
        "scripts), the negative prompt in their --use_ori_neg_prompt_template form: pass the call "
        "`**domains.image.gedit.omnigen2_negative_prompt_embeds(pipe, device)`. Within the zoo, score any editor's "
        "outputs with the 'editscore' reward, "
        "or evaluate a diffusers editing pipeline (FluxKontextPipeline, QwenImageEditPipeline) on GEdit-Bench with "
        "`zoo eval hf-hub:<repo> --data gedit-bench --path <GEdit-Bench folder>`."
    )


class JudgePipeline(VLMPipeline):
    """A VLM reward model: the zoo's VLM pipeline plus :meth:`ask`, several images per question, batched."""

    @torch.inference_mode()
    def ask(
        self, image_sets: Sequence[Sequence[ImageInput]], prompts: Sequence[str], *, seed: int | None = None,
        batch_size: int = 8, **generation: Any,
    ) -> list[str]:
        """The judge's raw answers, one per ``(images, prompt)``, in the authors' chat layout (:func:`chat_text`).

        Sampling defaults are the entry's (EditScore: temperature 0.7, top-p 0.9, top-k 20, 512 new tokens);
        ``seed`` seeds torch once before the first batch, so a call is reproducible.
        """
        if len(image_sets) != len(prompts):
            raise ValueError(f"got {len(image_sets)} image sets for {len(prompts)} prompts; pass one set per prompt")
        spec = self.entry.spec
        kwargs = {"max_new_tokens": spec.max_new_tokens, "do_sample": True, "temperature": spec.temperature,
                  "top_p": spec.top_p, "top_k": spec.top_k, **generation}  # fmt: skip
        if seed is not None:
            torch.manual_seed(seed)
        answers: list[str] = []
        for start in range(0, len(prompts), batch_size):
            sets, texts = image_sets[start : start + batch_size], prompts[start : start + batch_size]
            images = [self.prepare(image)[1] for images in sets for image in images]
            chats = [self.chat(text, len(images)) for text, images in zip(texts, sets)]
            inputs = self.processor(text=chats, images=images, padding=True, return_tensors="pt").to(self.device)
            self._check_context(inputs["input_ids"].shape[1], kwargs["max_new_tokens"])
            output = self.model.generate(**inputs, **kwargs)
            decoded = self.processor.batch_decode(output[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
            answers += [text.strip() for text in decoded]
        return answers


    def chat(self, prompt: str, num_images: int) -> str:
        """One question's chat text in the entry's layout (:attr:`domains.image.specs.JudgeSpec.chat_layout`)."""
        if self.entry.spec.chat_layout == "editscore":
            return chat_text(prompt, num_images)
        content = [{"type": "image"}] * num_images + [{"type": "text", "text": prompt}]
        return self.processor.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                  add_generation_prompt=True)  # fmt: skip


def load_judge_pipeline(entry: ModelEntry, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> JudgePipeline:
    """The base VLM with the entry's LoRA merged in, and the base's processor (as the authors load them)."""
    from peft import PeftModel
    from transformers import AutoProcessor

    if not (Path(resolved.path) / PEFT_CONFIG).is_file():
        raise WrongArchitectureError(f"{entry.name}: {resolved.path} has no {PEFT_CONFIG}; expected a PEFT LoRA adapter")
    base = resolve_repo(entry.spec.base_repo_id)
    model = load_vlm_weights(base.path, dtype=dtype)
    model = PeftModel.from_pretrained(model, resolved.path).merge_and_unload()
    processor = AutoProcessor.from_pretrained(base.path)
    processor.tokenizer.padding_side = "left"  # batched generation appends after the prompt
    return JudgePipeline(model.to(device).eval(), processor, entry, resolved)
