"""GUI-G1's loss, declared by the domain whose paper defines it (the backbone names no paper's loss).

GUI-G1 (Zhou et al., arXiv 2505.15810; ``src/open-r1-multimodal/src/open_r1/trainer/grpo_trainer.py``,
``compute_loss``) sums each completion's clipped per-token loss, multiplies it by the sample's
difficulty ``rate`` and divides by 64: verl's ``seq-mean-token-sum-norm`` with
``loss_scale_factor=64`` and a per-sample weight read from ``Sample.meta["rate"]``. Its
advantages are GRPO's without the std division (``normalize_std: false`` in the recipes).
"""

from zoo.algorithms import LossType, register_loss_type

GUI_G1_LOSS = register_loss_type(
    LossType(
        "gui_g1",
        "seq-mean-token-sum-norm",
        loss_scale_factor=64.0,
        sample_weight="rate",
        paper="GUI-G1, arXiv 2505.15810 (token sum x rate / 64)",
    )
)
