"""The diffusion engine on tiny models: each method trains a round, a resumed run equals an unbroken one,
the run leaves its logs, curve and sample grids, bad recipes are named errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rewards.base import REWARDS, RewardResult, register
from zoo.engines import ENGINES
from zoo.engines.diffusion.recipe import DiffusionRecipe
from zoo.engines.diffusion.setup import build_run
from zoo.engines.diffusion.trainer import train, train_round
from zoo.engines.reading import load_checked, load_recipe
from zoo.recipe import RecipeError

SMOKE = Path(__file__).with_name("diffusion_smoke.yaml")
ADV = ("algorithm.method=adv_grpo", "rewards=[]")  # the discriminator is Adv-GRPO's only reward
TINY = ["algorithm.group_size=4", "algorithm.num_steps=3", "training.prompts_per_step=1", "training.train_batch_size=6"]


def recipe(*overrides: str) -> DiffusionRecipe:
    return load_recipe(SMOKE, [*TINY, *overrides])


def checked(*overrides: str) -> DiffusionRecipe:
    """:func:`recipe`, then the engine's check, as ``zoo train`` runs both before anything loads."""
    return load_checked(SMOKE, [*TINY, *overrides])[0]


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize(
    "overrides",
    [
        ("algorithm.method=flow_grpo", "algorithm.beta=0.04"),
        ("algorithm.method=dance_grpo",),
        ("algorithm.method=ddpo", "model.name=tiny:unet", "model.tiny={sample_size: 8}", "training.lora.enabled=true"),
        ("algorithm.method=rlcm", "model.name=tiny:lcm", "model.tiny={sample_size: 8}"),
    ],
    ids=lambda o: o[0].split("=")[1],
)
def test_one_round_changes_the_trained_weights(tmp_path: Path, overrides: tuple[str, ...]) -> None:
    run = build_run(recipe(*overrides), tmp_path)
    before = [p.detach().clone() for p in run.trainable]
    metrics = train_round(run, 0)
    assert any(not torch.equal(a, p) for a, p in zip(before, run.trainable, strict=True))
    assert 0.0 < metrics["reward"] < 1.0 and metrics["train/grad_norm"] > 0
    if "algorithm.beta=0.04" in overrides:
        assert metrics["train/kl"] >= 0.0


def test_lora_is_the_default_and_trains_only_adapters(tmp_path: Path) -> None:
    run = build_run(recipe("training.lora.enabled=true", "training.lora.r=4"), tmp_path)
    names = run.trainable_state()
    assert names and all("lora" in n for n in names)


