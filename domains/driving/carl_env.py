"""highway-env as a CPU stand-in for CaRL's simulators: a route on a multi-lane highway, measured for CaRL's reward.

CaRL trains in CARLA and nuPlan, neither of which runs on a CPU box offline (MetaDrive needs an
asset download at first use). highway-env (``pip install highway-env``) does: a straight
multi-lane road with IDM/MOBIL traffic. :class:`HighwayRoute` turns it into a routed task:

* **Route**: the ``route_length`` metres ahead of the ego's start along the road, on the lanes
  ``route_lanes`` (default: all). Route completion (RC) is the share driven, in percent; reaching
  100 % ends the episode as a truncation with ``info["is_success"] = True``.
* **Action** (CaRL's nuPlan order): ``[acceleration, steering]`` in [-1, 1], mapped to
  ``±max_acceleration`` m/s² and ``±max_steering`` rad of a kinematic bicycle model; no reverse
  driving (speed kept in [0, 40] m/s, as CaRL's nuPlan action builder forbids reversing).
* **Observation**: the kinematics of the ego and of the 4 nearest vehicles, as highway-env's
  ``Kinematics`` observation lays them out (rows of presence, x, y, vx, vy, cos h, sin h; the
  others relative to the ego; scaled to about [-1, 1]), flattened to 35 values. Computed here in
  numpy: highway-env's own pandas version took three quarters of each step.
* **Measurements** for :class:`~domains.driving.carl_reward.CarlReward` in ``info["driving"]``.

What highway-env lacks, and so is never reported: **traffic lights and stop signs** (no red-light
or stop-sign infractions exist here), junctions, and pedestrians. Off-road is the nuPlan test (any
corner of the ego outside the drivable area, here the union of the lanes); "blocked" is standing
still for ``blocked_seconds`` (zoo choice: CARLA's leaderboard waits 180 s on far longer routes).

For ``--resume`` the route saves its episode under way (:meth:`HighwayRoute.get_state`): every
vehicle's attributes as tensors and plain values, rebuilt on the environment's own road, so the
resumed run continues bit for bit without unpickling anything.

``driver="idm"`` puts highway-env's own driver in the ego's seat (an ``IDMVehicle``: IDM speed
control and MOBIL lane changes, aiming at the lane's speed limit); actions are then ignored. It is
the reference that the benchmark compares learned policies against.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch

from domains.driving.carl_reward import CarlReward, CarlRewardConfig, DrivingMeasurement

try:
    import gymnasium as gym
    import highway_env  # noqa: F401  (registers highway-v0 with gymnasium)
except ImportError as err:  # the driving RL parts need the `driving` extra
    raise ImportError("the highway-env stand-in needs gymnasium and highway-env: pip install -e '.[driving]'") from err

FEATURES = ("presence", "x", "y", "vx", "vy", "cos_h", "sin_h")
OBSERVED_VEHICLES = 5
OBS_DIM = OBSERVED_VEHICLES * len(FEATURES)
OBS_SCALE = np.array([1.0, 100.0, 12.0, 40.0, 40.0, 1.0, 1.0])
"""Divisors of the features (x within 100 m, y across a 3-lane road, speeds up to 40 m/s)."""
ACTION_DIM = 2
TTC_TIMES = (0.1, 0.3, 0.5, 0.7, 0.9)
"""Forecast times (s) of the TTC test: CaRL's nuPlan TTC checks 0.1 s to 1 s in 0.2 s steps."""
DRIVERS = ("policy", "idm")
_NUMPY_SCALAR, _DEQUE = "__numpy_scalar__", "__deque__"
"""Tags of the values :func:`_encode` stores as dicts (NumPy scalars keep their type, deques their length)."""
_LINKED = ("road", "lane")
"""Vehicle attributes that point into the road: relinked on restore (the lane follows from ``lane_index``)."""


def _highway_config(lanes: int, vehicles: int, density: float, duration: float, policy_frequency: int,
                    simulation_frequency: int, max_acceleration: float, max_steering: float) -> dict[str, Any]:  # fmt: skip
    return {
        "observation": {"type": "AttributesObservation", "attributes": []},  # see observe(): same layout, numpy
        "action": {
            "type": "ContinuousAction",
            "acceleration_range": (-max_acceleration, max_acceleration),
            "steering_range": (-max_steering, max_steering),
            "speed_range": (0.0, 40.0),
        },
        "lanes_count": lanes,
        "vehicles_count": vehicles,
        "vehicles_density": density,
        "duration": duration,
        "policy_frequency": policy_frequency,
        "simulation_frequency": simulation_frequency,
        "offroad_terminal": False,  # CaRL's off-road test (corners) ends the episode instead
    }


