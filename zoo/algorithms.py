"""The algorithm tables a recipe names: advantage estimators, policy losses and loss types.

:mod:`zoo.rl` is pure maths (tensors in, tensors out) and names nothing; this module is where those
functions get the names a recipe's ``algorithm:`` block uses, and where a domain's paper adds its own
(a domain's ``algorithms`` module: a miss imports the module of the domain whose descriptor names it,
:func:`zoo.domains.locate_algorithm`, else of each domain that may add rows to the table,
:func:`zoo.domains.discover_algorithms`; so a name any domain registers resolves whatever was imported first,
and a VLM run imports no policy domain's training code). The pattern is verl's
decorator registries (``verl/trainer/ppo/core_algos.py``: ``register_adv_est``, ``register_policy_loss``),
kept apart from the functions so that ``zoo.rl`` imports no discovery.

A paper's loss is a choice of surrogate (:data:`POLICY_LOSSES`), of how the (B, T) per-token loss is
reduced, of the clip range, and of any per-sample weight: one :class:`LossType` row of :data:`LOSS_TYPES`.
Both VLM engines read this one table: the TRL engine reproduces TRL's own reduction for the losses TRL
has (``trl_loss_type``) and verl's named reduction for the others; the verl export writes the same
reduction as verl's ``loss_agg_mode``.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.domains import discover_algorithms, locate_algorithm
from zoo.rl import advantages, losses, semi_online
from zoo.rl.losses import AGG_MODES, TRL_LOSS_TYPES
from zoo_common.registry import Registry

ADVANTAGE_ESTIMATORS: Registry = Registry("advantage estimator", discover=discover_algorithms("advantage estimator"),
                                         locate=locate_algorithm("advantage estimator"))  # fmt: skip
"""Name -> estimator ``fn(rewards, group_ids, *, mask=None, **options)`` (:mod:`zoo.rl.advantages`)."""

POLICY_LOSSES: Registry = Registry("policy loss", discover=discover_algorithms("policy loss"),
                                  locate=locate_algorithm("policy loss"))
"""Name -> ``fn(logp, old_logp, advantages, mask, **options) -> (loss, stats)`` (:mod:`zoo.rl.losses`)."""

ADVANTAGE_ESTIMATORS.register("grpo", advantages.grpo)
ADVANTAGE_ESTIMATORS.register("rloo", advantages.rloo)
ADVANTAGE_ESTIMATORS.register("reinforce-plus-plus-baseline", advantages.reinforce_plus_plus_baseline,
                              aliases=("reinforce++-baseline",))  # fmt: skip
ADVANTAGE_ESTIMATORS.register("reinforce-plus-plus", advantages.reinforce_plus_plus, aliases=("reinforce++",))
ADVANTAGE_ESTIMATORS.register("ui-s1", semi_online.ui_s1)
POLICY_LOSSES.register("vanilla", losses.clipped_surrogate, aliases=("clip", "ppo"))
POLICY_LOSSES.register("gspo", losses.gspo_loss)


@dataclass(frozen=True)
class LossType:
    """One ``algorithm.loss_type`` of a recipe.

    Attributes:
        name: the recipe value (``dapo``).
        loss: the surrogate in :data:`POLICY_LOSSES` (``vanilla`` clipped PPO, ``gspo``).
        aggregation: verl ``loss_agg_mode`` reducing the (B, T) loss (used by verl, and by the TRL
            engine when ``trl_loss_type`` is ``None``).
        trl_loss_type: TRL ``GRPOConfig.loss_type`` whose reduction the TRL engine reproduces
            (:func:`~zoo.rl.losses.trl_aggregate`), or ``None`` for losses TRL does not have.
        loss_scale_factor: divisor of ``seq-mean-token-sum-norm``: a number, ``"max_completion_length"``,
            or ``None`` (verl's default).
        default_clip: ``(clip_low, clip_high)`` of the paper, used when the recipe leaves them unset.
        sample_weight: ``Sample.meta`` key of a per-sample weight multiplying the loss, or ``None``.
        paper: where the loss comes from.
    """

    name: str
    aggregation: str
    loss: str = "vanilla"
    trl_loss_type: str | None = None
    loss_scale_factor: float | str | None = None
    default_clip: tuple[float, float] = (0.2, 0.2)
    sample_weight: str | None = None
    paper: str = ""

    def __post_init__(self) -> None:
        if self.aggregation not in AGG_MODES:
            raise ValueError(f"loss type {self.name!r}: aggregation {self.aggregation!r} is not one of {AGG_MODES}")
        if self.trl_loss_type is not None and self.trl_loss_type not in TRL_LOSS_TYPES:
            raise ValueError(f"loss type {self.name!r}: TRL has no loss_type {self.trl_loss_type!r}")
        POLICY_LOSSES.get(self.loss)  # an unknown surrogate fails here, with close matches

    @property
    def sequence_level(self) -> bool:
        """The importance ratio is per sequence (GSPO) rather than per token."""
        return POLICY_LOSSES.canonical(self.loss) == "gspo"

    def scale(self, max_completion_length: int) -> float | None:
        """The numeric ``loss_scale_factor`` for a run with this completion budget."""
        if self.loss_scale_factor == "max_completion_length":
            return float(max_completion_length)
        return None if self.loss_scale_factor is None else float(self.loss_scale_factor)


LOSS_TYPES: Registry[LossType] = Registry("loss type", discover=discover_algorithms("loss type"),
                                         locate=locate_algorithm("loss type"))  # + the domains' own rows


def register_loss_type(loss_type: LossType) -> LossType:
    """Add a row to the loss table (a domain calls this for its paper's loss)."""
    return LOSS_TYPES.register(loss_type.name, loss_type)


for _row in (
    LossType("grpo", "seq-mean-token-mean", trl_loss_type="grpo", paper="GRPO, arXiv 2402.03300"),
    LossType("dr_grpo", "seq-mean-token-sum-norm", trl_loss_type="dr_grpo", loss_scale_factor="max_completion_length",
             paper="Dr. GRPO, arXiv 2503.20783"),
    LossType("dapo", "token-mean", trl_loss_type="dapo", default_clip=(0.2, 0.28), paper="DAPO, arXiv 2503.14476"),
    LossType("bnpo", "token-mean", trl_loss_type="bnpo", paper="TRL's token mean over the local batch"),
    LossType("gspo", "seq-mean-token-mean", loss="gspo", default_clip=(3e-4, 4e-4), paper="GSPO, arXiv 2507.18071"),
):  # fmt: skip
    register_loss_type(_row)
