"""The loss table: each recipe ``loss_type`` registered once, with everything an engine needs.

A paper's loss is a choice of surrogate (:data:`~zoo.rl.losses.POLICY_LOSSES`), of how the
(B, T) per-token loss is reduced, of the clip range, and of any per-sample weight. Both VLM
engines read this one table: the TRL engine reproduces TRL's own reduction for the losses TRL
has (``trl_loss_type``) and verl's named reduction for the others; the verl export writes the
same reduction as verl's ``loss_agg_mode``. A domain whose paper defines its own loss registers
it here from its rewards module (GUI-G1's rate-weighted token sum lives in ``domains/gui``).
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.domains import load_algorithms
from zoo.rl.losses import AGG_MODES, POLICY_LOSSES, TRL_LOSS_TYPES
from zoo_common.registry import Registry


@dataclass(frozen=True)
class LossType:
    """One ``algorithm.loss_type`` of a recipe.

    Attributes:
        name: the recipe value (``dapo``).
        loss: the surrogate in :data:`~zoo.rl.losses.POLICY_LOSSES` (``vanilla`` clipped PPO, ``gspo``).
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


LOSS_TYPES: Registry[LossType] = Registry("loss type", discover=load_algorithms)  # + the domains' own rows


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
