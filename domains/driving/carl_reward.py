"""CaRL's reward (Jaeger et al., arXiv 2504.17838) as a simulator-agnostic gymnasium wrapper.

The reward is *route completion*, scaled down multiplicatively by soft penalties; hard
infractions end the episode. This is the reward of CaRL's **nuPlan** builder, terminal handling
included (``default_reward_builder.py`` ``_regular_accumulate``, lines 217-241 at the commit below):

    r_t = ΔRC_t · Π_k p_k          (0 on the step a hard constraint ends the episode)

* ``ΔRC_t``: increase of route completion, in percent of the route (the best-so-far completion,
  so driving back and forth earns nothing twice). nuPlan's builder multiplies a completion
  fraction by ``reward_factor`` 100 (line 132), which is the same percent.
* Soft penalties ``p_k`` in [0, 1]:
  - speeding: ``max(0, 1 - (v - v_limit) / 2.23 m/s)`` once ``v > v_limit``;
  - time to collision: 0.5 once a constant-velocity forecast (1 s) hits a vehicle ahead, then held
    for ``ttc_hold_steps`` steps (``None``: the rest of the episode, as CaRL's nuPlan builder);
  - comfort: the share of nuPlan's six kinematic comfort limits that the current kinematics keep
    (zoo choice on the window: CaRL's nuPlan builder checks the whole history so far, so one
    violation lasts; with the simulators' coarse finite differences a single lane change would then
    zero every later reward, so the simulator reports the kinematics of its last few steps);
  - lane distance: ``1 - 0.5 clip((d_c - t) / (d_c + min(d_l, d_r) - t + 1e-6), 0, 1)`` with
    ``d_c`` the distance to the lane centre, ``d_l``/``d_r`` to the lane's borders, ``t`` = 0.5 m;
  - off route (centre outside the route's lanes): 0, i.e. no progress counts there.
* Hard constraints end the episode (``terminated``): collision, off-road, red light, blocked.
  The terminating step earns nothing: nuPlan's ``terminate_factor`` is 0 there and its terminal
  penalties (``terminal_penalty``, ``collision_terminal_penalty``) are 0.0 (lines 126-127, 236-240).
  CaRL's CARLA reward differs here (it still pays the step's progress and subtracts a
  ``terminal_hint`` of 1.0); the zoo does not mix the two simulators' terminal handling.
  Reaching the end of the route is a truncation, not a termination; the PPO treats both as the
  end of the episode, as CaRL's does (:mod:`domains.driving.carl_policy`).

CaRL's nuPlan code has two settings of the builder, both available here. Its defaults (and the single-GPU
script) accumulate as above (``reward_accumulation: regular``, "as described in CaRL paper") with
``off_route_type: v1``; its multi-GPU training script sets ``reward_accumulation=nuplan`` (a weighted sum,
:func:`accumulate`) and ``off_route_type v2`` (``jkli-2/CaRL@5ba3dc4:nuPlan/scripts/gym/train_multi_gpu.sh:17,20``).
``accumulation`` picks the first. The off-route test here, the ego's centre on one of the route's lanes, is
``calculate_off_route_v2``'s (the route's lane and lane-connector polygons, ``components/off_route.py``); ``v1``
tests the route's roadblock polygons instead, whose odd shapes at junctions the authors found exploited. On the
stand-in's straight road, without junctions, a roadblock is exactly the union of its lanes, so the two versions
are one test there and no option chooses between them. Both versions forgive leaving the route where the logged
human left it too; the stand-in has no logged driver, and its route covers every lane by default.

Where the formulas come from: CaRL's nuPlan reward builder, read in the fork ``jkli-2/CaRL``
(``nuPlan/carl_nuplan/planning/gym/environment/reward_builder/default_reward_builder.py`` at
d6890e6d: regular accumulation; ``components/time_to_collision.py`` for the 0.5 held TTC;
``components/comfort.py``, ``calculate_kinematics_comfort``, for the comfort share). The code is
this project's own, written from those formulas; CaRL's code is under the Civil-M licence (MIT's
permissions plus a civil clause: no use in weapons, and derivative works must carry the clause;
``jkli-2/CaRL@721743c:LICENSE``). Choices of this project where the paper's setting does not
carry over are marked "zoo choice".

The wrapper reads the simulator's measurements from ``info["driving"]`` (a
:class:`DrivingMeasurement`), so any simulator that fills it gets the same reward;
:mod:`domains.driving.carl_env` does so for highway-env.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

try:
    import gymnasium as gym
except ImportError as err:  # the driving RL parts need the `driving` extra
    raise ImportError("CaRL's reward wrapper needs gymnasium: pip install -e '.[driving]'") from err

#: nuPlan's comfort limits, in the order of :attr:`DrivingMeasurement.kinematics` (CaRL's comfort term).
COMFORT_LIMITS: dict[str, tuple[float, float]] = {
    "lon_acceleration": (-4.05, 2.40),  # m/s²
    "lat_acceleration": (-4.89, 4.89),  # m/s²
    "jerk": (-8.37, 8.37),  # m/s³ (magnitude)
    "lon_jerk": (-4.13, 4.13),  # m/s³
    "yaw_rate": (-0.95, 0.95),  # rad/s
    "yaw_acceleration": (-1.93, 1.93),  # rad/s²
}

#: Hard constraints, in the order they are reported when several happen on one step.
HARD_CONSTRAINTS = ("collision", "red_light", "off_road", "blocked")


@dataclass(frozen=True)
class DrivingMeasurement:
    """What a simulator reports after one step, in SI units.

    ``red_light`` stays ``False`` in simulators without traffic lights (highway-env has none).
    """

    route_completion: float
    """Share of the route driven so far, in percent [0, 100]."""
    speed: float
    """Ego speed, m/s."""
    speed_limit: float | None
    """Speed limit of the ego's lane, m/s (``None``: no limit known)."""
    center_distance: float
    """Distance of the ego's centre to its lane's centre line, m."""
    border_distance: float
    """Distance of the ego's centre to the nearer border of its lane, m."""
    on_route: bool
    """Whether the ego's centre is on one of the route's lanes."""
    ttc_violation: bool
    """Whether a constant-velocity forecast hits a vehicle ahead within the TTC horizon."""
    kinematics: dict[str, float] = field(default_factory=dict)
    """Current values of the :data:`COMFORT_LIMITS` quantities (missing: not yet measurable)."""
    collision: bool = False
    off_road: bool = False
    red_light: bool = False
    blocked: bool = False


