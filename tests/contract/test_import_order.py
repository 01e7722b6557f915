"""Every registry resolves a name any domain registers, whatever the user imported first.

Each case runs in a fresh interpreter that imports only what the line names: discovery must come
from the registry itself (its first miss), not from an import someone else happened to make first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: what a user imports first -> (the lookup, what it prints)
FIRST_IMPORTS = {
    "rewards.get (the README's example)": ("import rewards; print(rewards.get('gui-g1').name)", "gui-g1"),
    "rewards.base.REWARDS": ("from rewards.base import REWARDS; print(REWARDS.get('gui-g1').name)", "gui-g1"),
    "verl's reward hook": (("from rewards.verl_hook import compute_score; "
                            "print(sorted(compute_score('gui-g1', '[1, 1, 5, 5]', "
                            "{'bbox': [0, 0, 9, 9], 'image_size': [10, 10]})))"),
                           "['box', 'hit', 'iou', 'score', 'unscored']"),  # gui-g1's own components
    "zoo.info": ("import zoo; print(zoo.info('patho-r1').name)", "patho-r1-7b"),
    "zoo.registry.MODELS": ("from zoo.registry import MODELS; print(MODELS.get('patho-r1').name)", "patho-r1-7b"),
    "zoo.load's lookup": ("from zoo.hub import lookup; print(lookup('gui-grounding-tiny').entry.domain)", "gui"),
    "zoo.data.DATASETS": ("from zoo.data import DATASETS; print(DATASETS.get('screenspot'))",
                          "domains.gui.data:load_screenspot"),
    "zoo.data.ANSWER_FORMATS": ("from zoo.data import ANSWER_FORMATS; print('svg-code' in ANSWER_FORMATS)", "True"),
    "loss types": ("from zoo.algorithms import LOSS_TYPES; print(LOSS_TYPES.get('gui-g1').name)", "gui_g1"),
    "advantage estimators": (("from zoo.algorithms import ADVANTAGE_ESTIMATORS; "
                              "print('stable-reinforce' in ADVANTAGE_ESTIMATORS)"), "True"),
    "policy methods": (("from zoo.engines.policy.methods import POLICY_METHODS; "
                        "print(POLICY_METHODS.get('carl-ppo').name)"), "carl-ppo"),
    "policy method configs": (("from zoo.engines.policy.recipe import PolicyAlgorithmConfig; "
                               "print(PolicyAlgorithmConfig.choices.get('carl-ppo').__name__)"), "CarlPPOConfig"),
    "environments": ("from zoo.engines.policy.methods import ENVIRONMENTS; print(ENVIRONMENTS.get('fetch-push'))",
                     "domains.robot.envs:make_fetch_push"),
    "rollout plug-ins": (("from zoo.engines.vlm.plugins import ROLLOUT_PLUGINS; "
                          "print(ROLLOUT_PLUGINS.get('shuffle-r1').name)"), "shuffle-r1"),
    "card kinds": ("from zoo.card_kinds import CARD_KINDS; print('domains.image.specs:JudgeSpec' in CARD_KINDS)",
                   "True"),
    "benchmarks": ("from zoo.benchmarks import BENCHMARKS; print(BENCHMARKS.get('u2bench-cla').domains[0].name)",
                   "medical"),
}


@pytest.mark.parametrize(("code", "expected"), list(FIRST_IMPORTS.values()), ids=list(FIRST_IMPORTS))
def test_a_domain_name_resolves_whatever_was_imported_first(code: str, expected: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == expected, done.stdout
