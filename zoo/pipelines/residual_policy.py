"""A frozen base policy plus a per-step residual, as one zoo policy directory.

``policy_config.json`` says ``"architecture": "residual-mlp"`` and carries, besides the sizes of
the base (``hidden``, ``action_chunk``), the residual's ``residual_hidden``, ``combine``,
``residual_scale``, ``obs_clamp``, ``residual_layer_norm`` (a LayerNorm after each hidden Linear, as ResFiT's actor;
absent in directories written before it existed, which are plain MLPs) and, for ``combine: resfit``, the action range
scaled to [-1, 1] (``action_low``/``action_high``: ResFiT's widened demonstration range, or the environment's box). One
``model.safetensors`` holds ``base.*`` and ``residual.*``;
``normalization.json`` is the base's. The two combinations (research notes §4.4):

* ``resip``: in the base's normalised action space, ``a_n = base_n + scale * residual(x)`` (no clip);
* ``resfit``: in the action box scaled to [-1, 1], ``u = clamp(base_u + scale * tanh(residual(x)), -1, 1)``;

with ``x = [clamp(normalised obs, ±obs_clamp), base action in that frame]``.

:meth:`ResidualPolicyPipeline.act` is the policy as trained: the base's chunk is served one action
per step from its queue and the residual corrects every step. The batched ``pipe(obs)`` has no
queue, so it re-plans the base every call (the first action of a fresh chunk, corrected).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch
from torch import nn

from zoo.pipelines.policy import PolicyConfig, PolicyPipeline, feedforward, mlp


class ResidualPolicy(nn.Module):
    """``base`` (chunked MLP) and ``residual`` (MLP on observation + base action); see the module doc."""

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__()
        extra = config.extra
        missing = [k for k in ("residual_hidden", "combine", "residual_scale") if k not in extra]
        if missing:
            raise ValueError(f"a residual-mlp policy config needs {', '.join(missing)}")
        if extra["combine"] not in ("resip", "resfit"):
            raise ValueError(f"combine={extra['combine']!r}: expected 'resip' or 'resfit'")
        if extra["combine"] == "resfit" and not ("action_low" in extra and "action_high" in extra):
            raise ValueError("a resfit residual needs action_low and action_high (the action range scaled to [-1, 1])")
        self.combine, self.scale = str(extra["combine"]), float(extra["residual_scale"])
        self.obs_clamp = float(extra.get("obs_clamp", 3.0))
        self.base = mlp(config)
        sizes = [config.observation_dim + config.action_dim, *(int(h) for h in extra["residual_hidden"]),
                 config.action_dim]  # fmt: skip
        self.residual = feedforward(sizes, layer_norm=bool(extra.get("residual_layer_norm", False)))
        self.register_buffer("low", torch.as_tensor(extra.get("action_low", [-1.0] * config.action_dim)))
        self.register_buffer("high", torch.as_tensor(extra.get("action_high", [1.0] * config.action_dim)))
        # the base's action statistics (normalization.json, not the weights file): set by the pipeline
        self.register_buffer("action_mean", torch.zeros(config.action_dim), persistent=False)
        self.register_buffer("action_std", torch.ones(config.action_dim), persistent=False)
        self.chunk, self.action_dim = config.action_chunk, config.action_dim

    def plan(self, obs_n: torch.Tensor) -> torch.Tensor:
        """``(B, chunk, A)`` normalised base actions."""
        return self.base(obs_n).reshape(len(obs_n), self.chunk, self.action_dim)

    def correct(self, obs_n: torch.Tensor, base_n: torch.Tensor) -> torch.Tensor:
        """The corrected normalised action for normalised observations and base actions ``(B, A)``."""
        features = obs_n.clamp(-self.obs_clamp, self.obs_clamp)
        if self.combine == "resip":
            return base_n + self.scale * self.residual(torch.cat([features, base_n], dim=1))
        low, high, action_mean, action_std = self.low, self.high, self.action_mean, self.action_std
        base_u = (2 * (base_n * action_std + action_mean - low) / (high - low) - 1).clamp(-1, 1)
        unit = (base_u + self.scale * torch.tanh(self.residual(torch.cat([features, base_u], dim=1)))).clamp(-1, 1)
        return (low + (unit + 1) * (high - low) / 2 - action_mean) / action_std

    def forward(self, obs_n: torch.Tensor) -> torch.Tensor:
        """Re-planned base (first action of a fresh chunk) plus the residual: ``(B, A)``."""
        return self.correct(obs_n, self.plan(obs_n)[:, 0])


class ResidualPolicyPipeline(PolicyPipeline):
    """:class:`~zoo.pipelines.policy.PolicyPipeline` for ``residual-mlp``: batched re-planning call, queued ``act``."""

    def __init__(self, model: ResidualPolicy, *args: Any, **kwargs: Any) -> None:
        super().__init__(model, *args, **kwargs)
        for name in ("action_mean", "action_std"):
            buffer = getattr(model, name)
            buffer.copy_(torch.as_tensor(getattr(self.normalization, name), dtype=buffer.dtype))
        self.config = PolicyConfig(self.config.observation_dim, self.config.action_dim, self.config.architecture,
                                   1, self.config.hidden, self.config.extra)  # fmt: skip
        self._base_queue: deque[torch.Tensor] = deque()

    def _obs_n(self, observation: Any) -> torch.Tensor:
        obs = np.asarray(observation, dtype=np.float64).reshape(-1, self.config.observation_dim)
        if not np.isfinite(obs).all():
            raise ValueError("observation contains NaN or inf")
        return torch.as_tensor((obs - self.normalization.obs_mean) / self.normalization.obs_std, dtype=torch.float32)

    @torch.inference_mode()
    def act(self, observation: Any) -> np.ndarray:
        """The next action for one observation: the base's queued chunk action, corrected by the residual."""
        obs_n = self._obs_n(observation)
        if len(obs_n) != 1:
            raise ValueError(f"act() takes one observation of length {self.config.observation_dim}")
        if not self._base_queue:
            self._base_queue.extend(self.model.plan(obs_n.to(self.model.low))[0])
        corrected = self.model.correct(obs_n.to(self.model.low), self._base_queue.popleft()[None])
        action_n = corrected[0].float().cpu().numpy()
        return action_n * self.normalization.action_std + self.normalization.action_mean

    def reset(self) -> None:
        super().reset()
        self._base_queue.clear()