@dataclass(frozen=True)
class CarlRewardConfig:
    """Settings of the CaRL reward (defaults: CaRL's published values unless marked zoo choice)."""

    overspeed_tolerance: float = 2.23
    """Overspeed (m/s) at which the speeding factor reaches 0 (CaRL: 2.23 m/s = 5 mph)."""
    ttc_factor: float = 0.5
    """Multiplier while the TTC penalty holds (CaRL: 0.5)."""
    ttc_hold_steps: int | None = None
    """Steps the TTC penalty holds after a violation (None: rest of the episode, CaRL nuPlan;
    CARLA holds 500 ticks at 10 Hz)."""
    lane_distance_threshold: float = 0.5
    """Distance to the lane centre (m) below which there is no lane penalty (CaRL nuPlan: 0.5)."""
    lane_distance_max_penalty: float = 0.5
    """Lane factor at the lane border (CaRL: 1 - 0.5)."""
    use_comfort: bool = True
    """Multiply by the comfort share (CaRL nuPlan: kinematics comfort)."""
    accumulation: Literal["regular", "nuplan"] = "regular"
    """How the components make the reward (:func:`accumulate`): ``regular``, progress times every factor (the
    builder's default, ``default_reward_builder.py:124``, "as described in CaRL paper"); ``nuplan``, the weighted
    sum of nuPlan's score (``reward_accumulation=nuplan`` in ``train_multi_gpu.sh:17``)."""
    episode_steps: int = 150
    """``nuplan`` accumulation: the per-step share of the TTC, speed and comfort terms is ``1 / episode_steps``
    (CaRL: ``NUM_SCENARIO_ITERATIONS`` 150, nuPlan's 15 s at 10 Hz, ``default_reward_builder.py:60``)."""

    def __post_init__(self) -> None:
        if self.accumulation not in ("regular", "nuplan"):
            raise ValueError(f"accumulation={self.accumulation!r}: choose 'regular' or 'nuplan'")
        if self.episode_steps < 1:
            raise ValueError(f"episode_steps={self.episode_steps} must be >= 1")


@dataclass
class PenaltyState:
    """What the reward remembers within an episode (the best completion, held penalties)."""

    best_completion: float = 0.0
    ttc_steps_left: int = 0
    ttc_latched: bool = False


@dataclass(frozen=True)
class RewardStep:
    """One step of the CaRL reward: the reward, whether a hard constraint ended the episode and why."""

    reward: float
    terminated: bool
    reason: str | None
    components: dict[str, float]


def speeding_factor(speed: float, limit: float | None, tolerance: float) -> float:
    """``max(0, 1 - overspeed / tolerance)`` above the limit, else 1 (CaRL's ``too_fast``)."""
    if limit is None or speed <= limit:
        return 1.0
    return max(0.0, 1.0 - (speed - limit) / max(tolerance, 1e-3))


