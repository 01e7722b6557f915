"""A transformers VLM as the policy of a multi-turn rollout: batched sampling and per-token log-probabilities.

The rollout (:mod:`zoo.engines.vlm.semi_online_rollout`) hands over :class:`Turn` s (chat messages
with image placeholders, and their images); here they become the model's inputs through the
processor's own chat template, so the prompt the policy is sampled with is token for token the
prompt its log-probabilities are computed on. Prompts are left-padded for generation, and in
:func:`turn_logps` the (left-padded) prompts are followed by the (right-padded) answer ids, TRL's
layout, so one forward pass scores a whole micro-batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from zoo.data import Sample
from zoo.engines.vlm.semi_online_rollout import Generation, StepRecord, Turn
from zoo.recipe import RecipeError


def model_frame_size(processor: Any, size: Sequence[int]) -> tuple[int, int]:
    """``(width, height)`` the processor resizes a ``size`` image to (Qwen-VL smart resize)."""
    from zoo_common.coords import resized_size_for

    ip = processor.image_processor
    factor = int(ip.patch_size) * int(getattr(ip, "merge_size", 2))
    limits = getattr(ip, "size", None) or {}
    min_pixels = getattr(ip, "min_pixels", None) or limits.get("shortest_edge")
    max_pixels = getattr(ip, "max_pixels", None) or limits.get("longest_edge")
    return resized_size_for(size, factor, min_pixels, max_pixels)


def _images(turns: Sequence[Turn]) -> list[Any] | None:
    from zoo.images import load_image

    images = [load_image(image) for turn in turns for image in turn.images]
    return images or None


def _prompts(processor: Any, turns: Sequence[Turn]) -> list[str]:
    return [processor.apply_chat_template(t.messages, add_generation_prompt=True, tokenize=False) for t in turns]


def _encode_prompts(processor: Any, turns: Sequence[Turn]) -> dict[str, torch.Tensor]:
    tokenizer = processor.tokenizer
    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    try:
        return processor(text=_prompts(processor, turns), images=_images(turns), padding=True, return_tensors="pt")
    finally:
        tokenizer.padding_side = side


def check_prompt_lengths(turns: Sequence[Turn], attention_mask: torch.Tensor, limit: int | None) -> None:
    """Refuse a turn whose encoded prompt (``attention_mask``'s ones, image tokens included) is longer than ``limit``
    tokens (``data.max_prompt_length``; ``None``: no limit), naming its step sample: ``data.truncation: error``, as
    UI-S1's rollout stops on one (X-PLUG/MobileAgent@11cea575:UI-S1/verl/utils/dataset/universal_multiround.py:100-107
    through verl/utils/torch_functional.py:364-365)."""
    if limit is None:
        return
    for turn, length in zip(turns, attention_mask.sum(dim=1).tolist()):
        if length > limit:
            raise RecipeError(f"sample {turn.sample_id!r}: this turn's prompt is {length} tokens (image tokens "
                              f"included), above data.max_prompt_length={limit}; raise the limit, or lower "
                              "model.max_pixels or multi_turn.image_limit")  # fmt: skip


def _vision_placeholder_ids(processor: Any) -> list[int]:
    """Ids of the processor's image/video placeholder tokens, which an answer must never contain."""
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is None:
        return []
    unknown = getattr(tokenizer, "unk_token_id", None)
    names = [getattr(processor, name, None) for name in ("image_token", "video_token")]
    ids = [tokenizer.convert_tokens_to_ids(name) for name in names if isinstance(name, str)]
    return sorted({i for i in ids if isinstance(i, int) and i != unknown})


