"""A throwaway domain folder is discovered with its entries, rewards, datasets, loss and recipes, with no other edit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "__init__.py": '''
        from zoo.domains import Domain

        DOMAIN = Domain(
            name="{name}",
            summary="a throwaway test domain",
            entries="domains.{name}.entries",
            rewards="domains.{name}.rewards",
            algorithms="domains.{name}.algorithms",
            algorithm_names={{"loss type": ("{name}-loss",)}},
            datasets={{"{name}-data": "domains.{name}.data:load"}},
        )
    ''',
    "algorithms.py": '''
        from zoo.algorithms import LossType, register_loss_type

        register_loss_type(LossType("{name}-loss", "token-mean"))
    ''',
    "entries.py": '''
        from zoo.kinds import VLMSpec
        from zoo.registry import ModelEntry, register

        register(ModelEntry(name="{name}-model", repo_id="someone/{name}", spec=VLMSpec(), architecture="qwen2_5_vl",
                            base_model="x", domain="{name}", task="nothing"))
    ''',
    "rewards.py": '''
        from rewards.base import RewardResult, register

        def always_one(predictions, samples):
            return [RewardResult(1.0) for _ in predictions]

        register("{name}-reward", always_one)
    ''',
    "data.py": '''
        from zoo.data import Sample

        def load(n=2):
            return [Sample(id=str(i), prompt="q", target={{"answer": "a"}}) for i in range(n)]
    ''',
    "recipes/{name}-smoke.yaml": '''
        name: {name}-smoke
        engine: vlm-trl
        data: {{name: {name}-data}}
        rewards: [{name}-reward]
    ''',
}

PROBE = """
import rewards, zoo
from zoo.data import load_dataset
from zoo.domains import get
from zoo.algorithms import LOSS_TYPES
from zoo.engines.reading import load_recipe
d = get("{name}")
print(zoo.info("{name}-model").domain, "{name}-reward" in (rewards.list() and rewards.REWARDS), len(list(load_dataset("{name}-data"))),
      [p.name for p in d.recipe_files()], load_recipe(d.recipe_files()[0]).rewards[0].name,
      LOSS_TYPES.get("{name}-loss").name)
"""


def test_new_domain_folder_needs_no_other_edit():
    name = "zz_throwaway"
    folder = ROOT / "domains" / name
    assert not folder.exists()
    try:
        for rel, text in FILES.items():
            path = folder / rel.format(name=name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text.format(name=name)).lstrip())
        out = subprocess.run([sys.executable, "-c", PROBE.format(name=name)], capture_output=True, text=True, cwd=ROOT, check=False)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [name, "True", "2", f"['{name}-smoke.yaml']", f"{name}-reward",
                                      f"{name}-loss"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
