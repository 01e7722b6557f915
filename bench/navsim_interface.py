"""The zoo's NAVSIM adapter run against NAVSIM's own code, not the tests' mirror of it.

The offline tests (``tests/domains/driving/test_navsim_agent.py``) import :mod:`domains.driving.navsim_agent`
against ``tests/domains/driving/navsim_mirror.py``. This script checks the mirror's claims on NAVSIM itself:

1. the agent built as ``run_pdm_score`` builds it: Hydra's ``instantiate`` of NAVSIM's own
   ``default_run_pdm_score`` config with ``agent._target_`` swapped for :class:`ZooAgent`, no abstract method left;
2. a real ``AgentInput`` from NAVSIM's own loader (``AgentInput.from_scene_dict_list``) on hand-made log frames
   and JPEGs, loading the sensors ``get_sensor_config()`` asked for;
3. ``compute_trajectory`` (the released model, then an unparsable answer against NAVSIM's
   ``ConstantVelocityAgent``) returning NAVSIM's ``Trajectory``;
4. that trajectory through what ``pdm_score`` does with it before the map-based scorer: ``transform_trajectory``,
   ``get_trajectory_as_array`` at the proposal sampling and ``PDMSimulator.simulate_proposals``;
5. a result CSV written by NAVSIM's own ``run_pdm_score.main`` (its DataFrame aggregation unchanged; only the
   scene/metric-cache loaders, the worker pool and the logger are replaced by in-memory stand-ins), read back by
   :func:`domains.driving.navsim_scores.read_navsim_scores`.

How to run (NAVSIM's sources at the commit to check, nuplan-devkit's beside them; neither is a zoo dependency)::

    git -C navsim checkout 0a380a9        # or v1.1 (0811876c); nuplan-devkit at nuplan-devkit-v1.2 (3966f55)
    python -m venv /tmp/navsim-venv && echo "$PWD/.venv/lib/python3.11/site-packages" \\
        > /tmp/navsim-venv/lib/python3.11/site-packages/zoo.pth
    /tmp/navsim-venv/bin/pip install shapely pyquaternion hydra-core pytorch-lightning geopandas rasterio \\
        aioboto3 retry
    /tmp/navsim-venv/bin/python bench/navsim_interface.py --navsim navsim --nuplan nuplan-devkit

Without NAVSIM or nuplan-devkit importable it prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

CAMERAS = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")
HISTORY = 4
PROPOSAL_SAMPLING = {"num_poses": 40, "interval_length": 0.1}
"""NAVSIM's ``proposal_sampling`` (``navsim/planning/script/config/common/default_common.yaml:29-33`` at 0a380a9)."""


def commit_of(path: Path) -> str:
    """The checked-out commit of ``path``, or a note that it is not a git checkout."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "(not a git checkout)"


def navsim_version() -> str:
    """``v2`` where ``AbstractAgent.__init__`` takes ``trajectory_sampling`` (0a380a9), else ``v1`` (v1.1)."""
    from navsim.agents.abstract_agent import AbstractAgent

    return "v2" if "trajectory_sampling" in inspect.signature(AbstractAgent.__init__).parameters else "v1"


def build_agent(model: str) -> Any:
    """The agent as ``run_pdm_score`` builds it: ``instantiate(cfg.agent)`` of NAVSIM's own config, overridden."""
    from hydra import compose, initialize_config_module
    from hydra.utils import instantiate
    from navsim.agents.abstract_agent import AbstractAgent

    from domains.driving.navsim_agent import ZooAgent

    overrides = ["agent._target_=domains.driving.navsim_agent.ZooAgent", f"+agent.model={model}"]
    with initialize_config_module("navsim.planning.script.config.pdm_scoring", version_base=None):
        cfg = compose("default_run_pdm_score", overrides=overrides)
    agent = instantiate(cfg.agent)
    assert isinstance(agent, ZooAgent) and isinstance(agent, AbstractAgent), type(agent)
    assert not ZooAgent.__abstractmethods__, ZooAgent.__abstractmethods__
    assert agent.requires_scene is False, agent.requires_scene
    assert agent._trajectory_sampling.num_poses == 8 and agent._trajectory_sampling.interval_length == 0.5
    print(f"ok: instantiate(cfg.agent) of default_run_pdm_score -> {agent.name()}, requires_scene=False, "
          f"sampling {agent._trajectory_sampling}")  # fmt: skip
    return agent


