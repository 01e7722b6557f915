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

    The defaults are the authors' GEdit-Bench runs of their RL checkpoints: VectorSpaceLab/EditScore@6e0f1b9:
    examples/OmniGen2-RL/evaluation/GEdit-Bench/omnigen2_edit_rl_single_machine_editscore7b_step500.sh:58-86 and
    omnigen2.sh:55-83 (text guidance 5.0, image guidance 1.5, ``--time_shift_base_res 168``,
    ``--negative_prompt ""``, 50 Euler steps at 1024 px); 2.0 and 320 are only ``inference.py``'s argparse
    defaults.

    Attributes:
        image_guidance_scale: guidance on the input image.
        time_shift_base_res: the base resolution of OmniGen2's time shift.
        negative_prompt: the negative prompt (empty, with ``--use_ori_neg_prompt_template``).
        base_repo_id: the OmniGen2 base repository the LoRA applies to.
    """

    pipeline: ClassVar[str] = "domains.image.pipelines:load_omnigen2_pipeline"

    image_guidance_scale: float = 1.5
    time_shift_base_res: int = 168
    negative_prompt: str = ""
    base_repo_id: str = "OmniGen2/OmniGen2"

    @property
    def component_folders(self) -> bool:
        """The repository holds a LoRA, not a whole pipeline."""
        return False


ChatLayout = Literal["editscore", "processor"]


@dataclass(frozen=True)
class JudgeSpec(VLMSpec):
    """A VLM reward model served as a LoRA on its base, asked several images at once (EditScore).

    Attributes:
        base_repo_id: Hub repository of the base VLM the LoRA was trained on.
        temperature, top_p, top_k: the authors' sampling (``mllm_tools/qwen25vl.py``, ``qwen3vl.py``).
        chat_layout: ``editscore``, the hand-written Qwen2.5-VL layout with ``<imgN>:`` labels and a system
            turn (VectorSpaceLab/EditScore@6e0f1b9:editscore/mllm_tools/qwen25vl.py:23-30, 52-72); ``processor``,
            the base processor's own chat template, images then text (editscore/mllm_tools/qwen3vl.py:51-70, the
            Qwen3-VL judges).
    """

    pipeline: ClassVar[str] = "domains.image.pipelines:load_judge_pipeline"
    #: the repository holds an adapter, not a model: its loader checks it (``zoo.load.check_architecture`` skips it)
    validates_own_files: ClassVar[bool] = True

    base_repo_id: str = "Qwen/Qwen2.5-VL-7B-Instruct"
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int = 20
    chat_layout: ChatLayout = "editscore"

    def __hash__(self) -> int:
        return hash((self.base_repo_id, self.max_new_tokens, self.temperature, self.chat_layout))