def test_resume_continues_exactly(tmp_path: Path) -> None:
    common = ("training.steps=2", "training.eval_every=1", "training.ema_decay=0.9")
    straight = train(recipe(*common), tmp_path / "straight")
    interrupted = recipe("training.steps=1", "training.eval_every=1", "training.ema_decay=0.9")
    train(interrupted, tmp_path / "resumed")
    resumed = train(recipe(*common), tmp_path / "resumed", resume=True)
    for name in ("checkpoint-2/trained.safetensors", "final/trained.safetensors"):
        a, b = load_file(str(straight / name)), load_file(str(resumed / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    rows = list(csv.DictReader((resumed / "metrics.csv").open()))
    assert [int(r["step"]) for r in rows] == [0, 1, 2]
    straight_rows = list(csv.DictReader((straight / "metrics.csv").open()))
    assert rows[-1]["reward"] == straight_rows[-1]["reward"]


def test_run_leaves_curve_grids_and_eval_rows(tmp_path: Path) -> None:
    out = ENGINES.get("diffusion").run(recipe("training.steps=2", "training.eval_every=2"), tmp_path)
    assert (out / "reward_curve.png").stat().st_size > 0
    assert sorted(p.name for p in (out / "samples").iterdir()) == ["step-00000.png", "step-00002.png"]
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert rows[0]["eval/reward"] and rows[-1]["eval/reward"] and rows[-1]["train/loss"]


class _HalfMissing:
    """Scores every other image ``None`` (a reward worker that died)."""

    name = "test-half-missing"

    def __call__(self, predictions, samples):
        return [
            RewardResult(None, error="died") if i % 2 else RewardResult(float(p.mean()))
            for i, p in enumerate(predictions)
        ]


def test_unscored_images_get_zero_advantage(tmp_path: Path) -> None:
    if "test-half-missing" not in REWARDS:
        register("test-half-missing", _HalfMissing())
    run = build_run(recipe("rewards=[test-half-missing]"), tmp_path)
    from zoo.engines.diffusion.methods import METHODS
    from zoo.engines.diffusion.trainer import flat_round

    transitions, rewards, metrics = flat_round(run, METHODS.get("flow_grpo"), run.draw_prompts())
    assert torch.isnan(rewards[1::2]).all() and metrics["reward_missing"] == 0.5
    per_image = transitions.advantages.reshape(len(rewards), -1)
    assert (per_image[1::2] == 0).all() and (per_image[0::2] != 0).any()


def test_each_reward_terms_mean_is_logged_under_its_own_name(tmp_path: Path) -> None:
    """Terms are gathered as one (images, terms) table: the half-scored term's mean is over its scored images, the
    constant's is its constant, and neither lands under the other's name."""
    for name, reward in (("test-half-missing", _HalfMissing()), ("test-constant-half", _Constant())):
        if name not in REWARDS:
            register(name, reward)
    run = build_run(recipe("rewards=[test-half-missing, test-constant-half]"), tmp_path)
    prompts = run.draw_prompts()[:1] * 4
    latents = torch.randn(4, *run.model.latent_shape, generator=torch.Generator().manual_seed(0))
    rewards, metrics = run.score(latents, prompts)
    scored = _HalfMissing()(list(run.model.decode(latents).cpu()), [None] * 4)
    assert metrics["rewards/test-half-missing/mean"] == pytest.approx((scored[0].score + scored[2].score) / 2)
    assert metrics["rewards/test-constant-half/mean"] == 0.5
    assert torch.isnan(rewards[1::2]).all() and metrics["reward_missing"] == 0.5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("algorithm.method=flow_grp",), "Did you mean"),
        (("algorithm.method=ddpo",), "needs a ddim model"),
        (("algorithm.method=tree_grpo", "algorithm.num_steps=5", "algorithm.group_size=6"), "branch_factor"),
        (("algorithm.group_size=1",), "group_size"),
        (("algorithm.timestep_fraction=0",), "timestep_fraction"),
        (("algorithm.eval_num_steps=1",), "eval_num_steps=1"),
        (("prompts.train=[]",), "prompts.train is empty"),
    ],
)
def test_bad_recipes_are_named_errors(overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        checked(*overrides)


def test_recipe_round_trips_through_yaml(tmp_path: Path) -> None:
    original = recipe("algorithm.method=dance_grpo")
    path = tmp_path / "r.yaml"
    original.to_yaml(path)
    assert DiffusionRecipe.from_yaml(path) == original


def test_tree_round_trains_branch_transitions_with_stepwise_advantages(tmp_path: Path) -> None:
    from zoo.engines.diffusion.tree import tree_evals, tree_round

    run = build_run(recipe("algorithm.method=tree_grpo", "algorithm.num_steps=4", "algorithm.branch_steps=[0, 2]",
                           "algorithm.branch_factor=2"), tmp_path)  # fmt: skip
    before = [p.detach().clone() for p in run.trainable]
    transitions, rewards, metrics = tree_round(run, ["a red square"])
    assert rewards.shape == (4,) and len(transitions) == 1 + 2 and transitions.next_latents.shape[1] == 2
    assert metrics["sample_evals"] == tree_evals(4, (0, 2), 2) == 1 + 2 + 2 + 4
    # the root split's children: the mean leaf rewards of their subtrees, minus the root's value
    std = rewards.std() + 1e-4
    expected = (rewards.view(2, 2).mean(1) - rewards.mean()) / std
    torch.testing.assert_close(transitions.advantages[0], expected)
    train_round(run, 0)
    assert any(not torch.equal(a, p) for a, p in zip(before, run.trainable, strict=True))


def reference_squares(n: int = 8, prompts: tuple[str, ...] = ("a red square", "a blue circle")):
    """Reference images for Adv-GRPO: bright squares captioned with the smoke recipe's prompts in turn (a dataset
    loader, registered below)."""
    from PIL import Image

    from zoo.data import Sample

    return [Sample(id=str(i), images=(Image.new("RGB", (32, 32), (200 + 5 * i, 180, 40)),), prompt=prompts[i % len(prompts)])
            for i in range(n)]  # fmt: skip


def test_adv_grpo_scores_with_a_discriminator_that_learns(tmp_path: Path) -> None:
    from zoo.data import DATASETS, register_dataset

    if "fixture-reference-squares" not in DATASETS:
        register_dataset("fixture-reference-squares", f"{__name__}:reference_squares")
    from tests.engines.test_adversarial_dino import tiny_dinov2

    backbone = tiny_dinov2(tmp_path / "dino")
    run = build_run(recipe(*ADV, "algorithm.reference_images.name=fixture-reference-squares",
                           "algorithm.discriminator_lr=1e-2", f"algorithm.discriminator_backbone={backbone}"), tmp_path)  # fmt: skip
    head = run.extra["discriminator"].discriminator.head
    first = train_round(run, 0)
    for index in range(1, 4):  # rounds 0-3 are discriminator rounds under the default d_times=10
        last = train_round(run, index)
    assert last["disc/real"] - last["disc/fake"] > first["disc/real"] - first["disc/fake"]
    assert run.reward is run.extra["discriminator"] and head.training
    with pytest.raises(RecipeError, match="reference_images"):
        checked(*ADV)
    with pytest.raises(RecipeError, match="d_times"):
        checked(*ADV, "algorithm.reference_images.name=fixture-reference-squares", "algorithm.d_times=0")
    with pytest.raises(RecipeError, match="rewarded by its discriminator alone"):  # a reward it would not use
        checked("algorithm.method=adv_grpo", "algorithm.reference_images.name=fixture-reference-squares")
    with pytest.raises(RecipeError, match="rewards is empty"):
        checked("rewards=[]")
    unpaired = recipe(*ADV, "algorithm.reference_images.name=fixture-reference-squares",
                      "algorithm.reference_images.kwargs={prompts: [a red square]}", f"algorithm.discriminator_backbone={backbone}")  # fmt: skip
    with pytest.raises(ValueError, match=r"1 training prompt\(s\) have no reference image.*a blue circle"):
        build_run(unpaired, tmp_path / "unpaired")


def test_adv_grpo_alternates_nine_discriminator_rounds_with_one_generator_round(tmp_path: Path) -> None:
    """showlab/Adv-GRPO @ 8287f90, ``scripts/train_sd3_fast_dino_patch.py``: epoch ``e`` trains the DINO head
    (``train_dino``, then ``continue``) when ``(e + 1) % config.d_times != 0``, else the transformer alone;
    ``config/grpo.py`` sets ``d_times = 10``. Over 20 rounds: 18 discriminator steps, generator steps in rounds
    9 and 19, and each round leaves the other player's weights untouched."""
    from zoo.data import DATASETS, register_dataset

    if "fixture-reference-squares" not in DATASETS:
        register_dataset("fixture-reference-squares", f"{__name__}:reference_squares")
    config = recipe(*ADV, "algorithm.reference_images.name=fixture-reference-squares",
                    "algorithm.discriminator_backbone=tiny:dinov2", "algorithm.num_steps=2")  # fmt: skip
    assert config.algorithm.d_times == 10
    run = build_run(config, tmp_path)
    head = run.extra["discriminator"].discriminator.head
    snapshot = lambda params: [p.detach().clone() for p in params]
    moved = lambda before, params: any(not torch.equal(a, p) for a, p in zip(before, params, strict=True))
    disc_rounds, gen_rounds = [], []
    for index in range(20):
        policy, critic = snapshot(run.trainable), snapshot(head.parameters())
        metrics = train_round(run, index)
        if moved(critic, head.parameters()):
            assert "disc/loss" in metrics and "train/loss" not in metrics and not moved(policy, run.trainable)
            disc_rounds.append(index)
        if moved(policy, run.trainable):
            assert "train/loss" in metrics and "disc/loss" not in metrics
            gen_rounds.append(index)
    assert gen_rounds == [9, 19] and len(disc_rounds) == 18 and not set(disc_rounds) & set(gen_rounds)


@pytest.mark.slow
def test_flow_grpo_raises_held_out_brightness_and_lr0_does_not(tmp_path: Path) -> None:
    """The smoke recipe for 30 rounds (seed 0): measured +0.0095 held-out brightness; lr=0 leaves it unchanged."""

    def held_out(run_dir: Path) -> list[float]:
        return [float(r["eval/reward"]) for r in csv.DictReader((run_dir / "metrics.csv").open()) if r["eval/reward"]]

    settings = ("training.steps=30", "training.eval_every=30", "training.save_steps=30")
    learned = held_out(train(load_recipe(SMOKE, settings), tmp_path / "rl"))
    control = held_out(train(load_recipe(SMOKE, (*settings, "training.lr=0")), tmp_path / "control"))
    assert learned[-1] - learned[0] > 0.004
    assert control[0] == control[-1] == learned[0]


def test_a_fresh_run_into_an_old_directory_starts_a_fresh_log(tmp_path: Path) -> None:
    for _ in range(2):
        train(recipe("training.steps=1", "training.eval_every=1"), tmp_path)
    assert [r["step"] for r in csv.DictReader((tmp_path / "metrics.csv").open())] == ["0", "1"]


class _Constant:
    """Scores every image 0.5: every group ties."""

    name = "test-constant-half"

    def __call__(self, predictions, samples):
        return [RewardResult(0.5) for _ in predictions]


def test_tied_groups_are_filtered_and_leave_the_weights(tmp_path: Path) -> None:
    if "test-constant-half" not in REWARDS:
        register("test-constant-half", _Constant())
    run = build_run(recipe("rewards=[test-constant-half]"), tmp_path)
    before = [p.detach().clone() for p in run.trainable]
    metrics = train_round(run, 0)
    assert metrics["kept_fraction"] == 0.0 and metrics["zero_std_ratio"] == 1.0 and "train/loss" not in metrics
    assert all(torch.equal(a, p) for a, p in zip(before, run.trainable, strict=True))


def test_sde_window_trains_only_its_steps(tmp_path: Path) -> None:
    run = build_run(recipe("algorithm.num_steps=6", "algorithm.sde_window_size=2", "algorithm.sde_window_range=[1, 5]",
                           "algorithm.filter_zero_advantage=false"), tmp_path)  # fmt: skip
    from zoo.engines.diffusion.methods import METHODS
    from zoo.engines.diffusion.trainer import flat_round

    transitions, _, _ = flat_round(run, METHODS.get("flow_grpo"), run.draw_prompts())
    steps = sorted(set(transitions.index.tolist()))
    assert len(steps) == 2 and steps[1] == steps[0] + 1 and 1 <= steps[0] <= 3 and len(transitions) == 4 * 2
    assert torch.isfinite(transitions.old_log_prob).all()


def test_guidance_doubles_the_batch_and_one_turns_it_off(tmp_path: Path) -> None:
    guided = build_run(recipe(), tmp_path / "a")
    plain = build_run(recipe("algorithm.guidance_scale=1"), tmp_path / "b")
    assert guided.sampler.guidance_scale == 4.5 and guided.sampler.null_cond is not None
    assert plain.sampler.null_cond is None
    assert train_round(guided, 0)["train/grad_norm"] > 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("algorithm.sde_window_size=3", "algorithm.sde_window_range=[0, 2]"), "sde_window_range"),
        (("algorithm.sde_window_size=2", "algorithm.sde_window_range=[1, 9]"), "stochastic steps"),
        (("algorithm.method=tree_grpo", "algorithm.sde_window_size=1"), "unknown recipe key 'algorithm.sde_window_size'"),
        (("algorithm.guidance_scale=0.5",), "guidance_scale"),
    ],
)
def test_bad_guidance_and_window_are_named(overrides: tuple[str, ...], message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        checked(*overrides)


@pytest.mark.parametrize("model", ["tiny:sd3", "tiny:unet"])
def test_evaluation_samples_with_its_own_step_count(model: str, tmp_path: Path) -> None:
    """Flow-GRPO trains on 10-step rollouts and evaluates with 40: the evaluation sampler gets its own scheduler
    copy, so DDIM's training step (which reads the step count off its scheduler) keeps the rollout's."""
    extra = ("algorithm.method=ddpo", "model.tiny={sample_size: 8}") if model == "tiny:unet" else ()
    run = build_run(recipe(f"model.name={model}", *extra, "algorithm.eval_num_steps=5"), tmp_path)
    assert run.eval_sampler is not None and len(run.eval_sampler.timesteps) == 5 and len(run.sampler.timesteps) == 3
    assert run.eval_sampler.model.scheduler is not run.model.scheduler
    assert "eval/reward" in run.evaluate(0)
    if model == "tiny:unet":
        assert run.model.scheduler.num_inference_steps == 3
    train_round(run, 0)
    assert build_run(recipe("algorithm.eval_num_steps=3"), tmp_path / "same").eval_sampler is None


def colour_rows(split: str = "train") -> list:
    """GenEval-style prompts whose targets say what the image must show (a dataset loader, registered below)."""
    from zoo.data import Sample

    colours = ("red", "blue") if split == "train" else ("green",)
    return [Sample(id=c, prompt=f"a {c} square", target={"tag": "colors", "colour": c}) for c in colours]


def test_dataset_targets_reach_the_rewards_for_training_and_held_out_prompts(tmp_path: Path) -> None:
    """Flow-GRPO's GenEval reward needs each prompt's metadata row, not just its text: the engine passes a sample's
    dict target with its prompt, and ``data.eval_name`` supplies held-out prompts with theirs."""
    from zoo.data import DATASETS, register_dataset

    if "fixture-colour-rows" not in DATASETS:
        register_dataset("fixture-colour-rows", f"{__name__}:colour_rows")
    seen: list[dict] = []

    class Echo:
        name = "fixture-target-echo"

        def __call__(self, images, samples):
            seen.extend(dict(s.target) for s in samples)
            return [RewardResult(1.0 if s.target.get("colour") else 0.0) for s in samples]

    register("fixture-target-echo", Echo())
    try:
        run = build_run(recipe("prompts.train=[]", "prompts.eval=[]", "prompts.data.name=fixture-colour-rows",
                               "prompts.data.eval_name=fixture-colour-rows", "prompts.data.eval_kwargs={split: test}",
                               "rewards=[{name: fixture-target-echo}]"), tmp_path)  # fmt: skip
        assert sorted(run.prompts) == ["a blue square", "a red square"] and run.eval_prompts == ["a green square"]
        train_round(run, 0)
        assert seen and all(t["colour"] in t["prompt"] and t["tag"] == "colors" for t in seen)
        seen.clear()
        assert run.evaluate(0)["eval/reward"] == 1.0
        assert {t["colour"] for t in seen} == {"green"}
    finally:
        REWARDS._items.pop("fixture-target-echo", None)