def write_frames(blobs: Path, command: list[int], velocity: tuple[float, float]) -> list[dict[str, Any]]:
    """Hand-made log frames in NAVSIM's scene-dict layout, one JPEG per camera and frame (the loader reads few)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    frames = []
    for i in range(HISTORY):
        cams = {}
        for cam in CAMERAS:
            path = f"log/{cam}/{i}.jpg"
            (blobs / path).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (90, 160, 3), dtype=np.uint8)).save(blobs / path)
            cams[cam] = {"data_path": path, "sensor2lidar_rotation": np.eye(3), "sensor2lidar_translation": np.zeros(3),
                         "cam_intrinsic": np.eye(3), "distortion": np.zeros(5)}  # fmt: skip
        frames.append({"ego2global_translation": [0.5 * i * velocity[0], 0.0, 0.0], "ego2global_rotation": [1, 0, 0, 0],
                       "ego_dynamic_state": [*velocity, 0.0, 0.0], "driving_command": np.array(command),
                       "cams": cams, "lidar_path": f"log/lidar/{i}.pcd"})  # fmt: skip
    return frames


def agent_input(agent: Any, blobs: Path, command: list[int], velocity: tuple[float, float]) -> Any:
    """NAVSIM's own ``AgentInput.from_scene_dict_list`` with the agent's sensor config."""
    from navsim.common.dataclasses import AgentInput

    observed = AgentInput.from_scene_dict_list(write_frames(blobs, command, velocity), blobs, HISTORY,
                                               agent.get_sensor_config())  # fmt: skip
    loaded = [name for name in vars(observed.cameras[-1]) if getattr(observed.cameras[-1], name).image is not None]
    assert loaded == [agent.camera] and observed.lidars[-1].lidar_pc is None, loaded
    print(f"ok: AgentInput.from_scene_dict_list loaded {loaded} at {len(observed.cameras)} frames, no lidar")
    return observed


def check_trajectories(agent: Any, observed: Any) -> Any:
    """The released model's plan, then an unparsable answer against NAVSIM's own ConstantVelocityAgent."""
    from navsim.agents.constant_velocity_agent import ConstantVelocityAgent
    from navsim.common.dataclasses import Trajectory

    agent.initialize()
    planned = agent.compute_trajectory(observed)
    assert isinstance(planned, Trajectory) and planned.poses.shape == (8, 3) and np.isfinite(planned.poses).all()
    print(f"ok: compute_trajectory -> navsim Trajectory {planned.poses.shape} {planned.poses.dtype}, "
          f"last pose {np.round(planned.poses[-1], 2).tolist()}, unparsed answers {agent.parse_failures}")  # fmt: skip
    real_pipeline, failures = agent.pipeline, agent.parse_failures
    agent.pipeline = lambda image, question: SimpleNamespace(trajectory=None, text="")
    fallback = agent.compute_trajectory(observed)
    agent.pipeline = real_pipeline
    reference = ConstantVelocityAgent(agent._trajectory_sampling).compute_trajectory(observed)
    np.testing.assert_allclose(fallback.poses, reference.poses, rtol=0, atol=1e-6)
    assert fallback.trajectory_sampling == reference.trajectory_sampling and agent.parse_failures == failures + 1
    print("ok: an unparsable answer equals NAVSIM's ConstantVelocityAgent.compute_trajectory")
    return planned


def simulate(trajectory: Any, start_s: float = 0.0) -> np.ndarray:
    """``pdm_score``'s steps before the map-based scorer: to the global frame, resampled, LQR-tracked."""
    from navsim.evaluate.pdm_score import get_trajectory_as_array, transform_trajectory
    from navsim.planning.simulation.planner.pdm_planner.simulation.pdm_simulator import PDMSimulator
    from nuplan.common.actor_state.ego_state import EgoState
    from nuplan.common.actor_state.state_representation import StateSE2, StateVector2D, TimePoint
    from nuplan.common.actor_state.vehicle_parameters import get_pacifica_parameters
    from nuplan.planning.simulation.trajectory.trajectory_sampling import TrajectorySampling

    sampling = TrajectorySampling(**PROPOSAL_SAMPLING)
    ego = EgoState.build_from_rear_axle(StateSE2(100.0, 50.0, 0.3), StateVector2D(5.0, 0.0), StateVector2D(0.0, 0.0),
                                        0.0, TimePoint(int(start_s * 1e6)), get_pacifica_parameters())  # fmt: skip
    states = get_trajectory_as_array(transform_trajectory(trajectory, ego), sampling, ego.time_point)
    simulated = PDMSimulator(sampling).simulate_proposals(states[None], ego)[0]
    assert simulated.shape[0] == sampling.num_poses + 1 and np.isfinite(simulated).all(), simulated.shape
    return simulated


