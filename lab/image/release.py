"""Train and package ``flow-grpo-tiny-colour``: a tiny SD3 pipeline, pre-trained on synthetic shapes, then Flow-GRPO.

Stages (``python -m lab.image.release all``; each reads the previous one's output under ``--run-dir``):

1. ``pretrain``: a ``StableDiffusion3Pipeline`` built from configs (SD3 transformer, VAE, two tiny CLIP
   text encoders with a word-level tokenizer, no T5), its VAE and transformer fitted to synthetic
   "a <colour> <shape>" images (:mod:`zoo.engines.diffusion.synthetic`) with 10 % prompt dropout so
   classifier-free guidance has a null branch; saved with ``save_pretrained``.
2. ``rl``: the recipe ``domains/image/recipes/flow-grpo-tiny-colour.yaml`` on the diffusion engine
   (Flow-GRPO, guidance 4.5, reward ``prompt-colour``), from the pre-trained pipeline.
3. ``package``: the trained transformer put back into the pipeline and saved to
   ``checkpoints/flow-grpo-tiny-colour`` (safetensors), ``training.json``, ``metrics.csv`` and a card
   whose numbers are measured here: reward on the held-out compositions, before and after RL, per seed,
   sampled by the released diffusers pipeline itself.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from lab.ladder import drop_loading_context
from rewards.prompt_colour import PALETTE, PromptColour
from zoo.cards import CARDS_DIR
from zoo.engines.diffusion.synthetic import HELD_OUT, SHAPES

NAME = "flow-grpo-tiny-colour"
ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "domains" / "image" / "recipes" / f"{NAME}.yaml"
EVAL_SEEDS = (0, 1, 2)
logger = logging.getLogger(__name__)


def word_tokenizer(folder: Path) -> Any:
    """A CLIP BPE tokenizer over the letters of the prompt words (palette colours, shapes, "a"), with merges
    built from those words: most become one token, the rest a few (``green`` -> ``g re e n``); deterministic."""
    from transformers import CLIPTokenizer

    special = ["<|startoftext|>", "<|endoftext|>"]
    letters = sorted({c for w in (*PALETTE, *SHAPES, "a") for c in w})
    vocab = special + letters + [c + "</w>" for c in letters]
    merges = []
    for word in (*PALETTE, *SHAPES):
        symbols = [*word[:-1], word[-1] + "</w>"]
        current = symbols[0]
        for symbol in symbols[1:]:
            merges.append(f"{current} {symbol}")
            current += symbol
            vocab.append(current)
    vocab = list(dict.fromkeys(vocab))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(dict.fromkeys(merges)) + "\n")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=16)


def build_pipeline(folder: Path, seed: int) -> Path:
    """A random tiny ``StableDiffusion3Pipeline`` saved to ``folder`` (the engine's tiny SD3 transformer and VAE)."""
    from diffusers import StableDiffusion3Pipeline
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    from zoo.engines.diffusion.models import build_tiny

    tiny = build_tiny("tiny:sd3", seed=seed)
    tokenizer = word_tokenizer(folder / "_tokenizer")
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    encoders = []
    for offset in (1, 2):
        torch.manual_seed(seed + offset)
        config = CLIPTextConfig(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=2,
                                vocab_size=len(tokenizer), max_position_embeddings=16, projection_dim=16,
                                bos_token_id=tokenizer.convert_tokens_to_ids("<|startoftext|>"), eos_token_id=eos,
                                pad_token_id=eos)  # fmt: skip
        encoders.append(CLIPTextModelWithProjection(config))
    pipe = StableDiffusion3Pipeline(transformer=tiny.denoiser, scheduler=tiny.scheduler, vae=tiny.vae,
                                    text_encoder=encoders[0], tokenizer=tokenizer, text_encoder_2=encoders[1],
                                    tokenizer_2=tokenizer, text_encoder_3=None, tokenizer_3=None)  # fmt: skip
    pipe.save_pretrained(folder, safe_serialization=True)
    shutil.rmtree(folder / "_tokenizer")
    return folder


def pretrain(run_dir: Path, seed: int, vae_steps: int, denoiser_steps: int) -> dict[str, Any]:
    """Build, fit and save the pre-trained pipeline under ``run_dir/pretrained``."""
    from zoo.engines.diffusion.models import load_model
    from zoo.engines.diffusion.pretrain import pretrain_denoiser, pretrain_vae
    from zoo.engines.diffusion.synthetic import synthetic_images

    folder = build_pipeline(run_dir / "pretrained", seed)
    model = load_model(str(folder))
    generator = torch.Generator().manual_seed(seed)
    images, prompts = synthetic_images(2048, generator)
    start = time.process_time()
    mse = pretrain_vae(model, images, steps=vae_steps, generator=generator)
    loss = pretrain_denoiser(model, images, prompts, steps=denoiser_steps, uncond_prob=0.1, generator=generator)
    model.encoder.pipe.save_pretrained(folder, safe_serialization=True)
    return {"seed": seed, "vae_steps": vae_steps, "denoiser_steps": denoiser_steps, "uncond_prob": 0.1,
            "vae_mse": mse, "denoiser_loss": loss, "cpu_minutes": (time.process_time() - start) / 60}  # fmt: skip


def reinforce(run_dir: Path, overrides: list[str]) -> Path:
    """The Flow-GRPO recipe from the pre-trained pipeline; returns the run directory."""
    from zoo.train import run as zoo_train

    return zoo_train(str(RECIPE), [f"model.name={run_dir / 'pretrained'}", *overrides], output_dir=str(run_dir / "rl"))


@torch.no_grad()
def held_out_scores(pipe: Any, steps: int, guidance: float, per_prompt: int = 4) -> dict[str, Any]:
    """Mean ``prompt-colour`` reward and components on the held-out prompts, per seed, from the pipeline itself."""
    from rewards.base import RewardSample

    reward = PromptColour()
    out = {}
    for seed in EVAL_SEEDS:
        generator = torch.Generator().manual_seed(seed)
        prompts = [p for p in HELD_OUT for _ in range(per_prompt)]
        images = pipe(prompt=prompts, num_inference_steps=steps, guidance_scale=guidance, generator=generator,
                      output_type="pt").images  # fmt: skip
        results = reward(list(images), [RewardSample(target={"prompt": p}) for p in prompts])
        out[str(seed)] = {"reward": sum(r.score for r in results) / len(results), "images": len(results),
                          **{k: sum(r.components[k] for r in results) / len(results)
                             for k in ("colour_match", "foreground_fraction")}}  # fmt: skip
    return out


def package(run_dir: Path, pretrain_record: dict[str, Any], rl_cpu_minutes: float) -> Path:
    """Write ``checkpoints/<NAME>``: the pipeline with the trained transformer, records and card."""
    from diffusers import StableDiffusion3Pipeline
    from safetensors.torch import load_file

    from zoo.engines.reading import load_recipe

    recipe = load_recipe(RECIPE)
    steps, guidance = recipe.algorithm.num_steps, recipe.algorithm.guidance_scale
    from zoo.pipelines.diffusion import absent_components

    pretrained = run_dir / "pretrained"
    pipe = StableDiffusion3Pipeline.from_pretrained(str(pretrained), use_safetensors=True, **absent_components(pretrained))
    pipe.set_progress_bar_config(disable=True)
    before = held_out_scores(pipe, steps, guidance)
    # the run saves the trained parameters; buffers (the positional table) stay the pre-trained ones
    missing, unexpected = pipe.transformer.load_state_dict(load_file(str(run_dir / "rl" / "final" / "trained.safetensors")),
                                                           strict=False)  # fmt: skip
    buffers = {name for name, _ in pipe.transformer.named_buffers()}
    if unexpected or not set(missing) <= buffers:
        raise ValueError(f"trained weights do not fit the transformer: missing {missing[:3]}, unexpected {unexpected[:3]}")
    after = held_out_scores(pipe, steps, guidance)
    target = ROOT / "checkpoints" / NAME
    if target.exists():
        shutil.rmtree(target)
    pipe.save_pretrained(target, safe_serialization=True)
    drop_loading_context(target)
    shutil.copy(run_dir / "rl" / "metrics.csv", target / "metrics.csv")
    record = {"entry": NAME, "script": "python -m lab.image.release all", "recipe": recipe.to_dict(),
              "pretrain": pretrain_record, "rl_cpu_minutes": rl_cpu_minutes,
              "held_out": {"prompts": list(HELD_OUT), "per_prompt": 4, "num_inference_steps": steps,
                           "guidance_scale": guidance, "seeds": list(EVAL_SEEDS), "before": before, "after": after},
              "engine_eval_curve": _curve(run_dir / "rl" / "metrics.csv")}  # fmt: skip
    from lab.image.card import write_card
    from lab.records import publish

    write_card(record, target / "README.md")
    publish(record, target / "README.md", target)
    shutil.copy(target / "README.md", CARDS_DIR / NAME / "README.md")
    return target


def _curve(metrics: Path) -> list[dict[str, float]]:
    with metrics.open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("eval/reward")]
    keys = ("step", "eval/reward", "eval/rewards/prompt-colour/mean")
    return [{k: float(r[k]) for k in keys if r.get(k)} for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=["pretrain", "rl", "package", "all"], help="which stage(s) to run")
    parser.add_argument("--run-dir", type=Path, default=ROOT / "runs" / NAME, help="working directory")
    parser.add_argument("--seed", type=int, default=0, help="seed of the model, pre-training and RL")
    parser.add_argument("--vae-steps", type=int, default=400)
    parser.add_argument("--denoiser-steps", type=int, default=600)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override for rl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    torch.set_num_threads(1)
    args.run_dir.mkdir(parents=True, exist_ok=True)
    record_path = args.run_dir / "release.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    if args.stage in ("pretrain", "all"):
        record["pretrain"] = pretrain(args.run_dir, args.seed, args.vae_steps, args.denoiser_steps)
        record_path.write_text(json.dumps(record, indent=1))
    if args.stage in ("rl", "all"):
        start = time.process_time()
        reinforce(args.run_dir, [f"training.seed={args.seed}", *args.set])
        record["rl_cpu_minutes"] = (time.process_time() - start) / 60
        record_path.write_text(json.dumps(record, indent=1))
    if args.stage in ("package", "all"):
        print(package(args.run_dir, record["pretrain"], record["rl_cpu_minutes"]))


if __name__ == "__main__":
    main()
