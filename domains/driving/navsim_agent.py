"""A zoo driving VLA as a NAVSIM agent, so that NAVSIM's own ``run_pdm_score`` scores it on navtest.

NAVSIM (``autonomousvision/navsim``, read at 0a380a9) builds the agent from its Hydra config
(``_target_``), calls ``initialize()``, loads the sensors ``get_sensor_config()`` asks for, then calls
``compute_trajectory(agent_input)`` per scene (``navsim/planning/script/run_pdm_score.py:57-95``) and
scores the returned ``Trajectory``: poses ``(x, y, heading)`` in the ego frame at the agent's
``TrajectorySampling`` (default 4 s at 0.5 s, 8 poses; ``navsim/common/dataclasses.py:279-291``). A zoo
driving VLA writes exactly that (:mod:`domains.driving.prompts`), from one camera image and the
instruction the zoo trained it on: ego speed and the driving command.

:class:`ZooAgent` reads the current frame of ``agent_input`` (the last of ``ego_statuses`` and
``cameras``): the speed is the norm of ``ego_velocity``; ``driving_command`` is NAVSIM's one-hot over
left, straight, right and unknown (``docs/agents.md:79``, in that order), read as the zoo's commands
``turn left``, ``go straight``, ``turn right`` (unknown: ``go straight``). An answer that does not
parse becomes NAVSIM's own constant-velocity plan (``navsim/agents/constant_velocity_agent.py:34-46``;
zoo choice: NAVSIM needs a trajectory for every scene) and is counted in :attr:`ZooAgent.parse_failures`.

Running it (NAVSIM installed from its repository with nuplan-devkit, the zoo importable)::

    python $NAVSIM_DEVKIT_ROOT/navsim/planning/script/run_pdm_score.py train_test_split=navtest \\
        agent._target_=domains.driving.navsim_agent.ZooAgent +agent.model=driving-vla-tiny \\
        experiment_name=zoo_driving_vla_tiny metric_cache_path=$NAVSIM_EXP_ROOT/metric_cache

``agent=constant_velocity_agent`` (the default) supplies ``trajectory_sampling`` at 0a380a9; at v1.1 its
config names the class only, and the agent's own default (4 s at 0.5 s) applies. The overrides swap the class
and add the model. The agent fits both interfaces: v2's ``AbstractAgent(trajectory_sampling, requires_scene)``
and v1.1's ``AbstractAgent(requires_scene)`` (tag v1.1, 0811876c), where passing the sampling positionally
would land in ``requires_scene`` and make NAVSIM ask for ``compute_trajectory(agent_input, scene)``.
``bench/navsim_interface.py`` runs the agent against NAVSIM's own code at either commit. PyPI's ``navsim``
is another project (a Unity navigation simulator, 2.10.x): install NAVSIM from
``github.com/autonomousvision/navsim``. The driving-vla-tiny checkpoint only knows
the zoo's synthetic bird's-eye scenes, so on NAVSIM's camera images it shows the interface, not a planner.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

try:
    from navsim.agents.abstract_agent import AbstractAgent
    from navsim.common.dataclasses import AgentInput, SensorConfig, Trajectory
    from nuplan.planning.simulation.trajectory.trajectory_sampling import TrajectorySampling
except ImportError as err:  # NAVSIM pins torch 2.0 and nuplan-devkit, so it is not a dependency of the zoo
    raise ImportError(
        "the NAVSIM agent needs NAVSIM and nuplan-devkit: install github.com/autonomousvision/navsim "
        "(PyPI's `navsim` is an unrelated project)"
    ) from err

from domains.driving.prompts import NUM_WAYPOINTS, question

COMMANDS = ("turn left", "go straight", "turn right")
"""The zoo's commands for NAVSIM's one-hot ``driving_command`` (left, straight, right; a fourth is unknown)."""
CAMERAS = ("cam_f0", "cam_l0", "cam_l1", "cam_l2", "cam_r0", "cam_r1", "cam_r2", "cam_b0")
WAYPOINT_INTERVAL = 0.5
"""Seconds between the zoo's waypoints (:mod:`domains.driving.prompts`)."""