class HighwayRoute(gym.Wrapper):
    """A route on highway-env with CaRL's measurements in ``info["driving"]`` (see the module docstring)."""

    def __init__(self, env: gym.Env, route_length: float, route_lanes: tuple[int, ...] | None = None,
                 driver: str = "policy", blocked_seconds: float = 10.0) -> None:  # fmt: skip
        super().__init__(env)
        if route_length <= 0:
            raise ValueError(f"route_length={route_length} must be > 0 (metres)")
        if driver not in DRIVERS:
            raise ValueError(f"driver={driver!r}: expected one of {DRIVERS}")
        self.route_length, self.driver, self.blocked_seconds = float(route_length), driver, float(blocked_seconds)
        self.route_lanes = route_lanes
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
        self.dt = 1.0 / env.unwrapped.config["policy_frequency"]
        self._start_x, self._still_for = 0.0, 0.0
        self._history: deque[tuple[float, float]] = deque(maxlen=4)  # (speed, heading) at policy steps

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        _, info = self.env.reset(**kwargs)
        base = self.env.unwrapped
        lanes = base.config["lanes_count"]
        if self.route_lanes is not None and not set(self.route_lanes) <= set(range(lanes)):
            raise ValueError(f"route_lanes={self.route_lanes} must be lane ids in 0..{lanes - 1}")
        if self.driver == "idm":
            _seat_builtin_driver(base)
        ego = base.vehicle
        self._start_x, self._still_for = float(ego.position[0]), 0.0
        self._history.clear()
        self._history.append((float(ego.speed), float(ego.heading)))
        return observe(ego, base.road.vehicles), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        _, reward, terminated, truncated, info = self.env.step(np.asarray(action, dtype=np.float32))
        ego = self.env.unwrapped.vehicle
        self._history.append((float(ego.speed), float(ego.heading)))
        self._still_for = self._still_for + self.dt if abs(ego.speed) < 0.1 else 0.0
        measurement = self.measure()
        info["driving"] = measurement
        info["route_completion"] = measurement.route_completion
        info["collision"], info["off_road"] = measurement.collision, measurement.off_road
        done = measurement.route_completion >= 100.0
        info["is_success"] = done and not (terminated or measurement.collision or measurement.off_road)
        obs = observe(ego, self.env.unwrapped.road.vehicles)
        return obs, float(reward), terminated, truncated or done, info

    def get_state(self) -> dict[str, Any]:
        """The episode under way (:class:`~zoo.engines.policy.state.RestorableEnv`): route progress, the scene."""
        return {"start_x": self._start_x, "still_for": self._still_for, "history": list(self._history),
                "highway": highway_state(self.env.unwrapped)}  # fmt: skip

    def set_state(self, state: dict[str, Any]) -> None:
        self._start_x, self._still_for = state["start_x"], state["still_for"]
        self._history = deque(state["history"], maxlen=self._history.maxlen)
        set_highway_state(self.env.unwrapped, state["highway"])

    def measure(self) -> DrivingMeasurement:
        """The ego's state as CaRL's reward reads it."""
        base = self.env.unwrapped
        ego, lanes = base.vehicle, base.config["lanes_count"]
        lane = ego.lane
        longitudinal, lateral = lane.local_coordinates(ego.position)
        width = lane.width_at(longitudinal)
        lane_id = ego.lane_index[2]
        route = range(lanes) if self.route_lanes is None else self.route_lanes
        return DrivingMeasurement(
            route_completion=float(np.clip(100.0 * (ego.position[0] - self._start_x) / self.route_length, 0.0, 100.0)),
            speed=float(ego.speed),
            speed_limit=getattr(lane, "speed_limit", None),
            center_distance=float(abs(lateral)),
            border_distance=float(max(width / 2 - abs(lateral), 0.0)),
            on_route=bool(lane_id in route and abs(lateral) <= width / 2),
            ttc_violation=ttc_violation(ego, base.road.vehicles),
            kinematics=kinematics(self._history, self.dt),
            collision=bool(ego.crashed),
            off_road=_off_road(ego, lanes, width),
            blocked=self._still_for >= self.blocked_seconds,
        )