def run_navsim_main(module: Any, rows: list[Any], tokens: list[str], out: Path, mapping: list | None) -> Path:
    """NAVSIM's ``run_pdm_score.main`` as released, its loaders, pool and logger replaced by in-memory stand-ins."""
    from omegaconf import OmegaConf

    loader = SimpleNamespace(tokens=tokens, get_tokens_list_per_log=lambda: {"log": tokens})
    stand_ins = {"build_logger": lambda cfg: None, "build_worker": lambda cfg: None,
                 "SceneLoader": lambda **kwargs: loader, "MetricCacheLoader": lambda path: loader,
                 "worker_map": lambda worker, fn, data_points: rows}  # fmt: skip
    saved = {name: getattr(module, name) for name in stand_ins}
    target = "nuplan.planning.simulation.trajectory.trajectory_sampling.TrajectorySampling"
    cfg = OmegaConf.create({"navsim_log_path": "-", "synthetic_scenes_path": "-", "metric_cache_path": "-",
                            "output_dir": str(out), "verbose": False,
                            "train_test_split": {"scene_filter": {}, "reactive_all_mapping": mapping or []},
                            "simulator": {"proposal_sampling": {"_target_": target, **PROPOSAL_SAMPLING}}})  # fmt: skip
    vars(module).update(stand_ins)
    try:
        module.main.__wrapped__(cfg)
    finally:
        vars(module).update(saved)
    [written] = out.glob("*.csv")
    return written


def check_v1_csv(out: Path, rng: np.random.Generator) -> None:
    """v1.1: rows as ``run_pdm_score`` returns them (token, valid, ``asdict(PDMResults)``), one failed scene."""
    from dataclasses import asdict, fields

    from navsim.common.dataclasses import PDMResults

    from domains.driving.navsim_scores import read_navsim_scores

    module = importlib.import_module("navsim.planning.script.run_pdm_score")
    rows = [{"token": f"t{i}", "valid": True,
             **asdict(PDMResults(*rng.uniform(0, 1, len(fields(PDMResults))).tolist()))} for i in range(3)]  # fmt: skip
    rows.append({"token": "t3", "valid": False})
    result = read_navsim_scores(run_navsim_main(module, rows, [r["token"] for r in rows], out, None))
    expected = np.mean([r["score"] for r in rows[:3]])
    assert (result.metric, result.navsim_version, result.valid_scenes, len(result.scenes)) == ("pdms", "v1", 3, 4)
    assert np.isclose(result.score, expected) and set(result.sub_metrics) == {f.name for f in fields(PDMResults)} - {
        "score"}, result  # fmt: skip
    print(f"ok: NAVSIM v1 main's CSV read as PDMS {result.score:.4f} (mean of the valid scenes' score)")


