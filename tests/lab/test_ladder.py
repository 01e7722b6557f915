"""``lab.ladder``: the SFT -> GRPO -> equal-time control ladder's bookkeeping, on hand-made run folders."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lab.ladder import (
    Ladder,
    ReleaseArgs,
    across_seeds,
    clears,
    control_budget,
    copy_weights,
    curve,
    load_stages,
    mean_difference,
    minutes,
    paired_cluster_se,
    paired_comparisons,
    plot_curves,
    stage_rescore,
    standard_error,
    summarise,
    train,
    train_reward_trend,
)
from zoo.runs import mark_complete


def fake_run(run: Path, rows: list[tuple[int, float, float]], saved: list[int]) -> Path:
    """A run folder as ``zoo train`` leaves it: metrics.csv (step, cpu_minutes, loss), checkpoints, final/."""
    run.mkdir(parents=True)
    lines = ["step,cpu_minutes,loss,lr", *(f"{s},{m},{loss},0.001" for s, m, loss in rows)]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")
    for step in saved:
        folder = run / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "model.safetensors").write_text(str(step))
        mark_complete(folder, step)
    (run / "checkpoint-999").mkdir()  # a killed write: no marker, must be skipped
    (run / "final").mkdir()
    (run / "final" / "model.safetensors").write_text("final")
    return run


def step_score(model_dir: Path, n: int) -> float:
    """A stand-in metric: the checkpoint's step / 100 (final/ scores 0.9), whatever ``n``."""
    text = (model_dir / "model.safetensors").read_text()
    return 0.9 if text == "final" else int(text) / 100


LADDER = Ladder(Path("sft.yaml"), Path("grpo.yaml"), Path("control.yaml"), metric="pdms", evaluate=step_score)


def test_curve_reads_complete_checkpoints_with_their_logged_minutes_and_loss(tmp_path):
    run = fake_run(tmp_path / "grpo-s0", [(10, 0.5, 1.0), (20, 1.25, 0.5)], saved=[20, 10])
    points = curve(LADDER, run, n=8)
    assert points == [{"step": 10, "pdms": 0.1, "minutes": 0.5, "loss": 1.0},
                      {"step": 20, "pdms": 0.2, "minutes": 1.25, "loss": 0.5}]  # fmt: skip
    assert minutes(run) == 1.25


def test_summary_gains_are_against_the_sft_start_per_seed():
    sft = {"final_pdms": 0.5}
    grpo = [{"seed": 0, "final_pdms": 0.6}, {"seed": 1, "final_pdms": 0.45}]
    control = [{"seed": 0, "final_pdms": 0.55}]
    out = summarise(LADDER, sft, grpo, control)
    assert out["pdms_after_sft"] == 0.5 and out["pdms_after_grpo"] == {"seed0": 0.6, "seed1": 0.45}
    assert out["grpo_gain_over_sft"] == pytest.approx({"seed0": 0.1, "seed1": -0.05})
    assert out["grpo_gain_min"] == pytest.approx(-0.05) and out["grpo_gain_mean"] == pytest.approx(0.025)
    assert out["pdms_after_sft_continue_equal_time"] == {"seed0": 0.55}
    assert "pdms_after_sft_continue_equal_time" not in summarise(LADDER, sft, grpo, [])


def test_train_reward_trend_compares_the_first_and_last_logged_steps():
    # metrics.csv as the records keep it: strings, the last row (train summary) without a reward
    history = [{"step": s, "reward": str(r)} for s, r in enumerate([0.1, 0.2, 0.3, 0.5, 0.6, 0.7], 1)]
    history.append({"step": 6, "reward": ""})
    trend = train_reward_trend(history, k=2)
    assert trend == pytest.approx({"first": 0.15, "last": 0.65, "k": 2, "logged_steps": 6})
    assert train_reward_trend(history, k=10)["k"] == 3  # never overlapping halves
    assert train_reward_trend([{"step": 1, "reward": ""}]) is None
    sft = {"final_pdms": 0.5}
    grpo = [{"seed": 0, "final_pdms": 0.6, "log_history": history}, {"seed": 1, "final_pdms": 0.6}]
    assert set(summarise(LADDER, sft, grpo, [])["grpo_train_reward"]) == {"seed0"}
    assert "grpo_train_reward" not in summarise(LADDER, sft, grpo[1:], [])


