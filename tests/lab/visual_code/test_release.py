"""The statistics ``svg-scenes-tiny``'s record reports: standard errors and the paired comparisons of its arms."""

import numpy as np
import pytest

from lab.visual_code import release
from zoo.records import read_record


def test_summarise_reports_means_and_the_standard_error_of_the_reward():
    rng = np.random.default_rng(0)
    reward = rng.uniform(0, 1, 50).tolist()
    scores = {"reward": reward, "rlrf": rng.uniform(-1, 1, 50).tolist(), "renders": [1.0] * 49 + [0.0]}
    out = release.summarise(scores)
    assert out["reward"] == pytest.approx(np.mean(reward))
    assert out["rlrf"] == pytest.approx(np.mean(scores["rlrf"]))
    assert out["renders"] == pytest.approx(0.98)
    assert out["reward_se"] == pytest.approx(np.std(reward, ddof=1) / np.sqrt(50))


def _stage(seed, scores, minutes):
    """A stage's file as ``release.stage`` writes it (the SFT start has no seed), with these held-out scores."""
    final = {"reward": float(np.mean(scores)), "rlrf": 0.0, "rlrf_image": 0.0, "renders": 1.0, "reward_se": 0.0}
    seeded = {} if seed is None else {"seed": seed}
    return {**seeded, "overrides": [], "process_minutes": minutes, "render_minutes": 0.0, "total_minutes": minutes,
            "steps": 10, "curve": [{"step": 10, **final, "minutes": minutes}], "final": final,
            "final_scores": list(scores)}


def test_finalize_writes_the_record_per_scene_scores_and_the_curve(tmp_path, monkeypatch):
    """``finalize`` from stage records: paired differences in training.json, one row per held-out scene
    in eval/, the curve plot, and a card verdict that follows the numbers."""
    import argparse
    import json

    monkeypatch.setattr(release, "CHECKPOINT", tmp_path / "checkpoint")
    monkeypatch.setattr(release, "CARD_DIR", tmp_path / "card")
    run = tmp_path / "runs"
    for name in ("sft", "grpo-s0", "grpo-s1"):
        (run / name / "final").mkdir(parents=True)
        (run / name / "final" / "config.json").write_text("{}")
    columns = "step,reward,frac_reward_zero_std,svg-shape-iou/render_failed,completions/mean_length,completions/clipped_ratio"
    logged = [f"{5 * (i + 1)},{0.2 + 0.02 * i},{0.1 * (i % 2)},0.0,44,0.0" for i in range(8)]
    for seed in (0, 1):
        (run / f"grpo-s{seed}" / "metrics.csv").write_text("\n".join([columns, *logged, "40,,,,,"]) + "\n")
    rng = np.random.default_rng(2)
    sft = rng.uniform(0, 0.6, 30)
    records = {"sft": _stage(None, sft, 10.0), "grpo-s0": _stage(0, sft + 0.2, 2.0),
               "grpo-s1": _stage(1, sft + rng.normal(0, 0.3, 30), 2.0),
               "sft-continue-s0": _stage(0, sft + 0.05, 2.0), "sft-continue-s1": _stage(1, sft + 0.05, 2.0)}
    for name, record in records.items():
        (run / f"{name}.json").write_text(json.dumps(record))
    release.finalize(argparse.Namespace(run_dir=run, final_eval_n=30, eval_n=10), [0, 1])

    typed = read_record(tmp_path / "checkpoint" / "training.json")
    record = typed.to_dict()["measurements"]
    assert record["paired"]["grpo_minus_control"]["seed0"]["diff"] == pytest.approx(0.15)
    assert "final_scores" not in record["grpo"][0]
    diagnostics = record["grpo"][0]["diagnostics"]  # the summary row (no reward) is skipped
    assert diagnostics["train_reward"]["first"] == pytest.approx(0.21)
    assert diagnostics["train_reward"]["last"] == pytest.approx(0.33)
    assert diagnostics["frac_groups_all_equal"] == pytest.approx(0.05)
    evaluation = next(section.markdown for section in typed.sections if section.title == "Evaluation")
    assert "does not beat the control" in evaluation  # seed 1 is noise around the start
    cleared = {c.label for c in typed.comparisons if c.clears}
    assert "GRPO - control, seed 0" in cleared and "GRPO - control, seed 1" not in cleared
    card = (tmp_path / "card" / "README.md").read_text()
    assert "| GRPO - control, seed 1 |" in card and "\nlicense: apache-2.0\n" in card
    rows = [json.loads(line) for line in (tmp_path / "checkpoint" / "eval" / "predictions.jsonl").open()]
    assert len(rows) == 30 and rows[3]["grpo-s0"] == pytest.approx(sft[3] + 0.2, abs=1e-5)
    assert (tmp_path / "card" / "curves.png").stat().st_size > 0
    assert (tmp_path / "checkpoint" / "sft" / "config.json").is_file()
