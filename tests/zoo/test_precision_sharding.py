"""What an engine decides about precision and sharding, and refuses: ``zoo.precision`` and ``zoo.sharding`` alone
(the training runs that hold the engines to these decisions are tests/engines/test_master_weights.py and
tests/engines/test_vlm_sharded.py)."""

from __future__ import annotations

import logging

import pytest
import torch

from zoo.engines import ENGINES
from zoo.engines.reading import load_recipe
from zoo.precision import Precision, PrecisionError, resolve, warn_low_precision_weights
from zoo.recipe import RecipeError
from zoo.sharding import ShardingError, check_launched, load_optimizer_state, optimizer_state, units


def test_bf16_computes_over_float32_masters_and_auto_follows_the_device() -> None:
    assert resolve("bfloat16") == Precision(compute="bfloat16", trained="float32", frozen="bfloat16")
    assert resolve("bfloat16").mixed and not resolve("float32").mixed
    assert resolve("auto").compute == "float32"  # a CPU run keeps float32
    assert resolve("auto", cuda=True).compute == "bfloat16"  # the plan's GPUs (or a bf16 GPU when one is here)
    with pytest.raises(PrecisionError, match=r"model.dtype='half'; choose one of"):
        resolve("half")


def test_stepping_bf16_weights_is_an_opt_in_that_warns_once_with_the_rounding(caplog) -> None:
    warn_low_precision_weights.cache_clear()
    with caplog.at_level(logging.WARNING, logger="zoo.precision"):
        first = resolve("bfloat16", fp32_master_weights=False)
        resolve("bfloat16", fp32_master_weights=False)
    assert first == Precision("bfloat16", "bfloat16", "bfloat16")
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "1.2e-04" in warned[0] and "6.1e-05" in warned[0]  # bf16's spacing at |w| = 0.02


def test_autocast_computes_matmuls_in_bf16_over_float32_weights() -> None:
    layer = torch.nn.Linear(4, 4)
    with resolve("bfloat16").autocast("cpu"):
        out = layer(torch.ones(1, 4))
    assert out.dtype == torch.bfloat16 and layer.weight.dtype == torch.float32
    with resolve("float32").autocast("cpu"):
        assert layer(torch.ones(1, 4)).dtype == torch.float32


@pytest.mark.parametrize(
    ("engine", "launch", "strategy"),
    [
        ("vlm-semi-online", "fsdp-qwen2.5-vl-offload", "fsdp"),
        ("vlm-semi-online", "ddp", "replicated"),
        ("vlm-sft", "fsdp-qwen2.5-vl", "fsdp"),
        ("diffusion", "fsdp-flux", "fsdp"),
        ("vlm-trl", "zero3", "accelerate"),
        ("vlm-trl", "fsdp-qwen2.5-vl", "accelerate"),
        ("vlm-verl", "zero3", "ray"),
        ("policy", "", "replicated"),
    ],
)
def test_each_engine_says_what_it_does_under_a_launch_config(engine: str, launch: str, strategy: str) -> None:
    sharding = ENGINES.get(engine).sharding(launch)
    assert sharding.strategy == strategy
    if launch.startswith("fsdp-qwen"):
        assert sharding.units == ("Qwen2_5_VLDecoderLayer", "Qwen2_5_VLVisionBlock")
        assert sharding.offload == launch.endswith("offload")


@pytest.mark.parametrize(
    ("engine", "launch", "says"),
    [
        ("vlm-semi-online", "zero3", r"shards with FSDP2 itself and does not run DEEPSPEED"),
        ("vlm-sft", "zero3-offload", r"name an FSDP config"),
        ("policy", "ddp", r"one learner process and runs no launch config; remove launch: ddp"),
    ],
)
def test_a_launch_config_the_engine_does_not_run_is_refused_before_training(engine: str, launch: str,
                                                                           says: str) -> None:  # fmt: skip
    with pytest.raises(ShardingError, match=says):
        ENGINES.get(engine).sharding(launch)


