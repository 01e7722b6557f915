"""CadQuery kinds and the CAD-RL-style reward: hand-checked IoU, Chamfer, failures, hostile code."""

import importlib.util

import numpy as np
import pytest

from rewards.base import RewardSample
from rewards.cad import CadGeometryReward
from rewards.rendering import RenderPool
from rewards.rendering.cad import cad_source, chamfer
from rewards.rendering.chart_facts import decode_facts

# found, not imported: CadQuery runs in the render pool's worker, and importing it here (OCP, VTK) cost each pytest
# worker 4 CPU-s at collection
pytestmark = pytest.mark.skipif(importlib.util.find_spec("cadquery") is None, reason="needs the `cad` extra (cadquery)")

BOX = "import cadquery as cq\nresult = cq.Workplane('XY').box(20, {y}, 5)\n"


@pytest.fixture(scope="module")
def pool():
    with RenderPool(1, kinds=("cadquery", "cadquery-geometry")) as p:
        yield p


def test_chamfer_by_hand():
    x = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    y = np.array([[0.0, 0.0, 0.0]])
    assert chamfer(x, y) == pytest.approx(0.5 + 0.0)  # x->y: (0 + 1) / 2; y->x: 0


def test_iou_of_two_boxes_by_hand(pool):
    # 20x10x5 and 20x8x5, both centred at the origin: common 800, union 1000 -> 0.8
    result = pool.render("cadquery-geometry", cad_source(BOX.format(y=8), BOX.format(y=10)), size=(32, 32))
    facts = decode_facts(result.image)
    assert facts["volume"] == pytest.approx(800) and facts["ref_volume"] == pytest.approx(1000)
    assert facts["iou"] == pytest.approx(0.8) and facts["chamfer"] > 0


def test_picture_of_a_part(pool):
    image = np.asarray(pool.render("cadquery", BOX.format(y=10), size=(64, 64)).image)
    assert image.shape == (64, 64, 3) and (image[32, 32] != 255).any() and (image[0, 0] == 255).all()


def test_reward_values_and_failures(pool, monkeypatch):
    monkeypatch.setattr("rewards.rendering.pool_for", lambda kind: pool)
    sample = RewardSample(target={"code": BOX.format(y=10)})
    texts = [f"```python\n{BOX.format(y=10)}```", f"```python\n{BOX.format(y=8)}```", "no code",
             "```python\nimport cadquery as cq\nresult = cq.Workplane('XY').box(1, 1, 1).edges().fillet(5)\n```",
             "```python\nwhile True:\n    pass\n```"]
    same, near, missing, broken, slow = CadGeometryReward(timeout=3.0)(texts, [sample] * 5)
    assert same.score == pytest.approx(1.0) and same.components["chamfer"] == pytest.approx(0.0)
    assert near.score == pytest.approx(0.1 + 0.9 * 0.8)
    assert missing.score == 0.0 and broken.score == 0.0 and broken.components["executes"] == 0.0
    # A job that runs past its limit is the answer's failure, not a masked sample (rewards.base).
    assert slow.score == 0.0 and slow.components["executes"] == 0.0 and "wall-clock limit" in slow.error


HOSTILE = {
    "list root": "import os\nresult = os.listdir('/')",
    "read file": "result = open('/etc/passwd').read()",
    "subprocess": "import subprocess\nresult = subprocess.run(['id'])",
    "ctypes": "import ctypes\nresult = ctypes.CDLL(None)",
    "socket": "import socket\nresult = socket.create_connection(('127.0.0.1', 9))",
    "exit": "import os\nos._exit(0)",
    "memory": "result = bytearray(8 * 1024 ** 3)",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_cadquery_code_is_contained_and_the_pool_recovers(pool, name):
    result = pool.render("cadquery-geometry", cad_source(HOSTILE[name], BOX.format(y=10)), size=(32, 32))
    assert not result.ok, name
    assert pool.render("cadquery", BOX.format(y=10), size=(16, 16)).ok
