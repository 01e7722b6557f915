"""``zoo train RECIPE --plan``: parameter counts from configs on this machine or the cited table, and the bytes per GPU
of each launch config as the recipe's engine runs it (its sharding and precision), checked against a hand computation
on tiny models instantiated for real (tests/zoo/test_memory_plan_tensors.py holds them to a real step's tensors)."""

from __future__ import annotations

import json

import pytest

import zoo
from tests.tiny_pipelines import save_tiny_flux
from zoo import memory_plan
from zoo.engines.reading import load_recipe
from zoo.launch import read
from zoo.memory_plan import PlanError
from zoo.train import run
from zoo.workload import Stack, numel, unet_maps

GUI_G1 = "domains/gui/recipes/gui-g1-3b.yaml"  # Qwen/Qwen2.5-VL-3B-Instruct, bf16, full fine-tune, 8 x (prompt + 128)
FLUX = "domains/image/recipes/dancegrpo-flux-hps.yaml"
UI_S1 = "domains/gui/recipes/ui-s1-7b.yaml"  # vlm-semi-online, Qwen2.5-VL-7B, launch fsdp-qwen2.5-vl-offload
SD35_LORA = "domains/image/recipes/flow-grpo-sd35m-pickscore.yaml"
RLCM = "domains/image/recipes/rlcm-dreamshaper-aesthetic.yaml"  # LCM_Dreamshaper_v7's UNet, LoRA r8, under ddp


def tiny_qwen_config():
    """A Qwen2.5-VL config a few kilobytes big, with GQA (4 heads, 2 key-value heads) and a trained vision tower."""
    from transformers import Qwen2_5_VLConfig

    text = {
        "vocab_size": 320,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
    }
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
              "fullatt_block_indexes": [0, 1]}  # fmt: skip
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision)


@pytest.fixture
def tiny_qwen_in_cache(tmp_path, hf_cache, install):
    """The tiny config in the HF cache as Qwen/Qwen2.5-VL-3B-Instruct (config only: no weight file at all), and the
    same model instantiated for real on the CPU."""
    from transformers import Qwen2_5_VLForConditionalGeneration

    config = tiny_qwen_config()
    config.save_pretrained(tmp_path / "tiny")
    snapshot = install(tmp_path / "tiny", "Qwen/Qwen2.5-VL-3B-Instruct", hf_cache)
    return snapshot, Qwen2_5_VLForConditionalGeneration(config)


def _no_weights(monkeypatch):
    """Any weight load or download fails the test: the plan must need neither."""
    import huggingface_hub
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("the plan loaded weights or reached for the network")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(refuse))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", refuse)
    monkeypatch.setattr("zoo.hub.snapshot_download", refuse)


def _rank0_shard(module, n: int) -> int:
    """Elements of rank 0's FSDP2 shard of ``module``'s real parameters: ``torch.chunk`` on dim 0 over ``n``."""
    return sum(p.chunk(n, dim=0)[0].numel() for p in module.parameters())