def test_finalize_helpers_copy_weights_and_plot(tmp_path):
    args = ReleaseArgs(run_dir=tmp_path / "runs", checkpoint=tmp_path / "ckpt", card=tmp_path / "card.md",
                       eval_n=4, final_eval_n=8, sft_overrides=("training.steps=4",))  # fmt: skip
    fake_run(args.run_dir / "sft", [(10, 0.1, 2.0)], saved=[10])
    fake_run(args.run_dir / "grpo-s0", [(5, 0.3, 0.0)], saved=[5])
    records = {"sft": {"curve": curve(LADDER, args.run_dir / "sft", 2), "final_pdms": 0.4},
               "grpo-s0": {"seed": 0, "curve": curve(LADDER, args.run_dir / "grpo-s0", 4), "final_pdms": 0.6}}  # fmt: skip
    for name, record in records.items():
        (args.run_dir / f"{name}.json").write_text(json.dumps(record))
    sft, grpo, control = load_stages(args, [0])
    assert sft == records["sft"] and grpo == [records["grpo-s0"]] and control == []  # no control run yet

    saved = {"tokenizer_class": "Qwen2Tokenizer", "local_files_only": True, "is_local": True}  # as saved offline
    (args.run_dir / "grpo-s0" / "final" / "tokenizer_config.json").write_text(json.dumps(saved))
    (args.run_dir / "grpo-s0" / "final" / "training_args.bin").write_bytes(b"pickle")
    copy_weights(args, 0, "tiny", {"held_out_pdms": 0.4})
    assert (args.checkpoint / "model.safetensors").read_text() == "final"
    assert not (args.checkpoint / "training_args.bin").exists()
    assert json.loads((args.checkpoint / "tokenizer_config.json").read_text()) == {"tokenizer_class": "Qwen2Tokenizer"}
    assert json.loads((args.checkpoint / "sft" / "training.json").read_text()) == {
        "entry": "tiny", "stage": "SFT warm start (GRPO's starting point)", "held_out_pdms": 0.4,
        "record": "../training.json"}  # fmt: skip
    assert args.to_record() == {"eval_n": 4, "final_eval_n": 8, "sft_eval_n": None,
                                "sft_overrides": ["training.steps=4"], "grpo_overrides": [],
                                "control_overrides": [], "control_steps_per_minute": None}  # fmt: skip

    plot_curves({"sft": sft, "grpo": grpo}, tmp_path / "curves.png", metric="pdms")
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_paired_cluster_se_is_the_paired_se_for_one_step_episodes_and_zero_for_equal_arms():
    """With one step per episode the cluster estimate is the plain paired standard error of the
    differences; identical arms differ by exactly 0 with no spread."""
    arm, base = [[1], [0], [1], [1], [0]], [[0], [0], [1], [0], [1]]
    diffs = [a[0] - b[0] for a, b in zip(arm, base)]
    assert paired_cluster_se(arm, base) == pytest.approx(standard_error(diffs))
    assert paired_cluster_se(arm, arm) == 0.0


def test_paired_cluster_se_by_hand_on_uneven_episodes():
    # episodes of 2 and 3 steps: d = (1, -1, 2) on n = (2, 1, 3); delta = 2/6; residuals d - delta*n
    arm, base = [[1, 1], [0], [1, 1, 1]], [[0, 1], [1], [0, 1, 0]]
    delta = 2 / 6
    residuals = [1 - 2 * delta, -1 - delta, 2 - 3 * delta]
    expected = (3 / 2 * sum(r * r for r in residuals)) ** 0.5 / 6
    assert paired_cluster_se(arm, base) == pytest.approx(expected)
    with pytest.raises(ValueError, match="same episodes"):
        paired_cluster_se(arm, base[:2])


