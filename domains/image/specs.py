"""The image domain's own spec kinds: weights applied on a base pipeline, OmniGen2, and the EditScore judge.

Specs are data (cheap to import: no torch, no diffusers); each names the loader of
:mod:`domains.image.pipelines` that serves it, as :mod:`zoo.kinds` specs do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from zoo.kinds import DiffusionSpec, VLMSpec

AdapterFormat = Literal["peft-lora", "transformer"]


@dataclass(frozen=True)
class AdapterDiffusionSpec(DiffusionSpec):
    """A released denoiser update on a base diffusers pipeline that is its own catalog entry.

    The base is resolved through its entry, so a gated base (SD3.5, FLUX.1-dev) fails with the
    entry's licence and the steps to get access, not a bare 401.

    Attributes:
        base_entry: registry name of the base pipeline (``stable-diffusion-3.5-medium``).
        adapter_format: ``peft-lora``: a PEFT adapter (``adapter_config.json`` +
            ``adapter_model.safetensors``, what ``PeftModel.save_pretrained`` writes: Flow-GRPO,
            Adv-GRPO) applied on the base's ``transformer``; ``transformer``: a full denoiser
            (``config.json`` + ``diffusion_pytorch_model.safetensors``: DanceGRPO) replacing it.
        subfolder: folder of the weights inside the entry's repository (Adv-GRPO's ``DINO/``).
        merge: fold the LoRA into the base weights after loading (faster sampling, adapter gone).
    """

    pipeline: ClassVar[str] = "domains.image.pipelines:load_adapter_pipeline"

    base_entry: str = ""
    adapter_format: AdapterFormat = "peft-lora"
    subfolder: str | None = None
    merge: bool = True

    @property
    def component_folders(self) -> bool:
        """An adapter or denoiser repository: its weights may sit at the root (DanceGRPO's transformer)."""
        return False


@dataclass(frozen=True)
class OmniGen2Spec(DiffusionSpec):
    """OmniGen2 editing (text + image guidance). diffusers 0.42.1 has no ``OmniGen2Pipeline``; the loader says
    how to run the weights instead (:func:`domains.image.pipelines.load_omnigen2_pipeline`).

    Attributes:
        image_guidance_scale: the authors' image guidance (their inference default 2.0).
        base_repo_id: the OmniGen2 base repository the LoRA applies to.
    """

    pipeline: ClassVar[str] = "domains.image.pipelines:load_omnigen2_pipeline"

    image_guidance_scale: float = 2.0
    base_repo_id: str = "OmniGen2/OmniGen2"

    @property
    def component_folders(self) -> bool:
        """The repository holds a LoRA, not a whole pipeline."""
        return False


@dataclass(frozen=True)
class JudgeSpec(VLMSpec):
    """A VLM reward model served as a LoRA on its base, asked several images at once (EditScore).

    Attributes:
        base_repo_id: Hub repository of the base VLM the LoRA was trained on.
        temperature, top_p, top_k: the authors' sampling (``mllm_tools/qwen25vl.py``).
    """

    pipeline: ClassVar[str] = "domains.image.pipelines:load_judge_pipeline"
    #: the repository holds an adapter, not a model: its loader checks it (``zoo.load.check_architecture`` skips it)
    validates_own_files: ClassVar[bool] = True

    base_repo_id: str = "Qwen/Qwen2.5-VL-7B-Instruct"
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int = 20

    def __hash__(self) -> int:
        return hash((self.base_repo_id, self.max_new_tokens, self.temperature))