def test_counts_the_cached_config_and_matches_a_hand_computation(tiny_qwen_in_cache, monkeypatch):
    snapshot, real = tiny_qwen_in_cache
    _no_weights(monkeypatch)
    assert {r.processes for r in memory_plan.plan(load_recipe(GUI_G1))[1]} == {4}  # the recipe's `processes`
    work, rows, skipped = memory_plan.plan(load_recipe(GUI_G1), processes=8)
    p = sum(t.numel() for t in real.parameters())  # counted on the real CPU model
    assert str(snapshot) in work.model and (work.params, work.trainable, work.adapter) == (p, p, 0)
    by = {r.config: r for r in rows}
    assert set(by) == {"ddp", "fsdp-qwen2.5-vl", "fsdp-qwen2.5-vl-offload", "zero3", "zero3-offload"}
    assert "fsdp-flux" in skipped and all(why.startswith("not applicable") for why in skipped.values())
    assert by["zero3"].named and not by["ddp"].named and by["ddp"].strategy == "accel. DDP"

    # DDP: TRL now holds fp32 master weights under bf16 autocast (zoo.precision), so weights and gradients are 4P and
    # AdamW's two moments 8P (the bf16 weights of before were 2P, 2P and 4P); the copies are DDP's reducer buckets
    # (a second fp32 copy of the gradients) and autocast's bf16 copy of every weight
    assert {k: by["ddp"].parts[k] for k in ("params", "grads", "optim", "copies", "reference")} == {
        "params": 4 * p,
        "grads": 4 * p,
        "optim": 8 * p,
        "copies": 4 * p + 2 * p,
        "reference": 0,
    }
    # ZeRO-3 over 8: 16-bit weights and gradients, 12 bytes of fp32 master + moments per trained parameter; the copies
    # are the whole bf16 policy TRL gathers to generate (ds3_gather_for_generation), more than two blocks and the root
    blocks = [m for m in real.modules() if type(m).__name__ in ("Qwen2_5_VLDecoderLayer", "Qwen2_5_VLVisionBlock")]
    sizes = [sum(t.numel() for t in m.parameters()) for m in blocks]
    gather = (p - sum(sizes) + 2 * max(sizes)) * 2
    assert {k: by["zero3"].parts[k] for k in ("params", "grads", "optim", "copies")} == {
        "params": 2 * p // 8,
        "grads": 2 * p // 8,
        "optim": 12 * p // 8,
        "copies": 2 * p,
    }
    # FSDP: fp32 shards (accelerate upcasts trained parameters), rank 0's torch.chunk share of every tensor (more
    # than P/8 where a tensor's rows do not split evenly); offload leaves only the gathered units
    shard = _rank0_shard(real, 8)
    assert {k: by["fsdp-qwen2.5-vl"].parts[k] for k in ("params", "grads", "optim", "copies")} == {
        "params": 4 * shard,
        "grads": 4 * shard,
        "optim": 8 * shard,
        "copies": gather,
    }
    assert by["fsdp-qwen2.5-vl-offload"].parts["params"] == by["zero3-offload"].parts["optim"] == 0

    # activations at 1 MP (5349 patches of 14 px, 1337 tokens after the 2x2 merge), 256 prompt + 128 completion
    # tokens, 8 sequences, checkpointing on: layers x tokens x hidden x 2 bytes + one layer's full set
    lm_tokens, vision_tokens = 8 * (256 + 1337 + 128), 8 * 5349
    lm = 2 * 2 * 64 * lm_tokens + 2 * (6 * 64 + 2 * 2 * 16 + 4 * 128) * lm_tokens
    tower = 2 * 2 * 32 * vision_tokens + 2 * (6 * 32 + 2 * 32 + 4 * 64) * vision_tokens
    logits = 8 * 128 * 320 * 2 * 2
    assert by["ddp"].parts["activations"] == lm + tower + logits == by["zero3"].parts["activations"]


def test_lora_counts_what_peft_adds(tiny_qwen_in_cache):
    """LoRA's trainable tensors are the ones peft itself adds to the real tiny model, shape for shape."""
    from peft import LoraConfig, get_peft_model

    _, real = tiny_qwen_in_cache
    recipe = load_recipe(GUI_G1, ["training.lora.enabled=true", "training.lora.r=4"])
    work = memory_plan.workload(recipe)
    peft_model = get_peft_model(real, LoraConfig(r=4, target_modules=list(recipe.training.lora.target_modules)))
    added = [t for n, t in peft_model.named_parameters() if "lora_" in n]
    assert sorted(work.trained_shapes) == sorted(tuple(t.shape) for t in added)
    assert work.adapter == work.trainable == sum(t.numel() for t in added) > 0
    launch = read("ddp")
    sharding, precision = memory_plan.placement(recipe, launch)
    assert work.trained_bytes(precision) == 4 and work.load_dtype == "bfloat16"  # fp32 adapters over a bf16 base
    assert memory_plan.row(work, launch, sharding, precision, False).parts["optim"] == 2 * work.adapter * 4


def test_kl_adds_a_reference_sharded_as_the_policy(tiny_qwen_in_cache):
    _, real = tiny_qwen_in_cache
    p = sum(t.numel() for t in real.parameters())
    recipe = load_recipe(GUI_G1, ["algorithm.beta=0.04"])
    work = memory_plan.workload(recipe)

    def reference(config: str) -> int:
        launch = read(config)
        return memory_plan.row(work, launch, *memory_plan.placement(recipe, launch), False).parts["reference"]

    # TRL builds the reference in the policy's dtype, now its float32 masters (2P bytes with the bf16 policy of before)
    assert reference("ddp") == 4 * p
    assert reference("zero3") == 2 * p // 8 and reference("zero3-offload") == 0  # offloaded with the parameters