def test_paired_comparisons_pair_each_seed_with_the_start_and_its_own_control():
    """GRPO - SFT start per seed; control - start and GRPO - control only where that seed's control ran."""
    import numpy as np

    rng = np.random.default_rng(1)
    sft = rng.uniform(0, 1, 40)
    grpo = {0: sft + rng.normal(0.1, 0.05, 40), 1: sft + rng.normal(0, 0.2, 40)}
    control = {0: sft + 0.02}
    out = paired_comparisons(sft.tolist(), {s: v.tolist() for s, v in grpo.items()},
                             {s: v.tolist() for s, v in control.items()}, mean_difference)  # fmt: skip
    assert set(out) == {"grpo_minus_sft", "control_minus_sft", "grpo_minus_control"}
    assert set(out["grpo_minus_sft"]) == {"seed0", "seed1"} and set(out["grpo_minus_control"]) == {"seed0"}
    diff = grpo[0] - control[0]
    assert out["grpo_minus_control"]["seed0"]["diff"] == pytest.approx(diff.mean())
    assert out["grpo_minus_control"]["seed0"]["se"] == pytest.approx(diff.std(ddof=1) / np.sqrt(40))
    assert out["control_minus_sft"]["seed0"] == pytest.approx({"diff": 0.02, "se": 0.0}, abs=1e-12)
    assert out["grpo_minus_sft"]["seed1"]["diff"] == pytest.approx((grpo[1] - sft).mean())
    renamed = paired_comparisons([0.0], {0: [1.0]}, {}, mean_difference, arm="rl")
    assert renamed == {"rl_minus_sft": {"seed0": {"diff": 1.0, "se": 0.0}}}
    with pytest.raises(ValueError, match="same samples"):
        mean_difference([1.0, 2.0], [1.0])


def test_across_seeds_is_the_mean_seed_difference_with_its_standard_error_over_seeds():
    """Seeds as the unit: scipy.stats.sem (ddof 1) of the per-seed differences; each seed's own scene-level
    ``se`` plays no part, and one seed gives no spread to estimate."""
    from scipy import stats

    per_seed = {"seed0": {"diff": 0.015, "se": 0.019}, "seed1": {"diff": 0.050, "se": 0.019},
                "seed2": {"diff": -0.005, "se": 0.019}}  # fmt: skip
    out = across_seeds(per_seed)
    assert out == pytest.approx({"diff": 0.02, "se": float(stats.sem([0.015, 0.05, -0.005])), "seeds": 3})
    assert not clears(out)  # 0.020 against 2 x 0.016
    assert across_seeds({"seed0": {"diff": 0.1, "se": 0.0}}) is None


def test_rescore_rewrites_the_final_metric_of_every_stage_that_ran(tmp_path):
    """``rescore`` evaluates each existing stage's final/ on ``final_eval_n`` samples; a missing stage is skipped."""
    seen = []

    def by_n(model_dir: Path, n: int) -> float:
        seen.append((model_dir.parent.name, n))
        return n / 1000

    ladder = Ladder(Path("sft.yaml"), Path("grpo.yaml"), Path("control.yaml"), metric="pdms", evaluate=by_n)
    args = ReleaseArgs(run_dir=tmp_path, checkpoint=tmp_path / "ckpt", card=tmp_path / "card.md",
                       eval_n=4, final_eval_n=700)  # fmt: skip
    for run in ("sft", "grpo-s0", "sft-continue-s0", "grpo-s1"):
        (tmp_path / f"{run}.json").write_text(json.dumps({"final_pdms": 0.1, "curve": [1]}))
    stage_rescore(ladder, args, [0, 1])
    assert seen == [("sft", 700), ("grpo-s0", 700), ("sft-continue-s0", 700), ("grpo-s1", 700)]
    assert json.loads((tmp_path / "grpo-s1.json").read_text()) == {"final_pdms": 0.7, "curve": [1]}


