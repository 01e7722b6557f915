"""The accelerate launch configs in zoo/launch/: each parses with accelerate's own reader and sets what its name promises,
the FSDP ones build accelerate's FSDP plugin the way ``accelerate launch`` would, and every GPU recipe names one that
applies to its model.

DeepSpeed is not installed here (it builds CUDA ops; the zoo does not depend on it), so the ZeRO-3 configs are parsed
and put through ``accelerate launch``'s argument validation only, never launched.
"""

from __future__ import annotations

import glob

import pytest
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_multi_gpu_env

from zoo.engines.reading import load_checked, load_recipe
from zoo.launch import LaunchConfigError, config_path, list_configs, read
from zoo.recipe import RecipeError

#: What each config must set: (distributed_type, {fsdp_config or deepspeed_config keys}).
EXPECTED = {
    "ddp": ("MULTI_GPU", {}),
    "zero3": ("DEEPSPEED", {"zero_stage": 3, "offload_param_device": "none", "offload_optimizer_device": "none",
                            "zero3_save_16bit_model": True}),
    "zero3-offload": ("DEEPSPEED", {"zero_stage": 3, "offload_param_device": "cpu", "offload_optimizer_device": "cpu"}),
    "fsdp-qwen2.5-vl": ("FSDP", {"fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                                 "fsdp_reshard_after_forward": True, "fsdp_offload_params": False,
                                 "fsdp_transformer_layer_cls_to_wrap": "Qwen2_5_VLDecoderLayer,Qwen2_5_VLVisionBlock"}),
    "fsdp-qwen2.5-vl-offload": ("FSDP", {"fsdp_version": 2, "fsdp_reshard_after_forward": True,
                                         "fsdp_offload_params": True,
                                         "fsdp_transformer_layer_cls_to_wrap": "Qwen2_5_VLDecoderLayer,Qwen2_5_VLVisionBlock"}),
    "fsdp-flux": ("FSDP", {"fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                           "fsdp_reshard_after_forward": True, "fsdp_offload_params": False,
                           "fsdp_activation_checkpointing": True,
                           "fsdp_transformer_layer_cls_to_wrap": "FluxTransformerBlock,FluxSingleTransformerBlock"}),
    "fsdp-sd3": ("FSDP", {"fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                          "fsdp_reshard_after_forward": True, "fsdp_offload_params": False,
                          "fsdp_activation_checkpointing": True,
                          "fsdp_transformer_layer_cls_to_wrap": "JointTransformerBlock"}),
}  # fmt: skip
FSDP = [name for name, (kind, _) in EXPECTED.items() if kind == "FSDP"]


def test_the_shipped_configs_are_the_expected_ones():
    assert list_configs() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_parses_with_accelerate_and_sets_what_it_promises(name):
    config = load_config_from_file(str(config_path(name)))
    kind, settings = EXPECTED[name]
    assert isinstance(config, ClusterConfig)
    assert config.distributed_type.value == kind
    assert (config.num_processes, config.num_machines, str(config.mixed_precision)) == (8, 1, "bf16")
    section = config.fsdp_config if kind == "FSDP" else config.deepspeed_config
    assert {key: section.get(key) for key in settings} == settings
    other = config.deepspeed_config if kind == "FSDP" else config.fsdp_config
    assert not other, f"{name} mixes FSDP and DeepSpeed settings"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_accelerate_launch_accepts_the_config(name):
    """``accelerate launch --config_file`` reads it into the launcher kind and precision it names."""
    args = launch_command_parser().parse_args(["--config_file", str(config_path(name)), "train.py"])
    args, _, _ = _validate_launch_command(args)
    kind = EXPECTED[name][0]
    assert (args.multi_gpu, args.use_fsdp, args.use_deepspeed) == (
        kind == "MULTI_GPU",
        kind == "FSDP",
        kind == "DEEPSPEED",
    )
    assert (args.num_processes, args.mixed_precision) == (8, "bf16")
    if kind == "DEEPSPEED":  # parse only: launching needs the deepspeed package
        assert (args.zero_stage, args.offload_param_device) == (3, EXPECTED[name][1]["offload_param_device"])