def test_diffusion_pipeline_from_the_cache(tmp_path, hf_cache, install, monkeypatch):
    """A FLUX-shaped pipeline in the cache: the transformer, text encoders and VAE counted as built for real."""
    from diffusers import FluxPipeline

    folder = save_tiny_flux(tmp_path)
    install(folder, "black-forest-labs/FLUX.1-dev", hf_cache, zoo.info("flux-1-dev").revision)  # the entry's pin
    pipe = FluxPipeline.from_pretrained(str(folder))
    _no_weights(monkeypatch)
    work, rows, skipped = memory_plan.plan(load_recipe(FLUX, ["training.ema_device=null"]))  # the EMA on the GPUs
    count = {name: sum(t.numel() for t in getattr(pipe, name).parameters())
             for name in ("transformer", "text_encoder", "text_encoder_2", "vae")}  # fmt: skip
    assert work.params == work.trainable == count["transformer"]
    assert work.frozen == {k: v for k, v in count.items() if k != "transformer"}
    # the engine loads the text encoders and the VAE in model.dtype (bfloat16), no longer the encoders in float32
    assert work.frozen_bytes == 2 * (count["text_encoder"] + count["text_encoder_2"] + count["vae"])
    fsdp = next(r for r in rows if r.config == "fsdp-flux")
    # the EMA follows the fp32 shards (each rank averages its rows), no longer a whole fp32 copy on every GPU; the
    # rollouts run on the whole denoiser gathered in bf16
    assert fsdp.named and fsdp.strategy == "zoo FSDP2" and fsdp.parts["ema"] == 4 * _rank0_shard(pipe.transformer, 8)
    assert fsdp.parts["copies"] == 2 * count["transformer"]
    assert "refused by the engine" in skipped["zero3"] and "offloads the shards" in skipped["fsdp-qwen2.5-vl-offload"]
    _, as_shipped, _ = memory_plan.plan(load_recipe(FLUX))  # training.ema_device: cpu, where DanceGRPO keeps it
    assert next(r for r in as_shipped if r.config == "fsdp-flux").parts["ema"] == 0


def test_the_plan_runs_each_config_as_the_engine_does(hf_cache):
    """UI-S1's engine shards with its own FSDP2 and refuses DeepSpeed: the plan says so where it used to price
    accelerate's semantics for every engine, and it prices the whole bf16 policy its rollouts gather."""
    recipe = load_recipe(UI_S1)
    work, rows, skipped = memory_plan.plan(recipe)
    named = next(r for r in rows if r.named)
    assert (named.config, named.strategy) == ("fsdp-qwen2.5-vl-offload", "zoo FSDP2 + offload")
    assert named.parts["params"] == named.parts["reference"] == 0  # policy and reference offloaded with the shards
    assert named.parts["copies"] == 2 * work.params  # the rollouts' whole policy, gathered in bf16
    assert "does not run DEEPSPEED" in skipped["zero3"]
    text = memory_plan.render(*memory_plan.plan(load_recipe(UI_S1, ["launch=zero3"])))
    assert "* zero3: refused by the engine: engine vlm-semi-online shards with FSDP2 itself" in text
    assert "launch config zero3 cannot run it" in text


def test_the_diffusion_engine_computes_in_the_configs_precision_and_refuses_lora_under_fsdp(hf_cache):
    recipe = load_recipe(SD35_LORA)  # LoRA, model.dtype float32 under ddp (mixed_precision bf16)
    work, rows, skipped = memory_plan.plan(recipe)
    assert (work.precision.compute, work.precision.frozen) == ("bfloat16", "float32")
    assert [r.config for r in rows] == ["ddp"]
    assert all("a LoRA run does not need" in skipped[name] for name in ("fsdp-flux", "fsdp-qwen2.5-vl"))


