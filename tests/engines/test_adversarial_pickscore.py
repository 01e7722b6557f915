"""Adv-GRPO's PickScore discriminator against the authors' code, ported below as the reference.

showlab/Adv-GRPO @ 8287f90: ``adv_grpo/pickscore_scorer.py: PickScoreScorer.__call__`` and
``adv_grpo/rewards.py: pickscore_cotrain_score`` (the reward), ``adv_grpo/pick_score_training.py: CLIPCriterion``
with ``scripts/train_sd3_fast_pickscore.py: tensor_to_pil_list, train_pickscore`` and the freezing and optimiser
of lines 658 and 1016-1020 (the step), line 1025 (when it steps). Both sides run the same tiny random CLIP
(``tiny:clip``) standing in for ``yuvalkirstain/PickScore_v1``. Then the engine: a smoke recipe's round, and a
run cut back to ``checkpoint-1`` that resumes into the uninterrupted one, discriminator weights included.
"""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from tests.engines.run_dirs import assert_same_tensors, interrupted_copy, metric_rows
from tests.engines.test_diffusion_engine import ADV, recipe
from zoo.engines import ENGINES
from zoo.engines.diffusion.adversarial import References
from zoo.engines.diffusion.adversarial_pickscore import (
    PickScoreReward,
    load_pickscore,
    references_score_below,
    truncated,
)
from zoo.engines.diffusion.checkpoint import STATE
from zoo.engines.diffusion.trainer import train
from zoo.engines.reading import load_recipe
from zoo.recipe import RecipeError
from zoo.runs import read_state

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "domains" / "image" / "recipes" / "adv-grpo-pickscore-tiny-smoke.yaml"
PROMPTS = ["a red square", "a blue circle", "a green square"]


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# --- the authors' code, ported: transformers 5's get_*_features return an output whose pooler_output is
# --- what 4.54's returned; the accelerator's device is the CPU; nothing else changed --------------------------
def their_tensor_to_pil_list(tensor_imgs: torch.Tensor) -> list[Image.Image]:
    """train_sd3_fast_pickscore.py:133-148."""
    imgs = []
    for img in tensor_imgs:
        img = (img * 0.5 + 0.5).clamp(0, 1)
        img = img.permute(1, 2, 0).detach().cpu().numpy()
        img = (img * 255).astype(np.uint8)
        imgs.append(Image.fromarray(img))
    return imgs


