"""Each image entry loads from a Hugging Face cache laid out like its repository (tiny weights, offline)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import zoo
from zoo.hub import ModelNotAvailableError
from zoo.load import WrongArchitectureError
from zoo.pipelines.diffusion import DiffusionPipeline

SD3_REPO = "stabilityai/stable-diffusion-3.5-medium"
SMALL = {"num_inference_steps": 2, "height": 16, "width": 16}


def _pixels(out) -> torch.Tensor:
    import numpy as np

    return torch.from_numpy(np.asarray(out.images[0], dtype="float32"))


@pytest.mark.parametrize(
    ("name", "repo"),
    [
        ("flow-grpo-sd35m-geneval", "jieliu/SD3.5M-FlowGRPO-GenEval"),
        ("flow-grpo-sd35m-ocr", "jieliu/SD3.5M-FlowGRPO-Text"),
        ("flow-grpo-sd35m-pickscore", "jieliu/SD3.5M-FlowGRPO-PickScore"),
    ],
)
def test_flow_grpo_lora_applies_on_the_cached_base(name, repo, sd3_dir, lora_dir, hf_cache, install):
    install(sd3_dir, SD3_REPO, hf_cache)
    install(lora_dir, repo, hf_cache)
    pipe = zoo.load(name, device="cpu", dtype=torch.float32)
    assert isinstance(pipe, DiffusionPipeline) and pipe.source == "cache"
    assert pipe.settings() == {"num_inference_steps": 40, "guidance_scale": 4.5, "height": 512, "width": 512}
    tuned = pipe("a red square", seed=0, **SMALL)
    base = zoo.load(str(sd3_dir), device="cpu", dtype=torch.float32)("a red square", seed=0, **SMALL)
    assert tuned.images[0].size == (16, 16) and tuned.settings["num_inference_steps"] == 2
    assert not torch.equal(_pixels(tuned), _pixels(base)), "the LoRA must change what the base generates"


def test_adv_grpo_reads_its_subfolder(sd3_dir, lora_dir, hf_cache, install, tmp_path):
    repo = tmp_path / "adv"
    shutil.copytree(lora_dir, repo / "DINO")
    shutil.copytree(lora_dir, repo / "PickScore")
    install(sd3_dir, SD3_REPO, hf_cache)
    install(repo, "benzweijia/Adv-GRPO", hf_cache)
    pipe = zoo.load("adv-grpo-sd35m-dino", device="cpu", dtype=torch.float32)
    assert pipe("a flower on a planet", seed=1, **SMALL).images[0].size == (16, 16)


def test_dancegrpo_transformer_replaces_the_flux_base_one(hf_cache, install, tmp_path):
    """A tiny FLUX.1-dev-shaped pipeline in the cache, DanceGRPO's full transformer folder replacing its own."""
    from diffusers import FluxPipeline

    from tests.tiny_pipelines import save_tiny_flux, tiny_flux_transformer

    tiny_flux_transformer(7).save_pretrained(tmp_path / "dance", safe_serialization=True)
    install(save_tiny_flux(tmp_path / "flux"), "black-forest-labs/FLUX.1-dev", hf_cache)
    install(tmp_path / "dance", "xzyhku/flux_hpsv2.1_dancegrpo", hf_cache)
    pipe = zoo.load("dancegrpo-flux-hps", device="cpu", dtype=torch.float32)
    assert isinstance(pipe.pipe, FluxPipeline)
    # XueZeyue/DanceGRPO@15cc71d:scripts/visualization/vis_flux.py:59-66, not the 16-step 720 px training sampler
    assert pipe.settings() == {"num_inference_steps": 50, "guidance_scale": 3.5, "height": 1024, "width": 1024}
    expected = tiny_flux_transformer(7).state_dict()
    assert all(torch.equal(expected[k], v) for k, v in pipe.pipe.transformer.state_dict().items())
    assert pipe("a red square", seed=0, **SMALL).images[0].size == (16, 16)


def test_gated_base_missing_gives_the_licence_and_next_steps(lora_dir, hf_cache, install):
    install(lora_dir, "jieliu/SD3.5M-FlowGRPO-Text", hf_cache)
    with pytest.raises(ModelNotAvailableError) as err:
        zoo.load("flow-grpo-sd35m-ocr", device="cpu")
    message = str(err.value)
    assert "gated repository (licence other)" in message and "Stability AI Community License" in message
    assert f"https://huggingface.co/{SD3_REPO}" in message and "hf auth login" in message


def test_a_repository_without_an_adapter_is_refused_before_the_base_is_read(hf_cache, install, tmp_path):
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / "config.json").write_text("{}")
    install(tmp_path / "wrong", "jieliu/SD3.5M-FlowGRPO-GenEval", hf_cache)
    with pytest.raises(WrongArchitectureError, match="adapter_config.json"):
        zoo.load("flow-grpo-sd35m-geneval", device="cpu")