def observe(ego: Any, vehicles: list[Any], perception: float = 100.0) -> np.ndarray:
    """The ego's row (absolute y, velocity, heading) and the nearest others' rows (relative to the ego)."""
    others = [v for v in vehicles if v is not ego and abs(v.position[0] - ego.position[0]) < perception]
    others.sort(key=lambda v: abs(v.position[0] - ego.position[0]))
    rows = np.zeros((OBSERVED_VEHICLES, len(FEATURES)))
    origin = np.array([ego.position[0], 0.0])
    for row, (v, reference) in enumerate(zip([ego, *others], [origin] + [ego.position] * len(others))):
        if row == OBSERVED_VEHICLES:
            break
        velocity = v.velocity - (ego.velocity if row else 0.0)
        rows[row] = (1.0, *(v.position - reference), *velocity, np.cos(v.heading), np.sin(v.heading))
    return np.clip(rows / OBS_SCALE, -1.0, 1.0).reshape(-1).astype(np.float32)


def highway_state(env: Any) -> dict[str, Any]:
    """A highway-env scene as tensors and plain values: clock, generator, last action, every vehicle.

    A vehicle is its class name and its attributes (:func:`_encode`); the road network is the
    environment's own (built from its config), so only the vehicles' links into it are dropped.
    """
    road = env.road
    if road.objects:
        raise TypeError(f"cannot save a highway-env scene with static road objects ({len(road.objects)})")
    return {"time": env.time, "steps": env.steps, "done": env.done, "np_random": env.np_random.bit_generator.state,
            "last_action": _encode(env.action_type.last_action),
            "vehicles": [{"class": _class_name(type(v)), "fields": {k: _encode(x) for k, x in vars(v).items()
                                                                    if k not in _LINKED}} for v in road.vehicles],
            "controlled": [next(i for i, v in enumerate(road.vehicles) if v is ego) for ego in env.controlled_vehicles]}  # fmt: skip


def set_highway_state(env: Any, state: dict[str, Any]) -> None:
    """Put the scene :func:`highway_state` reported on ``env``'s road (``env`` has been reset once).

    The road's generator is the environment's, so restoring the one restores the other.
    """
    classes = _vehicle_classes()
    road, vehicles = env.road, []
    for saved in state["vehicles"]:
        if saved["class"] not in classes:
            raise ValueError(f"the checkpoint names {saved['class']!r}, not a highway-env vehicle class")
        cls = classes[saved["class"]]
        vehicle = cls.__new__(cls)  # every attribute comes from the checkpoint, none from a constructor
        vars(vehicle).update({k: _decode(x) for k, x in saved["fields"].items()})
        vehicle.road, vehicle.lane = road, road.network.get_lane(vehicle.lane_index)
        vehicles.append(vehicle)
    road.vehicles = vehicles
    env.controlled_vehicles = [vehicles[i] for i in state["controlled"]]
    env.time, env.steps, env.done = state["time"], state["steps"], state["done"]
    env.action_type.last_action = _decode(state["last_action"])
    env.np_random.bit_generator.state = state["np_random"]


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _vehicle_classes() -> dict[str, type]:
    """highway-env's vehicle classes by name: a checkpoint names one of these, never a class to import."""
    from highway_env.vehicle.kinematics import Vehicle

    found, todo = {}, [Vehicle]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("highway_env."):
            found[_class_name(cls)] = cls
        todo.extend(cls.__subclasses__())
    return found


