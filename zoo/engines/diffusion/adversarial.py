"""Adv-GRPO's reward: an image discriminator trained online, reference images against current generations.

Adv-GRPO ("The Image as Its Own Reward", arXiv 2511.20256; showlab/Adv-GRPO) rewards a generation
with a discriminator's score and keeps training that discriminator with a hinge loss, reference
images positive and the policy's images negative::

    L_D = 0.5 * (relu(1 - D(ref)) + relu(1 + D(gen)))          Adam, lr 1e-4, betas (0.5, 0.999)

Simplified here, and said so: the authors' D is an MLP head on frozen DINOv2 features (CLS plus
random patch tokens, 518 px); this one is a small convolutional network on the decoded image, so
it runs on tiny CPU models. The discriminator is updated once per round, after the round's images
were scored (the authors alternate 9 discriminator-only epochs with one generator epoch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from rewards.base import RewardResult

if TYPE_CHECKING:
    from zoo.engines.diffusion.setup import Run


class ImageDiscriminator(nn.Module):
    """(B, 3, H, W) images in [0, 1] -> (B,) scores: three strided convolutions, global pooling, a linear head."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.GELU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )  # fmt: skip
        self.head = nn.Linear(2 * width, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images * 2 - 1)).squeeze(-1)


class AdversarialReward:
    """The discriminator as a reward (images in, ``RewardResult`` out) and its hinge-loss update."""

    name = "adversarial"

    def __init__(self, references: torch.Tensor, lr: float, generator: torch.Generator) -> None:
        self.references, self.generator = references, generator
        self.discriminator = ImageDiscriminator()
        self.optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))

    @torch.no_grad()
    def __call__(self, predictions: Sequence[torch.Tensor], samples: Sequence[Any]) -> list[RewardResult]:
        scores = self.discriminator(torch.stack(list(predictions)).float())
        return [RewardResult(float(s)) for s in scores]

    def update(self, generated: torch.Tensor) -> dict[str, float]:
        """One hinge-loss step: a random batch of references (as many as ``generated``) against ``generated``."""
        rows = torch.randint(len(self.references), (len(generated),), generator=self.generator)
        real, fake = self.discriminator(self.references[rows]), self.discriminator(generated.float())
        loss = 0.5 * (torch.relu(1 - real).mean() + torch.relu(1 + fake).mean())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"disc/loss": loss.item(), "disc/real": real.mean().item(), "disc/fake": fake.mean().item()}

    def state_dict(self) -> dict[str, Any]:
        return {"discriminator": self.discriminator.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.discriminator.load_state_dict(state["discriminator"])
        self.optimizer.load_state_dict(state["optimizer"])


def reference_tensor(run: Run) -> torch.Tensor:
    """The reference dataset's first images, resized to the model's output size, as (N, 3, H, W) in [0, 1]."""
    from PIL import Image
    from torchvision.transforms.functional import pil_to_tensor

    size = run.model.latent_shape[-1] * 2 ** (len(run.model.vae.config.block_out_channels) - 1)
    images = []
    for sample in run.recipe.algorithm.reference_images.load():
        for image in sample.images:
            image = Image.open(image) if isinstance(image, str) else image
            images.append(pil_to_tensor(image.convert("RGB").resize((size, size))).float() / 255)
    if not images:
        raise ValueError(f"adv_grpo: dataset {run.recipe.algorithm.reference_images.name!r} has no images")
    return torch.stack(images)


def attach_discriminator(run: Run) -> None:
    """Make the run's reward the discriminator (the recipe's rewards are not used) and keep it for checkpoints."""
    reward = AdversarialReward(reference_tensor(run), run.recipe.algorithm.discriminator_lr, run.generator)
    run.reward = reward
    run.extra["discriminator"] = reward