def their_criterion(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """pick_score_training.py:95-106 (get_features) and 117-203 (calc_loss, in_batch_negatives False, not
    distributed: CLIPCriterionConfig's defaults, lines 76-86)."""
    all_pixel_values = torch.cat([batch["pixels_0"], batch["pixels_1"]], dim=0)
    text_features = model.get_text_features(input_ids=batch["input_ids"]).pooler_output
    all_image_features = model.get_image_features(pixel_values=all_pixel_values).pooler_output
    all_image_features = all_image_features / all_image_features.norm(dim=-1, keepdim=True)
    text_features = text_features / text_features.norm(dim=-1, keepdim=True)
    image_0_features, image_1_features = all_image_features.chunk(2, dim=0)
    logit_scale, label_0, label_1 = model.logit_scale.exp(), batch["label_0"], batch["label_1"]
    all_image_features = torch.cat([image_0_features, image_1_features], dim=0)
    text_logits = logit_scale * text_features @ all_image_features.T
    text_0_logits, text_1_logits = text_logits.chunk(2, dim=-1)
    index = torch.arange(text_0_logits.shape[0], dtype=torch.long)
    text_0_logits = text_0_logits[index, index]
    text_1_logits = text_1_logits[index, index]
    text_logits = torch.stack([text_0_logits, text_1_logits], dim=-1)
    text_0_labels = torch.zeros(text_logits.shape[0], dtype=torch.long)
    text_1_labels = text_0_labels + 1
    text_0_loss = torch.nn.functional.cross_entropy(text_logits, text_0_labels, reduction="none")
    text_1_loss = torch.nn.functional.cross_entropy(text_logits, text_1_labels, reduction="none")
    text_loss = label_0 * text_0_loss + label_1 * text_1_loss
    is_tie = (label_0 == label_1).float()
    is_tie *= torch.log(torch.tensor(0.5))
    text_loss += is_tie
    return text_loss.mean()


def their_train_pickscore(scorer: Any, prompts: list[str], real_data: list[Image.Image],
                          fake_data: list[Image.Image], optimizer: torch.optim.Optimizer) -> float:  # fmt: skip
    """train_sd3_fast_pickscore.py:151-183."""
    text_inputs = scorer.processor.tokenizer(prompts, padding="max_length", truncation=True, max_length=77,
                                             return_tensors="pt")  # fmt: skip
    batch = {
        "input_ids": text_inputs["input_ids"].squeeze(0),
        "pixels_0": scorer.processor(images=real_data, return_tensors="pt")["pixel_values"].squeeze(0),
        "pixels_1": scorer.processor(images=fake_data, return_tensors="pt")["pixel_values"].squeeze(0),
        "label_0": torch.tensor(1.0), "label_1": torch.tensor(0.0), "num_examples_per_prompt": torch.tensor(1.0),
    }  # fmt: skip
    loss = their_criterion(scorer.model, batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def their_pickscore_cotrain_score(scorer: Any, images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    """rewards.py:580-587 (pickscore_cotrain_score's _fn) calling pickscore_scorer.py:16-52 (PickScoreScorer)."""
    images = (images * 255).round().clamp(0, 255).to(torch.uint8).cpu().numpy()
    images = images.transpose(0, 2, 3, 1)
    images = [Image.fromarray(image) for image in images]
    image_inputs = scorer.processor(images=images, padding=True, truncation=True, max_length=77, return_tensors="pt")
    text_inputs = scorer.processor(text=prompts, padding=True, truncation=True, max_length=77, return_tensors="pt")
    image_embs = scorer.model.get_image_features(**image_inputs).pooler_output
    image_embs = image_embs / image_embs.norm(p=2, dim=-1, keepdim=True)
    text_embs = scorer.model.get_text_features(**text_inputs).pooler_output
    text_embs = text_embs / text_embs.norm(p=2, dim=-1, keepdim=True)
    scores = scorer.model.logit_scale.exp() * (text_embs @ image_embs.T)
    return scores.diag() / 26


# --- the discriminator against them -------------------------------------------------------------------------
def _images(n: int, seed: int, size: int = 32) -> torch.Tensor:
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def test_pixels_reach_the_processor_as_theirs_do():
    """The step's images are truncated after the [-1, 1] round trip (their loss path), which drops a level on
    63 of the 256 exact reference values a plain ``x * 255`` cast keeps; the reward rounds."""
    levels = (torch.arange(256, dtype=torch.float32) / 255).view(1, 1, 16, 16).expand(1, 3, 16, 16)
    theirs = np.asarray(their_tensor_to_pil_list((levels - 0.5) * 2.0)[0]).transpose(2, 0, 1)
    assert np.array_equal(truncated(levels)[0].numpy(), theirs)
    assert (truncated(levels) != (levels * 255).to(torch.uint8)).sum() == 3 * 63
    generated = _images(2, 0)
    theirs = [np.asarray(im).transpose(2, 0, 1) for im in their_tensor_to_pil_list((generated - 0.5) * 2.0)]
    assert np.array_equal(truncated(generated).numpy(), np.stack(theirs))


def test_reward_is_their_pickscore_cotrain_score():
    disc = load_pickscore("tiny:clip", seed=0)
    images = _images(3, 1)
    ours = disc.score(images, PROMPTS)
    theirs = their_pickscore_cotrain_score(SimpleNamespace(model=disc.model, processor=disc.processor), images, PROMPTS)
    torch.testing.assert_close(ours, theirs)
    assert ours.std() > 0  # the images and prompts are told apart, so the comparison says something


def test_one_step_is_their_train_pickscore_on_the_last_vision_layer():
    """The loss, then the weights after one step from the same start: theirs freeze all but
    ``vision_model.encoder.layers[tune_layer:]`` and hand every parameter to Adam (only those get gradients)."""
    disc = load_pickscore("tiny:clip", seed=0)
    model = copy.deepcopy(disc.model)
    real, fake = _images(3, 2), _images(3, 3)
    torch.testing.assert_close(disc.loss(real, fake, PROMPTS)["loss"],
                               their_criterion(model, _their_batch(disc, real, fake)))  # fmt: skip

    for p in model.parameters():  # train_sd3_fast_pickscore.py:1016-1020, tune_layer = -1
        p.requires_grad = False
    for p in model.vision_model.encoder.layers[-1:].parameters():
        p.requires_grad = True
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.5, 0.999))  # line 658
    scorer = SimpleNamespace(model=model, processor=disc.processor)
    their_loss = their_train_pickscore(scorer, PROMPTS, their_tensor_to_pil_list((real - 0.5) * 2.0),
                                       their_tensor_to_pil_list((fake - 0.5) * 2.0), optimizer)  # fmt: skip

    before = {k: v.clone() for k, v in disc.model.state_dict().items()}
    reward = PickScoreReward(References(real, {p: [i] for i, p in enumerate(PROMPTS)}), 1e-3, torch.Generator(), disc)
    reward.plan(0, 0.0, PROMPTS)  # draws each prompt's one reference: real, in order
    ours = reward.update(fake, PROMPTS)
    assert ours["disc/loss"] == pytest.approx(their_loss, rel=1e-6)
    after, theirs = disc.model.state_dict(), model.state_dict()
    for name, value in after.items():
        torch.testing.assert_close(value, theirs[name], msg=name)
        moved = not torch.equal(value, before[name])
        assert moved == name.startswith("vision_model.encoder.layers.1."), name
    assert set(reward.state_dict()) == {"layers", "optimizer"}
    last = "vision_model.encoder.layers.1."
    assert set(reward.state_dict()["layers"]) == {f"0.{k.removeprefix(last)}" for k in after if k.startswith(last)}


def _their_batch(disc: Any, real: torch.Tensor, fake: torch.Tensor) -> dict[str, torch.Tensor]:
    """What their train_pickscore hands the criterion (lines 154-175), for the loss alone."""
    tokens = disc.processor.tokenizer(PROMPTS, padding="max_length", truncation=True, max_length=77,
                                      return_tensors="pt")  # fmt: skip
    pixels = lambda x: disc.processor(images=their_tensor_to_pil_list((x - 0.5) * 2.0), return_tensors="pt")
    return {"input_ids": tokens["input_ids"], "pixels_0": pixels(real)["pixel_values"],
            "pixels_1": pixels(fake)["pixel_values"], "label_0": torch.tensor(1.0), "label_1": torch.tensor(0.0)}  # fmt: skip


def test_it_steps_when_references_score_below_the_generations():
    """Their line 1025, ``reference_rewards_mean < rewards_mean``, on hand-made scores: the references' mean
    (over the drawn references) against the round's reward; a tie trains the generator."""
    pairs = {(0.1, 0.2): True, (0.2, 0.1): False, (0.15, 0.15): False, (-0.3, -0.2): True}
    assert {pair: references_score_below(*pair) for pair in pairs} == pairs

    disc = load_pickscore("tiny:clip", seed=0)
    reward = PickScoreReward(References(_images(3, 4), {p: [i] for i, p in enumerate(PROMPTS)}), 1e-3,
                             torch.Generator(), disc)  # fmt: skip
    disc.score = lambda images, prompts: torch.tensor([0.0, 0.1, 0.5])  # mean 0.2
    for generated, steps in ((0.25, True), (0.2, False), (0.1, False)):
        assert reward.plan(3, generated, PROMPTS) == (steps, {"disc/reference_reward": pytest.approx(0.2)})
    reward.update(_images(3, 5), PROMPTS)
    with pytest.raises(RuntimeError, match=r"plan\(\) first"):  # a step takes the references its plan scored, once
        reward.update(_images(3, 5), PROMPTS)


def test_tiny_clip_is_seeded_and_tune_layer_picks_the_trained_layers():
    state = torch.random.get_rng_state()
    a, b, c = (load_pickscore("tiny:clip", seed=s) for s in (3, 3, 4))
    assert torch.equal(torch.random.get_rng_state(), state)
    weights = lambda d: torch.cat([p.flatten() for p in d.model.parameters()])
    assert torch.equal(weights(a), weights(b)) and not torch.equal(weights(a), weights(c))
    trained = lambda d: {id(p) for p in d.model.parameters() if p.requires_grad}
    assert trained(a) == {id(p) for p in a.model.vision_model.encoder.layers[1].parameters()}
    both = load_pickscore("tiny:clip", tune_layer=-2)
    assert trained(both) == {id(p) for p in both.model.vision_model.encoder.layers.parameters()}
    with pytest.raises(ValueError, match="none of the 2 vision layers"):
        load_pickscore("tiny:clip", tune_layer=2)


def test_recipe_names_a_known_discriminator_and_its_own_tiny_model():
    refs = "algorithm.reference_images.name=synthetic-shapes"
    with pytest.raises(RecipeError, match=r"Adv-GRPO's are \['dinov2', 'pickscore'\]"):
        ENGINES.get("diffusion").check_recipe(recipe(*ADV, refs, "algorithm.discriminator=siglip"))
    with pytest.raises(RecipeError, match="'tiny:dinov2' is the dinov2 discriminator's tiny model.*'tiny:clip'"):
        ENGINES.get("diffusion").check_recipe(
            recipe(*ADV, refs, "algorithm.discriminator=pickscore", "algorithm.discriminator_backbone=tiny:dinov2"))
    with pytest.raises(RecipeError, match="'tiny:clip' is the pickscore"):
        ENGINES.get("diffusion").check_recipe(recipe(*ADV, refs, "algorithm.discriminator_backbone=tiny:clip"))


# --- the engine ---------------------------------------------------------------------------------------------
def test_smoke_recipe_round_scores_references_and_checkpoints_the_layers(tmp_path: Path):
    config = load_recipe(SMOKE, ["training.steps=1", "training.save_steps=1"])
    assert (config.algorithm.discriminator_lr, config.algorithm.discriminator_tune_layer) == (None, -1)  # 5e-6, last
    out = train(config, tmp_path / "run")
    row = metric_rows(out)[-1]
    stepped = references_score_below(float(row["disc/reference_reward"]), float(row["reward"]))
    assert (bool(row.get("disc/loss")), bool(row.get("train/loss"))) == (stepped, not stepped)
    state = read_state(out / "checkpoint-1" / STATE)["extra"]["discriminator"]
    assert set(state) == {"layers", "optimizer"} and all(k.startswith("0.") for k in state["layers"])
    assert state["optimizer"]["param_groups"][0]["lr"] == 5e-6  # config/grpo.py:354


def test_a_run_cut_back_to_checkpoint_1_resumes_exactly(tmp_path: Path):
    """Seed 9 makes rounds 0 and 1 discriminator rounds and round 2 a generator round (the references then
    score above the generations), so the resume restores a stepped discriminator and its Adam state, steps it
    again, and hands the generator round a decision and rewards that depend on both."""
    from zoo.data import DATASETS, register_dataset

    if "fixture-reference-squares" not in DATASETS:
        register_dataset("fixture-reference-squares", "tests.engines.test_diffusion_engine:reference_squares")
    config = recipe(*ADV, "algorithm.reference_images.name=fixture-reference-squares", "algorithm.discriminator=pickscore",
                    "algorithm.discriminator_backbone=tiny:clip", "algorithm.num_steps=2", "training.seed=9",
                    "training.steps=3", "training.save_steps=1", "training.save_total_limit=3", "training.eval_every=1")  # fmt: skip
    straight = train(config, tmp_path / "straight")
    rounds = ["D" if row["disc/loss"] else "G" for row in metric_rows(straight)[1:]]
    assert rounds == ["D", "D", "G"], f"seed 9 no longer gives D, D, G ({rounds}): pick a seed that does"

    resumed = interrupted_copy(straight, tmp_path / "resumed", 1)
    train(config, resumed, resume=True)
    assert metric_rows(resumed) == metric_rows(straight)
    for name in ("final/trained.safetensors", "checkpoint-3/trained.safetensors"):
        assert_same_tensors(straight / name, resumed / name)
    layers = lambda run, step: read_state(run / f"checkpoint-{step}" / STATE)["extra"]["discriminator"]["layers"]
    first, last, again = layers(straight, 1), layers(straight, 3), layers(resumed, 3)
    assert all(torch.equal(last[k], again[k]) for k in last)
    assert any(not torch.equal(first[k], last[k]) for k in last)