def test_rescore_with_curves_reads_every_checkpoint_again(tmp_path):
    """``rescore --curves`` (after the metric itself changed): every complete checkpoint of each stage is
    scored again, the SFT's at ``sft_curve_n`` and the others at ``eval_n``; an incomplete one is not."""
    from zoo.runs import mark_complete

    seen = []

    def by_n(model_dir: Path, n: int) -> float:
        seen.append((model_dir.parent.name, model_dir.name, n))
        return n / 1000

    ladder = Ladder(Path("sft.yaml"), Path("grpo.yaml"), Path("control.yaml"), metric="pdms", evaluate=by_n)
    args = ReleaseArgs(run_dir=tmp_path, checkpoint=tmp_path / "ckpt", card=tmp_path / "card.md",
                       eval_n=40, final_eval_n=700, sft_eval_n=300)  # fmt: skip
    for run, steps in (("sft", (10, 20)), ("grpo-s0", (5,))):
        (tmp_path / f"{run}.json").write_text(json.dumps({"final_pdms": 0.1, "curve": [{"step": 1, "pdms": 0.5}]}))
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.csv").write_text("step,cpu_minutes,loss\n" + "".join(f"{s},{s / 10},0.5\n" for s in steps))
        for step in (*steps, 30):
            folder = tmp_path / run / f"checkpoint-{step}"
            folder.mkdir()
            if step != 30:  # checkpoint-30 was interrupted: no marker
                mark_complete(folder, step)
    stage_rescore(ladder, args, [0], curves=True)
    assert [s for s in seen if s[1] != "final"] == [("sft", "checkpoint-10", 300), ("sft", "checkpoint-20", 300),
                                                    ("grpo-s0", "checkpoint-5", 40)]  # fmt: skip
    sft = json.loads((tmp_path / "sft.json").read_text())
    assert sft == {"final_pdms": 0.7, "curve": [{"step": 10, "pdms": 0.3, "minutes": 1.0, "loss": 0.5},
                                                {"step": 20, "pdms": 0.3, "minutes": 2.0, "loss": 0.5}]}  # fmt: skip


def test_train_starts_afresh_unless_resuming(tmp_path, monkeypatch):
    """A stage's run folder is wiped before ``zoo train``, except with ``resume`` (an SFT run extended by a
    decay continues from its newest checkpoint: the engine restores the optimiser, schedule and data stream)."""
    import zoo.train

    calls = []
    monkeypatch.setattr(zoo.train, "run", lambda recipe, overrides, output_dir, resume: calls.append(resume))
    out = tmp_path / "sft"
    (out / "checkpoint-4000").mkdir(parents=True)
    train(Path("sft.yaml"), ["training.steps=4500"], out, resume=True)
    assert (out / "checkpoint-4000").is_dir() and calls == [True]
    train(Path("sft.yaml"), [], out)
    assert not out.exists() and calls == [True, False]


def test_control_budget_is_grpo_minutes_or_a_decayed_step_count_the_control_recipe_accepts(tmp_path):
    """The control either stops at GRPO's CPU minutes at a constant rate, or (``control_steps_per_minute``)
    runs a calibrated step count whose rate decays to zero over all of it; the SFT engine refuses a decay
    together with a time limit, so the second form must clear ``max_minutes``."""
    from zoo.engines.reading import load_recipe
    from zoo.engines.vlm.sft import lr_factor

    recipe = Path("domains/driving/recipes/driving-vla-tiny-sft-control.yaml")
    args = ReleaseArgs(run_dir=tmp_path, checkpoint=tmp_path, card=tmp_path, eval_n=4, final_eval_n=4)
    assert control_budget(args, 12.5) == ["training.max_minutes=12.5"]
    assert load_recipe(recipe, control_budget(args, 12.5)).training.max_minutes == 12.5

    decayed = load_recipe(recipe, control_budget(replace(args, control_steps_per_minute=145.0), 20.0))
    tr = decayed.training
    assert (tr.steps, tr.decay_steps, tr.max_minutes, tr.save_steps) == (2900, 2900, None, 725)
    factors = [lr_factor(s, warmup=tr.warmup_steps, total=tr.steps, decay=tr.decay_steps) for s in range(tr.steps)]
    assert factors[-1] == pytest.approx(1 / 2900) and max(factors) < 1.0  # decaying from the first step on