class VLMPolicy:
    """``policy(turns) -> generations``: sampled answers of a transformers VLM, with their token ids; a turn whose
    prompt is longer than ``max_prompt_length`` tokens is refused before any is sampled (:func:`check_prompt_lengths`)."""

    def __init__(self, model: Any, processor: Any, *, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 max_new_tokens: int = 64, do_sample: bool = True, device: torch.device | None = None,
                 max_prompt_length: int | None = None) -> None:  # fmt: skip
        self.model, self.processor, self.device = model, processor, device
        self.max_prompt_length = max_prompt_length
        # synced_gpus off: transformers turns it on for an FSDP-managed model and then all-reduces a flag at every
        # token, but the zoo's sharded loops decode on the gathered model (zoo.sharding.gathered), each rank its own
        # number of answers, with no collective to wait for
        self.generation: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": do_sample, "synced_gpus": False}
        placeholders = _vision_placeholder_ids(processor)
        if placeholders:  # a sampled <|image_pad|> in an answer breaks the next turn's image/token count
            self.generation["suppress_tokens"] = placeholders
        if do_sample:  # the whole sampler, so the model's generation_config (Qwen2.5-VL's top_k 1, repetition
            # penalty 1.05) cannot turn sampled rollouts into near-greedy ones; top_k 0 (or verl's -1) keeps every token
            self.generation.update(temperature=temperature, top_p=top_p, top_k=max(top_k, 0), repetition_penalty=1.0)

    def in_model_frame(self, sample: Sample) -> Sample:
        """``sample`` with ``target["resized_size"]``: the frame this model sees its screenshot in."""
        from zoo.images import load_image

        size = sample.target.get("image_size") or list(load_image(sample.images[0]).size)
        return replace(sample, target={**sample.target, "resized_size": list(model_frame_size(self.processor, size))})

    @torch.no_grad()
    def __call__(self, turns: Sequence[Turn]) -> list[Generation]:
        device = self.device or next(self.model.parameters()).device
        inputs = _encode_prompts(self.processor, turns)
        check_prompt_lengths(turns, inputs["attention_mask"], self.max_prompt_length)
        inputs = inputs.to(device)
        tokenizer = self.processor.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        output = self.model.generate(**inputs, **self.generation, pad_token_id=pad)
        out = []
        for row in output[:, inputs["input_ids"].shape[1] :].tolist():
            ids = row[: row.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in row else row
            while ids and ids[-1] == pad and pad != tokenizer.eos_token_id:
                ids = ids[:-1]
            out.append(Generation(tokenizer.decode(ids, skip_special_tokens=True), tuple(ids)))
        return out


def turn_logps(
    model: Any, processor: Any, records: Sequence[StepRecord], temperature: float = 1.0, device: torch.device | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logps, mask)``, both (B, T): log-probabilities of each record's answer ids given its turn.

    Under the sampling ``temperature`` (``log_softmax(logits / temperature)``, as TRL and verl score
    their rollouts): the policy gradient is that of the distribution the answers were drawn from.
    At 1.0 (UI-S1's setting) the division is a no-op; at any other temperature, scoring the raw
    logits would push on a distribution nobody sampled from. ``device``: where the model computes (default: its first
    parameter's; a CPU-offloaded shard lives on the CPU and computes on its rank's GPU)."""
    device = device or next(model.parameters()).device
    inputs = _encode_prompts(processor, [r.turn for r in records]).to(device)
    answers = [list(r.generation.token_ids) for r in records]
    width = max(len(a) for a in answers)
    pad = processor.tokenizer.pad_token_id or 0
    ids = torch.tensor([a + [pad] * (width - len(a)) for a in answers], device=device)
    mask = torch.tensor([[1] * len(a) + [0] * (width - len(a)) for a in answers], device=device)
    prompt_len = inputs["input_ids"].shape[1]
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    for key, value in extra.items():  # per-token side inputs (mm_token_type_ids): answer tokens are text, 0
        if value.dim() == 2 and value.shape == inputs["input_ids"].shape:
            extra[key] = torch.cat([value, torch.zeros_like(ids, dtype=value.dtype)], dim=1)
    logits = model(
        input_ids=torch.cat([inputs["input_ids"], ids], dim=1),
        attention_mask=torch.cat([inputs["attention_mask"], mask], dim=1),
        **extra,
    ).logits[:, prompt_len - 1 : -1].float()
    logps = torch.log_softmax(logits / temperature, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    return logps, mask.to(logps.dtype)
