"""The engine on a FLUX pipeline directory (FluxTransformer2DModel, CLIP + T5, dynamically shifted scheduler), built
tiny from configs: its sampler reproduces FluxPipeline, DanceGRPO's schedule is the authors', DanceGRPO trains it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.tiny_pipelines import save_tiny_flux
from zoo.engines.diffusion.models import load_model
from zoo.engines.diffusion.sampling import Sampler, dance_schedule
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train_round
from zoo.engines.reading import load_recipe

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")
GOLDEN = Path(__file__).parents[1] / "rl" / "golden" / "diffusion.json"


@pytest.fixture(scope="module")
def flux_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_flux(tmp_path_factory.mktemp("tiny-flux"))


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_a_flux_directory_loads_as_packed_flow_model(flux_dir: Path) -> None:
    model = load_model(str(flux_dir), resolution=16, embedded_guidance=2.0)
    assert model.kind == "flux" and model.latent_shape == (4, 8, 8) and model.embedded_guidance == 2.0
    embeds, pooled = model.encoder(["a red square", "a blue circle"])
    assert embeds.shape[0] == pooled.shape[0] == 2 and embeds.shape[-1] == 32 and pooled.shape[-1] == 32
    assert "attn.to_q" in {n.split(".", 2)[-1] for n, _ in model.denoiser.named_modules() if n.endswith("attn.to_q")}
    with pytest.raises(ValueError, match="multiple of 4"):
        load_model(str(flux_dir), resolution=18)


def test_the_deterministic_sampler_is_flux_pipelines_own(flux_dir: Path) -> None:
    """With no noise the engine's flow step is Euler, so from the same noise it must land where FluxPipeline does:
    the same packing, position ids, embedded guidance, timestep scale and dynamically shifted schedule."""
    from diffusers import FluxPipeline

    model = load_model(str(flux_dir), resolution=16, embedded_guidance=3.5)
    sampler = Sampler(model, "flow", 4)
    noise = torch.randn(1, *model.latent_shape, generator=torch.Generator().manual_seed(0))
    ours, _ = sampler.run(noise, model.encoder(["a red square"]), noise_level=0.0, generator=None)

    seen: list[float] = []

    def record(_pipe, _i, t, kwargs):
        seen.append(float(t))
        return kwargs

    pipe = model.encoder.pipe
    packed = FluxPipeline._pack_latents(noise, 1, 4, 8, 8)
    theirs = pipe("a red square", height=16, width=16, num_inference_steps=4, guidance_scale=3.5, latents=packed,
                  output_type="latent", callback_on_step_end=record).images  # fmt: skip
    assert seen == pytest.approx(sampler.timesteps.tolist(), abs=1e-3)
    torch.testing.assert_close(ours, FluxPipeline._unpack_latents(theirs, 16, 16, pipe.vae_scale_factor),
                               rtol=1e-4, atol=1e-5)  # fmt: skip


def test_dance_schedule_is_the_authors() -> None:
    """The sigmas the golden file took from DanceGRPO's own ``sd3_time_shift(3, linspace(1, 0, 17))``
    (tests/rl/golden/make_diffusion_golden.py, XueZeyue/DanceGRPO ``fastvideo/train_grpo_flux.py``)."""
    case = json.loads(GOLDEN.read_text())["dance_sde"][0]
    timesteps, sigmas = dance_schedule(16)
    torch.testing.assert_close(sigmas, torch.tensor(case["sigmas"]))
    assert timesteps.tolist() == [float(int(s * 1000)) for s in torch.tensor(case["sigmas"])[:-1]]


def test_dancegrpo_trains_a_flux_directory(flux_dir: Path, tmp_path: Path) -> None:
    recipe = load_recipe(SMOKE, ["algorithm.method=dance_grpo", f"model.name={flux_dir}", "model.resolution=16",
                                 "algorithm.group_size=2", "algorithm.num_steps=3", "training.prompts_per_step=1",
                                 "training.lora.enabled=true", "training.lora.r=2"])  # fmt: skip
    run = build_run(recipe, tmp_path)
    assert run.sampler.sigmas.tolist() == pytest.approx(dance_schedule(3)[1].tolist())
    before = [p.detach().clone() for p in run.trainable]
    metrics = train_round(run, 0)
    assert metrics["train/grad_norm"] > 0
    assert any(not torch.equal(a, p) for a, p in zip(before, run.trainable, strict=True))


def test_a_zoo_name_or_hub_id_resolves_through_the_cache(flux_dir: Path, hf_cache: Path, install) -> None:
    """``model.name: flux-1-dev`` (the entry) and the bare Hub id both read the cached snapshot offline; a name
    that is in neither place is the hub's named error, not a diffusers traceback."""
    from zoo.hub import ModelNotAvailableError

    install(flux_dir, "black-forest-labs/FLUX.1-dev", hf_cache)
    for name in ("flux-1-dev", "black-forest-labs/FLUX.1-dev"):
        model = load_model(name, resolution=16)
        assert model.kind == "flux" and "hf-cache" in model.config["name"]
    with pytest.raises(ModelNotAvailableError, match="stable-diffusion-3.5-medium"):
        load_model("stable-diffusion-3.5-medium", resolution=16)