def _encode(value: Any) -> Any:
    """A vehicle attribute as tensors and plain values; anything else is a ``TypeError`` naming its type."""
    if isinstance(value, np.generic):  # first: np.float64 is also a float, and its type is kept
        return {_NUMPY_SCALAR: value.dtype.str, "value": value.item()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, deque):
        return {_DEQUE: [_encode(v) for v in value], "maxlen": value.maxlen}
    if isinstance(value, tuple):
        return tuple(_encode(v) for v in value)
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _encode(v) for k, v in value.items()}
    raise TypeError(f"cannot save a highway-env vehicle attribute of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    """The inverse of :func:`_encode`."""
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, tuple):
        return tuple(_decode(v) for v in value)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if _NUMPY_SCALAR in value:
            return np.dtype(value[_NUMPY_SCALAR]).type(value["value"])
        if _DEQUE in value:
            return deque((_decode(v) for v in value[_DEQUE]), maxlen=value["maxlen"])
        return {k: _decode(v) for k, v in value.items()}
    return value


def _seat_builtin_driver(base: Any) -> None:
    """Replace the ego by highway-env's IDM/MOBIL vehicle at the same state, aiming at the speed limit."""
    from highway_env.vehicle.behavior import IDMVehicle

    ego = base.vehicle
    driver = IDMVehicle(base.road, ego.position, heading=ego.heading, speed=ego.speed,
                        target_speed=ego.lane.speed_limit)  # fmt: skip
    base.road.vehicles[base.road.vehicles.index(ego)] = driver
    base.vehicle = driver


def _off_road(ego: Any, lanes: int, width: float) -> bool:
    """nuPlan's test: a corner of the ego outside the drivable area (the straight lanes, y in [-w/2, (n - 1/2) w])."""
    y = ego.polygon()[:4, 1]
    return bool((y < -width / 2).any() or (y > (lanes - 0.5) * width).any())


def ttc_violation(ego: Any, vehicles: list[Any], times: tuple[float, ...] = TTC_TIMES) -> bool:
    """Whether the ego and a vehicle ahead, both moved at constant velocity, overlap at one of ``times``."""
    from highway_env.utils import are_polygons_intersecting

    if ego.speed <= 5e-3:
        return False
    ahead = [v for v in vehicles if v is not ego and ego.front_distance_to(v) > 0
             and np.linalg.norm(v.position - ego.position) < 2 * ego.speed + 20]  # fmt: skip
    mine = ego.polygon()
    for v in ahead:
        theirs = v.polygon()
        for t in times:
            if are_polygons_intersecting(mine + ego.velocity * t, theirs + v.velocity * t, np.zeros(2), np.zeros(2))[0]:
                return True
    return False


def kinematics(history: deque[tuple[float, float]] | list[tuple[float, float]], dt: float) -> dict[str, float]:
    """nuPlan's six comfort quantities by finite differences over the last (speed, heading) samples.

    Zoo choice: plain differences at the policy rate (nuPlan smooths with a Savitzky-Golay filter
    over longer histories). Quantities that need more samples than there are stay absent.
    """
    if len(history) < 2:
        return {}
    speed = np.array([s for s, _ in history])
    heading = np.unwrap(np.array([h for _, h in history]))
    lon = np.diff(speed) / dt
    yaw_rate = np.diff(heading) / dt
    lat = speed[1:] * yaw_rate
    out = {"lon_acceleration": float(lon[-1]), "lat_acceleration": float(lat[-1]), "yaw_rate": float(yaw_rate[-1])}
    if len(history) >= 3:
        out["lon_jerk"] = float((lon[-1] - lon[-2]) / dt)
        out["jerk"] = float((np.hypot(lon[-1], lat[-1]) - np.hypot(lon[-2], lat[-2])) / dt)
        out["yaw_acceleration"] = float((yaw_rate[-1] - yaw_rate[-2]) / dt)
    return out


def make_highway_route(*, lanes: int = 3, vehicles: int = 10, density: float = 1.0, route_length: float = 600.0,
                       duration: float = 30.0, policy_frequency: int = 5, simulation_frequency: int = 5,
                       max_acceleration: float = 4.0, max_steering: float = 0.2,
                       route_lanes: tuple[int, ...] | None = None, driver: str = "policy",
                       blocked_seconds: float = 10.0) -> HighwayRoute:  # fmt: skip
    """highway-env's ``highway-fast-v0`` as a route (its own reward is left in place; see :func:`make_highway_carl`).

    Defaults (zoo choice, sized for CPU): 3 lanes, 10 other vehicles, a 600 m route in 30 s (the
    speed limit is 30 m/s, traffic drives 20-25 m/s), 5 Hz control, ±4 m/s², ±0.2 rad steering.
    """
    if simulation_frequency % policy_frequency:
        raise ValueError(f"simulation_frequency={simulation_frequency} must be a multiple of "
                         f"policy_frequency={policy_frequency}")  # fmt: skip
    config = _highway_config(lanes, vehicles, density, duration, policy_frequency, simulation_frequency,
                             max_acceleration, max_steering)  # fmt: skip
    env = gym.make("highway-fast-v0", config=config, disable_env_checker=True)  # its observation is replaced
    return HighwayRoute(env, route_length, tuple(route_lanes) if route_lanes is not None else None, driver,
                        blocked_seconds)  # fmt: skip


def make_highway_carl(*, reward: dict[str, Any] | None = None, **kwargs: Any) -> CarlReward:
    """The highway route with CaRL's reward and terminations (``reward``: :class:`CarlRewardConfig` fields)."""
    try:
        config = CarlRewardConfig(**(reward or {}))
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"env.kwargs.reward: {err}; fields: {', '.join(CarlRewardConfig.__dataclass_fields__)}"
        ) from err
    return CarlReward(make_highway_route(**kwargs), config)