def test_the_shipped_recipes_name_launch_configs_their_engines_run() -> None:
    from pathlib import Path

    import yaml

    for path in sorted((Path(__file__).parents[2] / "domains").glob("*/recipes/*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data.get("launch"):
            ENGINES.get(data["engine"]).sharding(data["launch"])  # raises for a config the engine ignores


def test_dry_run_refuses_a_sharded_lora_semi_online_recipe(tmp_path) -> None:
    from pathlib import Path

    from zoo.train import run

    with pytest.raises(ShardingError, match="LoRA's adapters are small enough"):
        run(str(Path(__file__).parents[2] / "domains/gui/recipes/ui-s1-smoke.yaml"),
            ["launch=fsdp-qwen2.5-vl", "training.lora.enabled=true"],
            dry_run=True, output_dir=str(tmp_path / "run"))  # fmt: skip


def test_the_own_loops_refuse_float16() -> None:
    with pytest.raises(RecipeError, match="no loss scaler"):
        load_recipe("domains/gui/recipes/ui-s1-smoke.yaml", ["model.dtype=float16"])


@pytest.mark.parametrize(
    ("engine", "launch", "env", "refused"),
    [
        ("vlm-trl", "zero3", {}, "started with no sharding but the recipe's launch is zero3"),
        ("vlm-trl", "ddp", {"ACCELERATE_USE_FSDP": "true"}, "started with FSDP but the recipe's launch is ddp"),
        ("vlm-trl", "zero3", {"ACCELERATE_USE_DEEPSPEED": "true"}, None),
        ("vlm-semi-online", "fsdp-qwen2.5-vl", {}, None),  # torchrun: the zoo shards by the recipe itself
        ("vlm-semi-online", "fsdp-qwen2.5-vl", {"ACCELERATE_USE_FSDP": "true"}, None),
        ("vlm-semi-online", "ddp", {"ACCELERATE_USE_FSDP": "true"}, "started with FSDP"),
        ("diffusion", "ddp", {"ACCELERATE_USE_DEEPSPEED": "true"}, "started with DEEPSPEED"),
    ],
)
def test_a_job_must_be_started_as_its_recipe_launch_says(engine, launch, env, refused, monkeypatch) -> None:
    for key in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    sharding = ENGINES.get(engine).sharding(launch)
    check_launched(sharding, world=1)  # one process: nothing to check
    if refused is None:
        check_launched(sharding, world=2)
        return
    with pytest.raises(ShardingError, match=refused) as err:
        check_launched(sharding, world=2)
    assert f"zoo/launch/{launch}.yaml" in str(err.value)  # the launch line that runs the recipe as written


def test_wrap_classes_the_model_lacks_are_named() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with pytest.raises(ShardingError, match="wraps FluxTransformerBlock, which Sequential does not contain"):
        units(model, ["FluxTransformerBlock"])
    assert units(model, ["Linear"]) == [model[0]]


def test_optimizer_state_is_keyed_by_parameter_name_and_loads_back_exactly() -> None:
    """The form every checkpoint of the own loops holds, sharded or not: a sharded checkpoint resumes unsharded (and the
    other way round) because neither depends on parameter order or placement; an index-keyed state (checkpoints
    written before) still loads."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))
    model[0].bias.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-2)
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()
    saved = optimizer_state(model, optimizer)
    assert sorted(saved["state"]) == ["0.weight", "1.bias", "1.weight"]
    for state in (saved, optimizer.state_dict()):
        again = torch.optim.AdamW(params, lr=1e-2)
        load_optimizer_state(model, again, state)
        for param in params:
            assert torch.equal(again.state[param]["exp_avg"], optimizer.state[param]["exp_avg"])
            assert torch.equal(again.state[param]["step"], optimizer.state[param]["step"])
    with pytest.raises(ValueError, match="names parameters this model does not train"):
        load_optimizer_state(model, torch.optim.AdamW(params), {**saved, "param_groups": [
            {**saved["param_groups"][0], "params": ["nope"]}]})  # fmt: skip
