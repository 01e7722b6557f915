"""Rollout backends of the ``vlm-trl`` engine, chosen by the recipe's ``rollout.backend``.

No new trainer: each backend is a setting of TRL's ``GRPOTrainer`` (the ``vlm-trl`` engine's
``GRPOConfig``, :func:`zoo.engines.vlm.trl_engine.grpo_config`, for the backend :func:`resolve_backend` picks)
plus, for the truncated importance-sampling correction, the rollout's own log-probability of each
sampled token (:func:`recording_rollout_logps`; vLLM reports them itself).

* ``hf`` — transformers ``generate``, dynamic KV cache (TRL's default path).
* ``static`` — ``cache_implementation="static"`` and the decode step compiled by transformers
  (:func:`compiled_decode_config`: CUDA graphs on a GPU; inductor's default mode on a CPU, which
  needs a C++ compiler, as ``torch.compile`` on CPU always does).
* ``vllm`` — TRL's colocated vLLM (``use_vllm``, ``vllm_mode="colocate"``), weights synced
  from the trainer every optimiser step.

A backend that cannot run here fails when the recipe is loaded (:func:`check_backend`), before
any model is built. TRL 1.16's continuous batching refuses multimodal models, so it is not offered.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from zoo.recipe import RecipeError

if TYPE_CHECKING:
    import torch

BACKENDS = ("hf", "static", "vllm")


def _cuda() -> bool:
    import torch  # here, not at the top: recipes are validated without importing torch first

    return torch.cuda.is_available()


def check_backend(backend: str) -> None:
    """Raise :class:`~zoo.recipe.RecipeError` (one sentence, what to install) when ``backend`` cannot run here."""
    if backend not in (*BACKENDS, "auto"):
        raise RecipeError(f"rollout.backend={backend!r}; choose one of auto, {', '.join(BACKENDS)}")
    if backend != "vllm":
        return
    if importlib.util.find_spec("vllm") is None:
        raise RecipeError(
            "rollout.backend=vllm needs vLLM, which is not installed: `pip install vllm` on a CUDA machine "
            "(or choose backend: static or hf)"
        )
    if not _cuda():
        raise RecipeError("rollout.backend=vllm needs a CUDA GPU and none is visible; choose backend: hf or static")


def resolve_backend(backend: str) -> str:
    """``auto`` → ``vllm`` when installed with a GPU visible, else ``static`` on a GPU, else ``hf``."""
    if backend != "auto":
        return backend
    if not _cuda():
        return "hf"
    return "vllm" if importlib.util.find_spec("vllm") is not None else "static"


def compiled_decode_config(device_type: str) -> Any:
    """The ``GenerationConfig.compile_config`` of the ``static`` backend on ``device_type``.

    On CUDA: transformers' own default (``reduce-overhead``, i.e. CUDA graphs). Elsewhere
    transformers would not compile at all; there inductor's ``default`` mode is asked for
    explicitly (``_compile_all_devices``), which ``bench/rollout.py`` measured faster than ``hf``
    on a CPU, where the static cache alone was not.
    """
    from transformers import CompileConfig

    if device_type == "cuda":
        return CompileConfig()
    config = CompileConfig(mode="default")
    config._compile_all_devices = True  # transformers' switch for compiling off CUDA/XPU
    return config


@contextlib.contextmanager
def recording_rollout_logps(model: Any, temperature: float) -> Iterator[list[torch.Tensor]]:
    """Make ``model.generate`` also record log π_rollout of every sampled token.

    Inside the block each ``generate`` call returns its usual token tensor and appends a (B, T_new)
    tensor to the yielded list: ``log_softmax(logits / temperature)`` at the sampled token, from the
    raw logits of the decode step (``output_logits=True``) — the quantity the trainer's forward
    computes, so on ``hf`` the trainer/rollout ratio is 1 up to float error (a decode with a KV cache
    against one full forward). Top-p truncation is not part of either side, as in TRL and verl.
    """
    import torch

    recorded: list[torch.Tensor] = []
    original = model.generate
    shadowed = vars(model).get("generate")  # an instance attribute of its own, restored afterwards

    def generate(*args: Any, **kwargs: Any) -> torch.Tensor:
        out = original(*args, **kwargs, output_logits=True, return_dict_in_generate=True)
        new_tokens = out.sequences[:, out.sequences.shape[1] - len(out.logits) :]
        logits = torch.stack(out.logits, dim=1).float() / temperature
        recorded.append(torch.log_softmax(logits, dim=-1).gather(-1, new_tokens.unsqueeze(-1)).squeeze(-1))
        return out.sequences

    model.generate = generate
    try:
        yield recorded
    finally:
        if shadowed is None:
            del model.generate  # the class's method shows through again
        else:
            model.generate = shadowed