def test_real_recipes_from_the_cited_table(hf_cache):
    """Nothing cached: the table's config.json values, instantiated on the meta device, give the published sizes."""
    gui = memory_plan.workload(load_recipe(GUI_G1))
    assert "huggingface.co/Qwen/Qwen2.5-VL-3B-Instruct" in gui.model and round(gui.params / 1e9, 2) == 3.75
    flux = memory_plan.workload(load_recipe(FLUX))
    assert round(flux.params / 1e9, 1) == 11.9 and round(flux.frozen["text_encoder_2"] / 1e9, 2) == 4.76
    text = memory_plan.render(*memory_plan.plan(load_recipe(FLUX)))
    assert "* fsdp-flux" in text and "fits 80 GB" in text and "accelerate launch --config_file" in text


def _table_unet():
    """A fresh meta-device UNet of the table's LCM_Dreamshaper_v7 row (not the plan's cached one, which a test must
    not change)."""
    from zoo.model_size import KNOWN, instantiate, known_row

    _, _, config = KNOWN[known_row("SimianLuo/LCM_Dreamshaper_v7")][1]["components"]["unet"]
    return instantiate("diffusers", "UNet2DConditionModel", config)


def test_an_lcm_unet_from_the_cited_table(hf_cache):
    """RLCM's LCM_Dreamshaper_v7, nothing cached: SD 1.5's 0.86 B-parameter UNet with CLIP-L and the VAE, the LoRA
    shapes peft adds to the UNet's attention projections the recipe names, and under ddp (the only config a LoRA run
    takes) a hand computation of each part: the float32 base, fp32 adapters with DDP's bucket and autocast's copy, the
    base's bf16 casts the backward keeps, the frozen float16 encoders, and the UNet's activations at the authors' 768 px."""
    from peft import LoraConfig

    recipe = load_recipe(RLCM)
    work, rows, skipped = memory_plan.plan(recipe)
    assert round(work.params / 1e9, 2) == 0.86 and {k: round(v / 1e9, 2) for k, v in work.frozen.items()} == {
        "text_encoder": 0.12, "vae": 0.08}  # fmt: skip
    unet = _table_unet()
    unet.add_adapter(LoraConfig(r=8, lora_alpha=8, target_modules=list(recipe.training.lora.target_modules)))
    added = [tuple(t.shape) for n, t in unet.named_parameters() if "lora_" in n]
    assert sorted(work.trained_shapes) == sorted(added) and work.adapter == work.trainable == numel(added)
    assert [r.config for r in rows] == ["ddp"] and "a LoRA run does not need" in skipped["fsdp-sd3"]
    (ddp,) = rows
    a, f = work.trainable, numel(work.frozen_shapes)
    assert (ddp.processes, ddp.fits) == (4, True) and f == work.params
    assert ddp.parts["params"] == 4 * (a + f) and ddp.parts["optim"] == 2 * 4 * a
    assert ddp.parts["copies"] == 4 * a + 2 * a + 2 * f
    assert ddp.parts["frozen"] == 2 * sum(work.frozen.values())
    assert ddp.parts["activations"] == sum(s.bytes(2, False) for s in unet_maps(_table_unet(), 2, 768 // 8))


def test_the_unet_activations_follow_the_micro_batch_and_the_resolution(hf_cache):
    """The recipe's micro-batch and resolution set the UNet's pixels: twice the images, twice the bytes; the authors'
    768 px instead of the UNet's own 512 (``model.resolution=null``), (768 / 512)^2 times them at every resolution of
    the UNet."""

    def activations(*overrides: str) -> int:
        (ddp,) = memory_plan.plan(load_recipe(RLCM, list(overrides)))[1]
        return ddp.parts["activations"]

    shipped = activations()
    assert activations("training.train_batch_size=4") == 2 * shipped
    assert 9 * activations("model.resolution=null") == 4 * shipped


def test_the_unet_estimate_counts_what_autograd_keeps():
    """The UNet estimate against the tensors autograd really keeps for the backward pass of a small SD-shaped UNet
    (float32, every weight trained, parameters aside): within 5% (left out: the keys and values over the 77 prompt
    tokens, attention's log-sum-exp, the time embedding)."""
    import torch
    from diffusers import UNet2DConditionModel

    torch.manual_seed(0)
    unet = UNet2DConditionModel(sample_size=32, layers_per_block=2, block_out_channels=(32, 64, 64, 64),
                                down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
                                up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3, cross_attention_dim=32,
                                attention_head_dim=8, time_cond_proj_dim=32)  # fmt: skip
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        unet(torch.randn(2, 4, 32, 32), torch.tensor([500, 500]), torch.randn(2, 77, 32),
             timestep_cond=torch.randn(2, 32))  # fmt: skip
    weights = {p.untyped_storage().data_ptr() for p in unet.parameters()}
    real = sum(size for pointer, size in kept.items() if pointer not in weights)
    estimate = sum(s.bytes(4, False) for s in unet_maps(unet, 2, 32))
    assert abs(real / estimate - 1) < 0.05, (real, estimate)


def test_plan_cli_prints_json_and_writes_nothing(tmp_path, hf_cache, capsys):
    out = tmp_path / "run"
    assert run(GUI_G1, plan=True, as_json=True, output_dir=str(out)) is None
    data = json.loads(capsys.readouterr().out)
    assert (data["recipe"], data["params"], data["assumptions"]["completion tokens"]) == ("gui-g1-3b", 3754622976, 128)
    named = [c for c in data["configs"] if c["named_by_recipe"]]
    assert [c["name"] for c in named] == ["zero3"] and named[0]["total_bytes"] == sum(named[0]["bytes"].values())
    assert not out.exists()


@pytest.mark.parametrize(
    ("path", "overrides", "message"),
    [
        ("domains/robot/recipes/fetch-push-resip.yaml", [], "one learner process and runs no launch config"),
        ("domains/perception/recipes/vlm-r1-rec-smoke.yaml", [], "tiny CPU model"),
        (GUI_G1, ["model.name=someone/unknown-vl"], "not a known architecture"),
    ],
)
def test_what_cannot_be_planned_is_refused(path, overrides, message, hf_cache):
    with pytest.raises(PlanError, match=message):
        memory_plan.plan(load_recipe(path, overrides))


def test_stack_estimate_with_and_without_checkpointing():
    stack = Stack("lm", layers=10, hidden=8, intermediate=16, kv=4, mlp_tensors=4, tokens=3)
    full = 2 * (6 * 8 + 2 * 4 + 4 * 16) * 3
    assert stack.bytes(2, checkpointing=False) == 10 * full
    assert stack.bytes(2, checkpointing=True) == 10 * 2 * 8 * 3 + full


def test_every_gpu_recipe_fits_its_own_launch_on_80_gb(hf_cache):
    """Each shipped recipe that names a launch config, planned offline under that config as its engine runs it (the
    SD3.5 and FLUX transformers, RLCM's UNet, the VLMs): it fits an 80 GB GPU."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    planned = {}
    for path in sorted(root.glob("domains/*/recipes/*.yaml")):
        data = yaml.safe_load(path.read_text())
        if not data.get("launch") or data["engine"] == "vlm-verl":
            continue
        _, rows, skipped = memory_plan.plan(load_recipe(path))
        named = [r for r in rows if r.named]
        assert named, f"{path.name}: its launch {data['launch']} is not planned ({skipped.get(data['launch'])})"
        planned[path.stem] = round(named[0].total / memory_plan.GIB, 1)
    assert len(planned) >= 15 and all(gib <= memory_plan.GPU_BYTES / memory_plan.GIB for gib in planned.values()), planned


def test_the_trained_models_buffers_are_counted(hf_cache):
    """SD3.5-Medium's transformer holds a fixed 2-D position embedding as a 0.23 B-element float32 buffer (issue 53:
    the plan left it out); FSDP shards parameters only, so every GPU keeps it whole, beside the frozen encoders."""
    from zoo.model_size import buffer_bytes, known_row, pipeline

    transformer = pipeline(None, known_row("stabilityai/stable-diffusion-3.5-medium"))["transformer"].module
    assert round(sum(b.numel() for b in transformer.buffers()) / 1e9, 2) == 0.23
    work = memory_plan.workload(load_recipe("domains/image/recipes/flow-grpo-sd35m-geneval.yaml"))
    encoders = sum(work.frozen.values()) * 4  # the recipe's model.dtype: float32
    assert work.frozen_bytes == encoders + buffer_bytes(transformer) and buffer_bytes(transformer) > 0.9e9
