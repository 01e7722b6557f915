"""What the processes of a multi-process diffusion run exchange: tensors gathered in rank order.

A module of its own because the run (:mod:`.setup`), the loop (:mod:`.trainer`) and a reward the run
attaches (:mod:`.adversarial_pickscore`, whose rounds compare scores over every process) all gather,
and the run's module imports that reward.
"""

from __future__ import annotations

import torch


def gather_all(values: torch.Tensor) -> torch.Tensor:
    """Every process's ``values`` concatenated in rank order (this process's alone in a one-process run)."""
    from accelerate.utils import gather_object

    return torch.tensor(gather_object(values.tolist()), dtype=values.dtype)