def lane_distance_factor(center: float, border: float, threshold: float, max_penalty: float) -> float:
    """CaRL's lane-distance factor: 1 within ``threshold`` of the centre, ``1 - max_penalty`` at the border."""
    normed = (center - threshold) / (center + border - threshold + 1e-6)
    return 1.0 - max_penalty * float(np.clip(normed, 0.0, 1.0))


def comfort_share(kinematics: dict[str, float]) -> float:
    """Share of the six comfort limits that ``kinematics`` keep (a quantity not measured counts as kept)."""
    broken = sum(not low <= kinematics.get(name, 0.0) <= high for name, (low, high) in COMFORT_LIMITS.items())
    return 1.0 - broken / len(COMFORT_LIMITS)


def carl_step(m: DrivingMeasurement, state: PenaltyState, config: CarlRewardConfig) -> RewardStep:
    """The CaRL reward of one step from its measurement; updates ``state`` (see the module docstring)."""
    progress = max(0.0, m.route_completion - state.best_completion)
    state.best_completion = max(state.best_completion, m.route_completion)
    if m.ttc_violation:
        state.ttc_latched = config.ttc_hold_steps is None
        state.ttc_steps_left = config.ttc_hold_steps or 0
    ttc = config.ttc_factor if (m.ttc_violation or state.ttc_latched or state.ttc_steps_left > 0) else 1.0
    if not m.ttc_violation and state.ttc_steps_left > 0:
        state.ttc_steps_left -= 1
    components = {
        "progress": progress,
        "speeding": speeding_factor(m.speed, m.speed_limit, config.overspeed_tolerance),
        "ttc": ttc,
        "comfort": comfort_share(m.kinematics) if config.use_comfort else 1.0,
        "lane_distance": lane_distance_factor(
            m.center_distance, m.border_distance, config.lane_distance_threshold, config.lane_distance_max_penalty
        ),
        "off_route": 1.0 if m.on_route else 0.0,
    }
    reason = next((name for name in HARD_CONSTRAINTS if getattr(m, name)), None)
    if reason is not None:  # both accumulations: the step that ends the episode earns nothing (see the module doc)
        return RewardStep(0.0, True, reason, components)
    return RewardStep(accumulate(components, config), False, None, components)


def accumulate(components: dict[str, float], config: CarlRewardConfig) -> float:
    """The reward of a step that did not end the episode, from :func:`carl_step`'s components.

    ``regular`` (``_regular_accumulate``, ``default_reward_builder.py:217-241``): ``progress`` times every factor.
    ``nuplan`` (``_nuplan_accumulate``, lines 266-296): ``(5 progress + 5 ttc + 4 speed + 2 comfort) / 16`` times
    the off-route and lane-distance factors, where ``ttc`` and ``comfort`` count 1 only when unpenalised, and
    they and the speeding factor are spread over the episode (divided by ``episode_steps``). CaRL's progress is a
    fraction times ``reward_factor`` 100; here it is already in percent, so the three per-step terms take the 100.
    """
    if config.accumulation == "regular":
        return components["progress"] * float(np.prod([v for k, v in components.items() if k != "progress"]))
    ttc, comfort = float(components["ttc"] == 1.0), float(components["comfort"] == 1.0)
    per_step = 100.0 * (5 * ttc + 4 * components["speeding"] + 2 * comfort) / config.episode_steps
    return (5 * components["progress"] + per_step) / 16 * components["off_route"] * components["lane_distance"]


class CarlReward(gym.Wrapper):
    """Replace the simulator's reward by CaRL's and end episodes on its hard constraints.

    The inner environment must put a :class:`DrivingMeasurement` in ``info["driving"]`` every step.
    ``info["carl"]`` receives the reward's components and, on termination, ``info["termination"]``
    the hard constraint that ended the episode.
    """

    def __init__(self, env: gym.Env, config: CarlRewardConfig | None = None) -> None:
        super().__init__(env)
        self.config = config or CarlRewardConfig()
        self.state = PenaltyState()

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self.state = PenaltyState()
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, _, terminated, truncated, info = self.env.step(action)
        measurement = info.get("driving")
        if not isinstance(measurement, DrivingMeasurement):
            raise TypeError(f"CarlReward needs info['driving'] to be a DrivingMeasurement from the inner environment; "
                            f"got {type(measurement).__name__}")  # fmt: skip
        result = carl_step(measurement, self.state, self.config)
        info["carl"] = result.components
        if result.terminated:
            info["termination"] = result.reason
        return obs, result.reward, terminated or result.terminated, truncated and not result.terminated, info

    def get_state(self) -> dict[str, Any]:
        """The episode under way (:class:`~zoo.engines.policy.state.RestorableEnv`): held penalties, the simulator's."""
        return {"penalties": asdict(self.state), "env": self.env.get_state()}

    def set_state(self, state: dict[str, Any]) -> None:
        self.state = PenaltyState(**state["penalties"])
        self.env.set_state(state["env"])
