"""The engine trains a real diffusers pipeline directory: a StableDiffusionPipeline (UNet, DDIM, CLIP text
encoder and tokenizer) built tiny from configs and saved with ``save_pretrained``, as a Hub download lays it out."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.tiny_pipelines import tiny_clip_tokenizer
from zoo.engines.diffusion.models import PipelinePromptEncoder, build_tiny, load_model
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train_round
from zoo.engines.reading import load_recipe

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")


@pytest.fixture(scope="module")
def sd_pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from diffusers import StableDiffusionPipeline
    from transformers import CLIPTextConfig, CLIPTextModel

    folder = tmp_path_factory.mktemp("tiny-sd")
    tiny = build_tiny("tiny:unet", sample_size=8)
    text_encoder = CLIPTextModel(CLIPTextConfig(hidden_size=32, intermediate_size=37, num_attention_heads=4,
                                                num_hidden_layers=2, vocab_size=60, max_position_embeddings=16))  # fmt: skip
    tokenizer = tiny_clip_tokenizer(folder)
    pipe = StableDiffusionPipeline(vae=tiny.vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=tiny.denoiser,
                                   scheduler=tiny.scheduler, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)  # fmt: skip
    pipe.save_pretrained(folder / "pipeline", safe_serialization=True)
    return folder / "pipeline"


def test_pipeline_directory_loads_with_its_own_text_encoder(sd_pipeline_dir: Path) -> None:
    model = load_model(str(sd_pipeline_dir))
    assert isinstance(model.encoder, PipelinePromptEncoder) and model.kind == "eps"
    embeds, pooled = model.encoder(["a red square", "a blue circle"])
    assert embeds.shape == (2, 16, 32) and pooled.shape == (2, 32) and not torch.equal(embeds[0], embeds[1])
    assert model.latent_shape == (4, 8, 8)


def test_ddpo_trains_a_pipeline_directory(sd_pipeline_dir: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    recipe = load_recipe(SMOKE, ["algorithm.method=ddpo", f"model.name={sd_pipeline_dir}", "algorithm.group_size=2",
                                 "algorithm.num_steps=3", "training.prompts_per_step=1", "training.lora.enabled=true",
                                 "training.lora.r=2"])  # fmt: skip
    run = build_run(recipe, tmp_path)
    before = [p.detach().clone() for p in run.trainable]
    metrics = train_round(run, 0)
    assert metrics["train/grad_norm"] > 0
    assert any(not torch.equal(a, p) for a, p in zip(before, run.trainable, strict=True))


def test_an_unknown_directory_says_what_it_expected(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model_index.json"):
        load_model(str(tmp_path))


def test_components_the_loop_never_calls_are_not_loaded(tmp_path: Path) -> None:
    """A pipeline saved with a safety checker and its feature extractor, as SD 1.5 and LCM_Dreamshaper_v7 are on the
    Hub, loads without them: the loop never calls them and the memory plan does not count them."""
    from diffusers import StableDiffusionPipeline
    from diffusers.pipelines.stable_diffusion.safety_checker import StableDiffusionSafetyChecker
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPTextConfig, CLIPTextModel

    tiny = build_tiny("tiny:unet", sample_size=8)
    text_encoder = CLIPTextModel(CLIPTextConfig(hidden_size=32, intermediate_size=37, num_attention_heads=4,
                                                num_hidden_layers=2, vocab_size=60, max_position_embeddings=16))  # fmt: skip
    checker = StableDiffusionSafetyChecker(CLIPConfig(
        text_config={"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1,
                       "image_size": 32, "patch_size": 16},
        projection_dim=768))  # fmt: skip
    pipe = StableDiffusionPipeline(vae=tiny.vae, text_encoder=text_encoder, tokenizer=tiny_clip_tokenizer(tmp_path),
                                   unet=tiny.denoiser, scheduler=tiny.scheduler, safety_checker=checker,
                                   feature_extractor=CLIPImageProcessor())  # fmt: skip
    pipe.save_pretrained(tmp_path / "pipeline", safe_serialization=True)
    assert (tmp_path / "pipeline" / "safety_checker").is_dir()

    model = load_model(str(tmp_path / "pipeline"))
    assert model.encoder.pipe.safety_checker is None and model.encoder.pipe.feature_extractor is None
    embeds, _ = model.encoder(["a red square"])
    assert embeds.shape[0] == 1