@pytest.mark.parametrize("name", FSDP)
def test_fsdp_config_builds_accelerates_plugin(name, monkeypatch):
    """The environment ``accelerate launch`` hands each process builds accelerate's FSDP plugin: FSDP2, resharded
    after forward (FULL_SHARD), wrapping the named blocks, offloading to the CPU where the config says."""
    from accelerate.utils import FullyShardedDataParallelPlugin
    from torch.distributed.fsdp import CPUOffloadPolicy

    args, _, _ = _validate_launch_command(
        launch_command_parser().parse_args(["--config_file", str(config_path(name)), "x.py"])
    )
    for key, value in prepare_multi_gpu_env(args).items():
        monkeypatch.setenv(key, value)
    plugin = FullyShardedDataParallelPlugin()
    settings = EXPECTED[name][1]
    assert (plugin.fsdp_version, plugin.reshard_after_forward) == (2, True)
    assert plugin.transformer_cls_names_to_wrap == settings["fsdp_transformer_layer_cls_to_wrap"].split(",")
    assert isinstance(plugin.cpu_offload, CPUOffloadPolicy) == settings["fsdp_offload_params"]
    assert plugin.activation_checkpointing == settings.get("fsdp_activation_checkpointing", False)


def test_wrapped_classes_are_the_architectures_blocks():
    """The class names FSDP wraps are the models' own no-split blocks (a misspelt name would wrap nothing)."""
    from diffusers import FluxTransformer2DModel, SD3Transformer2DModel
    from transformers import Qwen2_5_VLForConditionalGeneration

    assert set(read("fsdp-flux").wrap_classes) == set(FluxTransformer2DModel._no_split_modules)
    assert set(read("fsdp-sd3").wrap_classes) == set(SD3Transformer2DModel._no_split_modules)
    assert set(read("fsdp-qwen2.5-vl").wrap_classes) == set(Qwen2_5_VLForConditionalGeneration._no_split_modules)


def test_read_gives_the_memory_settings():
    assert (read("ddp").sharded, read("zero3").sharded, read("fsdp-flux").sharded) == (False, True, True)
    offload = read("zero3-offload")
    assert (offload.zero_stage, offload.offload_params, offload.offload_optimizer) == (3, True, True)
    assert (read("zero3").offload_params, read("fsdp-qwen2.5-vl-offload").offload_params) == (False, True)
    assert read("fsdp-flux").activation_checkpointing and not read("fsdp-qwen2.5-vl").activation_checkpointing


def test_unknown_config_name_is_refused_with_a_close_match():
    with pytest.raises(LaunchConfigError, match="Did you mean zero3"):
        config_path("zero-3")
    with pytest.raises(LaunchConfigError, match="no launch config"):
        config_path("../launch/zero3")
    with pytest.raises(RecipeError, match="launch: no launch config 'fsdp'.*fsdp-flux"):
        load_checked("domains/gui/recipes/gui-g1-3b.yaml", ["launch=fsdp"])


def _recipes():
    return sorted(glob.glob("domains/*/recipes/*.yaml"))


def test_every_gpu_recipe_names_a_config_that_applies():
    """A recipe whose model has a billion parameters or more (sized offline by the plan) names a launch config, and
    the plan finds that config applicable to its model and run by its engine (the plan asks the engine, no longer a
    list of engines); a recipe the plan cannot size must be a tiny CPU one."""
    from zoo.engines import ENGINES
    from zoo.memory_plan import plan, workload
    from zoo.workload import PlanError

    gpu = []
    for path in _recipes():
        recipe = load_recipe(path)
        if ENGINES.get(recipe.engine).distributes in ("none", "ray"):
            assert not recipe.launch, f"{path}: engine {recipe.engine} runs no launch config"
            continue
        try:
            params = workload(recipe).params
        except PlanError:
            assert "tiny" in path or "smoke" in path or recipe.model.name.startswith("tiny:"), path
            continue
        if params >= 1e9:
            gpu.append(recipe.name)
            assert recipe.launch, f"{path} trains {params / 1e9:.1f} B parameters and names no launch config"
            _, rows, skipped = plan(recipe)
            assert recipe.launch not in skipped, f"{path}: {recipe.launch}: {skipped.get(recipe.launch)}"
            assert [r.config for r in rows if r.named] == [recipe.launch]
    assert len(gpu) >= 15, gpu  # the 3B/7B VLM and the SD3.5-Medium/FLUX recipes, sized from the table offline
