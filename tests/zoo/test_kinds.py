"""Entries and outputs per kind: a diffusion directory gives images, a policy directory gives actions,
and an unlisted Hub repository loads by id with its kind read from its files."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import zoo
from tests.hub_layout import install_in_cache
from zoo.kinds import SPECS, DiffusionSpec, PolicySpec
from zoo.load import WrongArchitectureError, infer_kind
from zoo.model_files import CONFIG_FILES
from zoo.outputs import ActionOutput, ImageOutput


@pytest.fixture(scope="module")
def ddpm_dir(tmp_path_factory):
    """A tiny unconditional diffusers pipeline (UNet2D + DDPM), built from configs, seeded."""
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)  # fmt: skip
    folder = tmp_path_factory.mktemp("ddpm")
    DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=10)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    from zoo.pipelines.policy import Normalization, PolicyConfig, mlp, save_policy

    torch.manual_seed(0)
    config = PolicyConfig(observation_dim=4, action_dim=2, action_chunk=3, hidden=(16,))
    stats = Normalization(np.arange(4.0), np.full(4, 2.0), np.array([10.0, -10.0]), np.array([0.5, 3.0]))
    return save_policy(tmp_path_factory.mktemp("policy"), mlp(config), config, stats)


def test_kind_is_read_from_the_files(ddpm_dir, policy_dir, tmp_path):
    assert (infer_kind(ddpm_dir), infer_kind(policy_dir)) == ("diffusion", "policy")
    with pytest.raises(WrongArchitectureError, match="pass kind="):
        infer_kind(tmp_path)


def test_every_kind_load_reads_is_a_folder_push_publishes(ddpm_dir, policy_dir, tmp_path):
    """A folder each kind's library writes: zoo.load reads its kind from it and zoo push sends its config.
    (Push once knew three config files and refused open_clip folders that zoo.load serves.)"""
    from tests.pipelines.test_clip import _save_hub_layout, _tiny_clip
    from zoo.push import select_files
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl")
    model.save_pretrained(tmp_path / "vlm")
    processor.save_pretrained(tmp_path / "vlm")
    folders = {"diffusion": ddpm_dir, "policy": policy_dir, "clip": _save_hub_layout(_tiny_clip(), tmp_path / "clip"),
               "vlm": tmp_path / "vlm"}  # fmt: skip
    assert set(folders) == set(SPECS) == set(CONFIG_FILES)  # a new kind needs its config file and a folder here
    for kind, folder in folders.items():
        assert infer_kind(folder) == kind
        files, _ = select_files(folder)
        assert CONFIG_FILES[kind] in files, (kind, files)


def test_diffusion_directory_returns_seeded_images(ddpm_dir):
    pipe = zoo.load(str(ddpm_dir))
    assert isinstance(pipe.entry.spec, DiffusionSpec) and pipe.entry.architecture == "DDPMPipeline"
    out = pipe(num_inference_steps=2, seed=3)
    assert isinstance(out, ImageOutput) and out.images[0].size == (8, 8) and out.prompts == [None]
    assert out.settings == {"num_inference_steps": 2, "seed": 3}
    again = pipe(num_inference_steps=2, seed=3).images[0]
    assert np.array_equal(np.asarray(out.images[0]), np.asarray(again))
    with pytest.raises(ValueError, match="unconditional"):
        pipe("a red square", num_inference_steps=2)
    with pytest.raises(TypeError, match="takes no guidance_scale"):
        pipe(num_inference_steps=2, guidance_scale=3.0)


def test_policy_directory_returns_denormalised_action_chunks(policy_dir):
    from safetensors.torch import load_file

    from zoo.pipelines.policy import PolicyConfig, mlp

    pipe = zoo.load(str(policy_dir), device="cpu")  # compared below at 1e-5 with a float32 forward by hand
    assert isinstance(pipe.entry.spec, PolicySpec) and pipe.entry.spec.action_chunk == 3
    obs = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]])
    out = pipe(obs)
    assert isinstance(out, ActionOutput) and out.actions.shape == (2, 3, 2)
    # the same network by hand: normalise, forward, de-normalise
    net = mlp(PolicyConfig(observation_dim=4, action_dim=2, action_chunk=3, hidden=(16,)))
    net.load_state_dict(load_file(str(policy_dir / "model.safetensors")))
    x = torch.tensor((obs - np.arange(4.0)) / 2.0, dtype=torch.float32)
    expected = net(x).detach().numpy().reshape(2, 3, 2) * np.array([0.5, 3.0]) + np.array([10.0, -10.0])
    np.testing.assert_allclose(out.actions, expected, rtol=1e-5, atol=1e-5)
    # a chunked policy serves its queue: three actions, then it re-plans
    served = [pipe.act(obs[0]) for _ in range(3)]
    np.testing.assert_allclose(np.stack(served), out.actions[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"takes 4 numbers.*\(B, 4\)"):
        pipe(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        pipe(np.full(4, np.nan))


def test_unlisted_hub_repository_loads_by_id_with_inferred_kind(hf_cache, policy_dir):
    install_in_cache(policy_dir, "someone/tiny-policy", hf_cache, "a" * 40)
    for name in ("hf-hub:someone/tiny-policy", "someone/tiny-policy"):
        pipe = zoo.load(name)
        assert (pipe.entry.kind, pipe.entry.repo_id, pipe.revision, pipe.source) == (
            "policy", "someone/tiny-policy", "a" * 40, "cache")
    with pytest.raises(ValueError, match="unknown kind"):
        zoo.load("someone/tiny-policy", kind="robot")


def test_explicit_kind_must_match_the_named_entry(policy_dir):
    with pytest.raises(WrongArchitectureError, match="is a vlm model, not policy"):
        zoo.load(str(policy_dir), entry="gui-g1-3b", kind="policy")


def test_empty_name_is_an_error_not_the_current_directory():
    with pytest.raises(ValueError, match="empty model name"):
        zoo.load("  ")


def test_policy_config_errors_name_the_file(tmp_path):
    (tmp_path / "policy_config.json").write_text(json.dumps({"action_dim": 2}))
    with pytest.raises(ValueError, match="policy_config.json: not a valid policy config"):
        zoo.load(str(tmp_path))


def test_a_blank_question_counts_only_where_the_template_carries_one():
    """The demo and ``zoo run`` refuse a blank question where the user turn is built around it, and let a template
    that is the whole task (``{question}`` absent) run without one."""
    from zoo.kinds import VLMSpec

    asks = VLMSpec(user="Where is {question}?", templates={"whole": "Redraw this chart as code."})
    assert asks.asks_a_question() and not asks.asks_a_question("whole")
    assert not VLMSpec(user="Redraw this chart as code.").asks_a_question()
