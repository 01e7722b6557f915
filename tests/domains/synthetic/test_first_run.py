"""The README's first training command learns in front of the user: its reward rises within seconds of CPU.

The short version of ``bench/first_run.py``: the same recipe (GRPO from the shipped warm start
``checkpoints/synthetic-colour-sft-tiny``), the same seed, fewer steps, run through ``zoo train``'s own
entry point. The margin sits far above chance: at learning rate 0 (the same sampling, no update; 60
steps of seed 0) a step's mean reward has a standard deviation of 0.065, so the last-10 minus first-10
difference of a run that learns nothing has one of 0.029 (the largest of 20,000 random splits of those
steps: 0.106). With the recipe's rate the first 30 steps rose by 0.279, 0.226 and 0.289 (seeds 0, 1, 2,
``python -m lab.synthetic.release``); ``bench/first_run.py --steps 30 --null`` measures both again.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RECIPE = ROOT / "domains" / "synthetic" / "recipes" / "synthetic-colour-grpo.yaml"
STEPS, K = 30, 10
#: Last-K minus first-K mean reward to beat: five standard deviations of a run that learns nothing.
MARGIN = 0.15


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``zoo train RECIPE`` for :data:`STEPS` steps, through the command line's own ``main``: its run
    directory and what it printed."""
    import contextlib
    import io

    from zoo.cli import main

    out, printed = tmp_path_factory.mktemp("first-run") / "run", io.StringIO()
    argv = ["train", str(RECIPE), "--set", f"training.steps={STEPS}", "--set", f"training.save_steps={STEPS}",
            "--output-dir", str(out)]  # fmt: skip
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        assert main(argv) == 0, printed.getvalue()[-3000:]
    return out, printed.getvalue()


def rows(run: Path) -> list[dict[str, str]]:
    with (run / "metrics.csv").open() as handle:
        return [row for row in csv.DictReader(handle) if row.get("reward")]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_the_warm_start_gives_grpo_a_signal_from_the_first_steps(first_run: tuple[Path, str]) -> None:
    """Partly right, with answers that disagree within a group: a random start scores 0 in every group."""
    first = rows(first_run[0])[:K]
    assert 0.15 < mean([float(r["reward"]) for r in first]) < 0.7
    assert mean([float(r["frac_reward_zero_std"]) for r in first]) < 0.5, "most groups have a reward spread"


def test_the_reward_rises_by_more_than_chance(first_run: tuple[Path, str]) -> None:
    rewards = [float(r["reward"]) for r in rows(first_run[0])]
    assert len(rewards) == STEPS
    assert mean(rewards[-K:]) - mean(rewards[:K]) > MARGIN, rewards


def test_the_terminal_shows_the_bar_and_the_curve_not_metrics_dicts(first_run: tuple[Path, str]) -> None:
    run, printed = first_run
    assert "reward=" in printed and "'grad_norm'" not in printed and "'loss'" not in printed
    assert f"its curve: {run / 'reward_curve.png'}" in printed and (run / "reward_curve.png").is_file()
    assert (run / "README.md").read_text().startswith("# synthetic-colour-grpo\n"), "the zoo's run card, not TRL's"