def test_omnigen2_says_diffusers_cannot_run_it_and_what_can(hf_cache, install, tmp_path):
    (tmp_path / "og2").mkdir()
    (tmp_path / "og2" / "pytorch_lora_weights.safetensors").write_bytes(b"")
    install(tmp_path / "og2", "OmniGen2/OmniGen2-EditScore7B", hf_cache)
    with pytest.raises(ModelNotAvailableError) as err:
        zoo.load("omnigen2-editscore7b", device="cpu")
    message = str(err.value)
    assert "no OmniGen2Pipeline" in message and "VectorSpaceLab/OmniGen2" in message and "gedit-bench" in message
    # their GEdit-Bench scripts (EditScore@6e0f1b9 .../GEdit-Bench/omnigen2.sh:55-83), not inference.py's defaults
    assert "image guidance 1.5, time_shift_base_res 168 and negative prompt ''" in message
    assert "--use_ori_neg_prompt_template" in message and "gedit.omnigen2_negative_prompt_embeds" in message  # omnigen2.sh:82


def test_card_of_every_image_entry_renders():
    from zoo.cards import render_card

    for name in zoo.list_models(domain="image"):
        assert name in str(render_card(zoo.info(name)))


def test_entries_name_what_they_sample_with():
    spec = zoo.info("flow-grpo-sd35m-pickscore").spec
    assert (spec.num_inference_steps, spec.guidance_scale, spec.height) == (40, 4.5, 512)
    assert zoo.info("adv-grpo-sd35m-pickscore").spec.subfolder == "PickScore"
    assert zoo.info("flux-1-dev").gated and zoo.info("stable-diffusion-3.5-medium").gated
    assert Path(zoo.info("editscore-7b").spec.base_repo_id).name == "Qwen2.5-VL-7B-Instruct"
    dance = zoo.info("dancegrpo-flux-hps")
    assert dance.license == "other" and "FLUX.1 [dev] Non-Commercial License" in dance.license_source
    for name in ("omnigen2-editscore7b", "omnigen2-editscore7b-v1.1"):
        og2 = zoo.info(name).spec
        assert (og2.guidance_scale, og2.image_guidance_scale, og2.time_shift_base_res, og2.negative_prompt) == (5.0, 1.5, 168, "")
    judges = {name: zoo.info(name) for name in ("editscore-32b", "editscore-72b", "editscore-qwen3-vl-4b",
                                                 "editscore-qwen3-vl-8b", "editscore-qwen3-vl-32b")}  # fmt: skip
    assert {n: (e.repo_id, e.spec.base_repo_id, e.spec.chat_layout) for n, e in judges.items()} == {
        "editscore-32b": ("EditScore/EditScore-32B", "Qwen/Qwen2.5-VL-32B-Instruct", "editscore"),
        "editscore-72b": ("EditScore/EditScore-72B", "Qwen/Qwen2.5-VL-72B-Instruct", "editscore"),
        "editscore-qwen3-vl-4b": ("EditScore/EditScore-Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-4B-Instruct", "processor"),
        "editscore-qwen3-vl-8b": ("EditScore/EditScore-Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-8B-Instruct", "processor"),
        "editscore-qwen3-vl-32b": ("EditScore/EditScore-Qwen3-VL-32B-Instruct", "Qwen/Qwen3-VL-32B-Instruct", "processor"),
    }
    assert "trains this discriminator" in zoo.info("adv-grpo-sd35m-pickscore").notes  # adversarial_pickscore.py


def test_a_pipeline_base_fetches_its_component_folders_not_the_root_checkpoint(hf_cache, monkeypatch):
    """FLUX.1-dev and SD3.5 also carry single-file checkpoints at the root (24 GB for FLUX) that from_pretrained never
    reads: a download asks for the components' folders only, while adapter and transformer repositories (weights at
    the root) keep the root pattern. The patterns asked for are captured from the download call."""
    from fnmatch import fnmatch

    import zoo.hub
    from zoo.hub import resolve

    asked: dict[str, list[str]] = {}

    def record(repo_id, **kwargs):
        if kwargs.get("local_files_only"):
            from huggingface_hub.errors import LocalEntryNotFoundError

            raise LocalEntryNotFoundError("not cached")
        asked[repo_id] = kwargs["allow_patterns"]
        return str(hf_cache)

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(zoo.hub, "snapshot_download", record)
    for name in ("flux-1-dev", "stable-diffusion-3.5-medium", "dancegrpo-flux-hps", "flow-grpo-sd35m-ocr"):
        resolve(zoo.info(name))

    def fetched(repo: str, file: str) -> bool:
        return any(fnmatch(file, p) for p in asked[repo])

    flux, sd35 = "black-forest-labs/FLUX.1-dev", SD3_REPO
    assert fetched(flux, "transformer/diffusion_pytorch_model-00001-of-00003.safetensors")
    assert fetched(flux, "model_index.json") and fetched(flux, "tokenizer_2/spiece.model")
    assert not fetched(flux, "flux1-dev.safetensors") and not fetched(flux, "ae.safetensors")
    assert not fetched(sd35, "sd3.5_medium.safetensors") and fetched(sd35, "text_encoder_3/model.safetensors")
    assert fetched("xzyhku/flux_hpsv2.1_dancegrpo", "diffusion_pytorch_model.safetensors")
    assert fetched("jieliu/SD3.5M-FlowGRPO-Text", "adapter_model.safetensors")
    assert "'*/*.safetensors'" in zoo.hub.download_command(zoo.info("flux-1-dev"), None)