def v2_row(token: str, frame_type: int, start_s: float, states: np.ndarray, rng: np.random.Generator) -> Any:
    """One scene's row as v2's ``run_pdm_score`` returns it (pdm_score's columns, then the fields it adds)."""
    import pandas as pd
    from navsim.common.dataclasses import PDMResults

    metrics = rng.choice([0.5, 1.0], 4, p=[0.2, 0.8]).tolist() + rng.uniform(0.5, 1, 4).tolist()
    weighted = np.array([metrics[4], metrics[5], metrics[6], metrics[7], 1.0])
    row = pd.DataFrame([PDMResults(*metrics, float(np.prod(metrics[:4])), weighted, np.array([5.0, 5.0, 2.0, 2.0, 2.0]),
                                   np.nan)])  # fmt: skip
    row["valid"], row["log_name"], row["frame_type"], row["start_time"] = True, "log", frame_type, start_s
    row["endpoint_x"], row["endpoint_y"] = states[-1, 0], states[-1, 1]
    row["start_point_x"], row["start_point_y"] = states[0, 0], states[0, 1]
    row["ego_simulated_states"] = [states]
    row["token"] = token
    return row


def check_v2_csv(out: Path, planned: Any, rng: np.random.Generator) -> None:
    """0a380a9: one two-stage group (now/previous frame, one synthetic pair), simulated from the zoo's plan."""
    import pandas as pd

    from domains.driving.navsim_scores import read_navsim_scores

    module = importlib.import_module("navsim.planning.script.run_pdm_score")
    frames = {"now": (0, 0.5), "prev": (0, 0.0), "syn_now": (1, 4.5), "syn_prev": (1, 4.0)}
    rows = [v2_row(token, kind, start, simulate(planned, start), rng) for token, (kind, start) in frames.items()]
    written = run_navsim_main(module, rows, list(frames), out, [["now", "prev", [["syn_now", "syn_prev"]]]])
    result = read_navsim_scores(written)
    summary = pd.read_csv(written).set_index("token").loc["extended_pdm_score_combined"]
    assert summary["valid"], "NAVSIM's pseudo-closed-loop aggregation failed (its traceback is above)"
    assert (result.metric, result.navsim_version, len(result.scenes)) == ("epdms", "v2", 4)
    assert result.score == summary["score"], (result.score, summary["score"])
    assert "two_frame_extended_comfort_stage_one" in result.sub_metrics, sorted(result.sub_metrics)
    print(f"ok: NAVSIM v2 main's CSV read as EPDMS {result.score:.4f} (the extended_pdm_score_combined row it logs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--navsim", type=Path, required=True, help="NAVSIM's repository root (holds navsim/)")
    parser.add_argument("--nuplan", type=Path, required=True, help="nuplan-devkit's repository root (holds nuplan/)")
    parser.add_argument("--model", default="driving-vla-tiny", help="the zoo driving model the agent loads")
    args = parser.parse_args()
    sys.path[:0] = [str(args.navsim.resolve()), str(args.nuplan.resolve()), str(Path(__file__).resolve().parents[1])]
    try:
        importlib.import_module("navsim.agents.abstract_agent")
        importlib.import_module("navsim.planning.script.run_pdm_score")
    except ImportError as err:
        print(f"skipped: NAVSIM or nuplan-devkit does not import from {args.navsim} / {args.nuplan} ({err})")
        return
    version = navsim_version()
    print(f"NAVSIM {version} at {args.navsim} {commit_of(args.navsim)}; nuplan-devkit at {args.nuplan} "
          f"{commit_of(args.nuplan)}; numpy {np.__version__}")  # fmt: skip
    agent = build_agent(args.model)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        observed = agent_input(agent, Path(tmp) / "blobs", [1, 0, 0, 0], (3.0, 4.0))
        planned = check_trajectories(agent, observed)
        simulated = simulate(planned)
        print(f"ok: pdm_score's transform_trajectory + get_trajectory_as_array + PDMSimulator -> {simulated.shape}")
        out = Path(tmp) / "out"
        out.mkdir()
        if version == "v1":
            check_v1_csv(out, rng)
        else:
            check_v2_csv(out, planned, rng)


if __name__ == "__main__":
    main()