def command(driving_command: Any) -> str:
    """The zoo's command for NAVSIM's one-hot ``driving_command`` (unknown or empty: ``go straight``)."""
    one_hot = np.asarray(driving_command, dtype=float).reshape(-1)
    index = int(np.argmax(one_hot)) if one_hot.size and one_hot.max() > 0 else 1
    return COMMANDS[index] if index < len(COMMANDS) else COMMANDS[1]


def constant_velocity(speed: float, sampling: TrajectorySampling) -> np.ndarray:
    """NAVSIM's ``ConstantVelocityAgent`` plan: straight ahead at ``speed`` (constant_velocity_agent.py:34-44)."""
    return np.array([[(i + 1) * sampling.interval_length * speed, 0.0, 0.0] for i in range(sampling.num_poses)],
                    dtype=np.float32)  # fmt: skip


class ZooAgent(AbstractAgent):
    """A zoo driving pipeline (``zoo.load(model)``) answering NAVSIM's ``compute_trajectory`` (module docstring)."""

    def __init__(self, model: str, trajectory_sampling: TrajectorySampling | None = None, camera: str = "cam_f0",
                 device: str = "cpu") -> None:  # fmt: skip
        sampling = trajectory_sampling or TrajectorySampling(time_horizon=4, interval_length=0.5)
        if sampling.num_poses != NUM_WAYPOINTS or not np.isclose(sampling.interval_length, WAYPOINT_INTERVAL):
            raise ValueError(f"a zoo driving VLA plans {NUM_WAYPOINTS} poses at {WAYPOINT_INTERVAL} s; NAVSIM asks "
                             f"for {sampling.num_poses} at {sampling.interval_length} s")  # fmt: skip
        if camera not in CAMERAS:
            raise ValueError(f"camera={camera!r}: NAVSIM's cameras are {', '.join(CAMERAS)}")
        if "trajectory_sampling" in inspect.signature(AbstractAgent.__init__).parameters:  # NAVSIM v2 (0a380a9)
            super().__init__(trajectory_sampling=sampling, requires_scene=False)
        else:  # v1.1 takes requires_scene only and stores no sampling (0811876c:navsim/agents/abstract_agent.py:13-18)
            super().__init__(requires_scene=False)
            self._trajectory_sampling = sampling
        self.model, self.camera, self.device = model, camera, device
        self.pipeline: Any = None
        self.parse_failures = 0

    def name(self) -> str:
        return f"zoo-{self.model}"

    def initialize(self) -> None:
        """Load the zoo pipeline (NAVSIM calls this once per worker, after building the agent)."""
        import zoo

        self.pipeline = zoo.load(self.model, device=self.device)

    def get_sensor_config(self) -> SensorConfig:
        """The one camera the VLA reads, at every history frame NAVSIM loads (the current one is the last)."""
        return SensorConfig(**{name: name == self.camera for name in (*CAMERAS, "lidar_pc")})

    def compute_trajectory(self, agent_input: AgentInput) -> Trajectory:
        """The VLA's plan for the current frame (constant velocity where its answer does not parse)."""
        from PIL import Image

        if self.pipeline is None:
            raise RuntimeError("ZooAgent.compute_trajectory before initialize(): NAVSIM calls initialize() first")
        status = agent_input.ego_statuses[-1]
        speed = float(np.linalg.norm(np.asarray(status.ego_velocity, dtype=float)[:2]))
        image = getattr(agent_input.cameras[-1], self.camera).image
        if image is None:
            raise ValueError(f"agent_input has no {self.camera} image: the scene loader must use get_sensor_config()")
        prediction = self.pipeline(Image.fromarray(np.asarray(image, dtype=np.uint8)), question(speed, command(
            status.driving_command)))  # fmt: skip
        if prediction.trajectory is None:
            self.parse_failures += 1
            poses = constant_velocity(speed, self._trajectory_sampling)
        else:
            poses = np.asarray(prediction.trajectory, dtype=np.float32)
        return Trajectory(poses, self._trajectory_sampling)
