"""Adv-GRPO's reward: a DINOv2 discriminator trained online, reference images against current generations.

Adv-GRPO ("The Image as Its Own Reward", arXiv 2511.20256; showlab/Adv-GRPO at commit 8287f90,
``scripts/train_sd3_fast_dino_patch.py`` and ``adv_grpo/rewards.py: dino_patch_cotrain_score``) scores an image
with a small head on a frozen DINOv2 ViT-B/14 (timm ``vit_base_patch14_dinov2.lvd142m``; here its transformers
port, ``facebook/dinov2-base``). Images are resized bicubically to the backbone's size (518) and
ImageNet-normalised; ``head = Linear(D, 512) - GELU - Linear(512, 1)``. With ``cls`` the first token of the
backbone's last (normed) layer and ``p_1..p_64`` patch tokens drawn at random with replacement::

    reward = 0.7 * head(cls / (|cls| + 1e-6)) + 0.3 * mean_k head(p_k / (|p_k| + 1e-6))

The head is trained with a hinge loss, reference images positive and the policy's images negative, on the
CLS token and on 64 random patches each, *not* normalised (their ``train_dino`` skips the normalisation the
reward applies; kept as they wrote it)::

    L_D = 0.5 * (relu(1 - D(cls_ref)) + relu(1 + D(cls_gen))) + 0.3 * 0.5 * (relu(1 - D(p_ref)) + relu(1 + D(p_gen)))

Adam on the head alone, lr ``discriminator_lr`` (1e-4), betas (0.5, 0.999). The schedule is theirs
(``train_sd3_fast_dino_patch.py``'s epoch loop with ``config.d_times = 10``, ``config/grpo.py``): every round
samples and scores a batch; round ``r`` (0-based) then takes one discriminator step on those images and no
generator step when ``(r + 1) % d_times != 0``, and one generator (PPO) pass and no discriminator step
otherwise, so 9 discriminator-only rounds precede each generator round (:func:`trains_discriminator`).
Patch draws use the run's seeded generator, so a run is repeatable (theirs use torch's global RNG).

The positives of a discriminator step are paired with its negatives by prompt, as theirs are: they load the
reference images listed for the prompt of each sampled mini-batch (``reference_images_dic[prompts[0]]``, 8
Qwen-Image pictures per prompt against 8 generations) and stop when a prompt has none. Here each generated
image gets one reference of its own prompt, drawn uniformly (the same set as theirs when a prompt has as many
references as the group has images), and a run whose training prompts lack references does not start.

That is ``algorithm.discriminator: dinov2``. The other, ``pickscore`` (their ``train_sd3_fast_pickscore.py``),
fine-tunes PickScore's CLIP instead and steps it in the rounds where the references score below the
generations: :mod:`zoo.engines.diffusion.adversarial_pickscore`. This module holds what the two share: the
references, :class:`AdversarialReward` (scoring, one optimiser step, checkpoint state; its hooks are where
the PickScore reward differs), the gradient averaging of multi-process runs, and :data:`DISCRIMINATORS`.
The run picks one and loads its references (:func:`zoo.engines.diffusion.setup.attach_discriminator`), above
both modules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rewards.base import RewardResult

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


TINY_BACKBONE = "tiny:dinov2"
TINY_CONFIG = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "mlp_ratio": 2, "image_size": 28,
               "patch_size": 14}  # fmt: skip
"""A 28 px input cut into 2 x 2 patches of 14: CLS plus 4 patch tokens of width 32."""


@dataclass(frozen=True)
class DiscriminatorKind:
    """One of Adv-GRPO's discriminators: what a recipe's ``null`` takes, and its seeded CPU stand-in."""

    weights: str
    """``algorithm.discriminator_backbone`` when null: the authors' model."""
    lr: float
    """``algorithm.discriminator_lr`` when null: the authors' learning rate."""
    tiny: str
    """The backbone name that builds a small random model from a config (no files)."""


DISCRIMINATORS = {
    # theirs is timm's vit_base_patch14_dinov2.lvd142m, here its transformers port; d_lr: config/grpo.py:142
    "dinov2": DiscriminatorKind("facebook/dinov2-base", 1e-4, TINY_BACKBONE),
    # showlab/Adv-GRPO@8287f90:adv_grpo/pickscore_scorer.py:9; d_lr: config/grpo.py:354
    "pickscore": DiscriminatorKind("yuvalkirstain/PickScore_v1", 5e-6, "tiny:clip"),
}
"""``algorithm.discriminator`` -> its kind."""


def trains_discriminator(round_index: int, d_times: int) -> bool:
    """Whether 0-based round ``round_index`` is a discriminator-only round (else generator-only): the authors'
    ``if config.train_d and (epoch + 1) % config.d_times != 0`` (``train_sd3_fast_dino_patch.py``)."""
    return (round_index + 1) % d_times != 0


def load_backbone(name: str, seed: int = 0) -> nn.Module:
    """A frozen transformers ``Dinov2Model``: ``tiny:dinov2`` (random, from :data:`TINY_CONFIG`, weights drawn
    from ``seed`` without touching torch's global RNG), or a directory or Hub id (safetensors only)."""
    from transformers import Dinov2Config, Dinov2Model

    if name == TINY_BACKBONE:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = Dinov2Model(Dinov2Config(**TINY_CONFIG))
    else:
        model = Dinov2Model.from_pretrained(weights_path(name), use_safetensors=True)
    return model.eval().requires_grad_(False)


def weights_path(name: str) -> Path:
    """A directory as given, else a Hub id's files found as every zoo model's are (cache, then download)."""
    from zoo.hub import resolve_repo

    path = Path(name).expanduser()
    return path if path.is_dir() else resolve_repo(name).path


class DinoDiscriminator(nn.Module):
    """A frozen DINOv2 and Adv-GRPO's scoring head; (B, 3, H, W) images in [0, 1] in.

    Args:
        backbone: a ``Dinov2Model`` (its ``config.image_size`` is the input size).
        hidden: the head's width (512). n_patches: random patch tokens per image (64).
        cls_weight: the CLS share of the reward (0.7). patch_loss_weight: the patch hinge's weight in the loss (0.3).
    """

    def __init__(self, backbone: nn.Module, hidden: int = 512, n_patches: int = 64, cls_weight: float = 0.7,
                 patch_loss_weight: float = 0.3) -> None:  # fmt: skip
        super().__init__()
        self.backbone = backbone.eval().requires_grad_(False)
        width = backbone.config.hidden_size
        self.head = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, 1))
        self.n_patches, self.cls_weight, self.patch_loss_weight = n_patches, cls_weight, patch_loss_weight
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def tokens(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cls (B, D), patches (B, N, D))`` of the frozen backbone's last layer."""
        size = self.backbone.config.image_size
        x = nn.functional.interpolate(images.float(), size=(size, size), mode="bicubic", align_corners=False)
        with torch.no_grad():
            hidden = self.backbone(pixel_values=(x - self.mean) / self.std).last_hidden_state
        return hidden[:, 0], hidden[:, 1:]

    def sample(self, patches: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        """``n_patches`` tokens per image drawn with replacement, (B, n, D)."""
        b, n, d = patches.shape
        index = torch.randint(0, n, (b, min(self.n_patches, n)), generator=generator).to(patches.device)
        return torch.gather(patches, 1, index.unsqueeze(-1).expand(-1, -1, d))

    def score(self, images: torch.Tensor, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """The reward of each image, with its CLS and mean patch parts."""
        cls, patches = self.tokens(images)
        sampled = self.sample(patches, generator)
        cls_score = self.head(cls / (cls.norm(dim=-1, keepdim=True) + 1e-6)).squeeze(-1)
        patch_score = self.head(sampled / (sampled.norm(dim=-1, keepdim=True) + 1e-6)).squeeze(-1).mean(1)
        reward = self.cls_weight * cls_score + (1 - self.cls_weight) * patch_score
        return {"reward": reward, "cls": cls_score, "patch": patch_score}

    def loss(self, real: torch.Tensor, fake: torch.Tensor, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """The authors' hinge loss on CLS logits plus ``patch_loss_weight`` x the same on random patch logits."""
        (cls_r, patches_r), (cls_f, patches_f) = self.tokens(real), self.tokens(fake)
        logit_r, logit_f = self.head(cls_r).squeeze(-1), self.head(cls_f).squeeze(-1)
        patch_r = self.head(self.sample(patches_r, generator)).squeeze(-1)
        patch_f = self.head(self.sample(patches_f, generator)).squeeze(-1)
        image_loss = 0.5 * (torch.relu(1 - logit_r).mean() + torch.relu(1 + logit_f).mean())
        patch_loss = 0.5 * (torch.relu(1 - patch_r).mean() + torch.relu(1 + patch_f).mean())
        accuracy = 0.5 * ((logit_r > 0).float().mean() + (logit_f < 0).float().mean())
        return {"loss": image_loss + self.patch_loss_weight * patch_loss, "real": logit_r.mean(),
                "fake": logit_f.mean(), "accuracy": accuracy}  # fmt: skip


class References:
    """The discriminator's positives: the reference images, decoded when a step draws them, and for each prompt the
    rows that depict it.

    Only where each image is stays in memory: the authors' Qwen-Image PickScore set is 8 images for each of its
    training prompts (about 60 GB of PNGs), far more than memory holds decoded, and theirs too opens a prompt's files
    when its batch needs them (showlab/Adv-GRPO@8287f90:scripts/train_sd3_fast_pickscore.py:773-798). A draw decodes
    each image it picks once; nothing is kept between draws (a step that sets the same draw against its generations
    twice, the PickScore one, keeps the drawn tensor itself).
    """

    def __init__(self, sources: Sequence[Any], rows: dict[str, list[int]],
                 decode: Callable[[Any], torch.Tensor] | None = None) -> None:  # fmt: skip
        """``sources``: what ``decode`` turns into a (3, H, W) image in [0, 1] at the policy's output size (a file
        path: :func:`decode_reference`); with no ``decode``, such images already (a (N, 3, H, W) tensor).
        ``rows``: prompt -> indices into ``sources``."""
        self.sources, self.rows, self.decode = sources, rows, decode

    def missing(self, prompts: Sequence[str]) -> list[str]:
        """The prompts (in order, once each) with no reference image."""
        return [p for p in dict.fromkeys(prompts) if p not in self.rows]

    def draw(self, prompts: Sequence[str], generator: torch.Generator) -> torch.Tensor:
        """(len(prompts), 3, H, W): one reference of each prompt in ``prompts``, uniformly among that prompt's
        images, each picked image decoded once."""
        if absent := self.missing(prompts):
            raise KeyError(f"adv_grpo: no reference image for prompt(s) {absent[:3]}")
        picks = [rows[int(torch.randint(len(rows), (1,), generator=generator))]
                 for rows in (self.rows[p] for p in prompts)]  # fmt: skip
        decoded = {index: self.image(index) for index in dict.fromkeys(picks)}
        return torch.stack([decoded[index] for index in picks])

    def image(self, index: int) -> torch.Tensor:
        """Reference ``index`` as a (3, H, W) image in [0, 1]."""
        source = self.sources[index]
        return source if self.decode is None else self.decode(source)


def decode_reference(source: Any, size: int) -> torch.Tensor:
    """A reference image (a path, or any input :func:`zoo.images.load_image` reads) as a (3, size, size) float tensor
    in [0, 1]: resized bilinearly and scaled as the authors' ``transforms.Resize((512, 512))`` then ``ToTensor()``
    (showlab/Adv-GRPO@8287f90:scripts/train_sd3_fast_pickscore.py:792-795; train_sd3_fast_dino_patch.py:880-883)."""
    from PIL import Image
    from torchvision.transforms.functional import pil_to_tensor

    from zoo.images import load_image

    image = load_image(source).resize((size, size), Image.Resampling.BILINEAR)
    return pil_to_tensor(image).float() / 255


class AdversarialReward:
    """A discriminator as a reward (images in, ``RewardResult`` out) and its update against reference images.

    The class is the DINOv2 discriminator's. Its hooks (:meth:`trained`, :meth:`scores`, :meth:`pair_loss`,
    :meth:`positives`, :meth:`plan`) are what the PickScore one overrides
    (:class:`~zoo.engines.diffusion.adversarial_pickscore.PickScoreReward`); the optimiser (Adam, betas
    (0.5, 0.999): both of the authors' scripts), the step and the checkpoint state are shared.
    """

    name = "adversarial"
    state_name = "head"
    """The key of the trained weights in :meth:`state_dict`."""

    def __init__(self, references: References, lr: float, generator: torch.Generator,
                 discriminator: Any, d_times: int = 10) -> None:  # fmt: skip
        """``discriminator``: what the hooks read, a :class:`DinoDiscriminator` here; ``d_times``: :meth:`plan`'s."""
        self.references, self.generator, self.discriminator = references, generator, discriminator
        self.d_times = d_times
        self.optimizer = torch.optim.Adam(self.trained().parameters(), lr=lr, betas=(0.5, 0.999))

    def trained(self) -> nn.Module:
        """What the discriminator step trains (the backbone is frozen and reloaded from its files)."""
        return self.discriminator.head

    def scores(self, images: torch.Tensor, samples: Sequence[Any]) -> dict[str, torch.Tensor]:
        """``{"reward": (B,), component: (B,), ...}`` of (B, 3, H, W) images; the head reads no prompt."""
        return self.discriminator.score(images, self.generator)

    def pair_loss(self, real: torch.Tensor, fake: torch.Tensor, prompts: Sequence[str]) -> dict[str, torch.Tensor]:
        """The loss of one step (``"loss"``) and what to log of it."""
        self.discriminator.head.train()
        return self.discriminator.loss(real, fake, self.generator)

    def positives(self, prompts: Sequence[str]) -> torch.Tensor:
        """The references a step sets against the generations: one of each image's prompt, drawn now."""
        return self.references.draw(prompts, self.generator)

    def plan(self, round_index: int, reward: float, prompts: Sequence[str]) -> tuple[bool, dict[str, float]]:
        """Whether round ``round_index`` steps the discriminator (and not the generator), and what to log of the
        decision: the authors' fixed alternation (:func:`trains_discriminator`), whatever the scores."""
        return trains_discriminator(round_index, self.d_times), {}

    @torch.no_grad()
    def __call__(self, predictions: Sequence[torch.Tensor], samples: Sequence[Any]) -> list[RewardResult]:
        parts = self.scores(torch.stack(list(predictions)).float(), samples)
        rewards = parts.pop("reward")
        return [RewardResult(float(r), {k: float(v[i]) for k, v in parts.items()}) for i, r in enumerate(rewards)]

    def update(self, generated: torch.Tensor, prompts: Sequence[str]) -> dict[str, float]:
        """One step: ``generated`` (image ``i`` drawn for ``prompts[i]``) against :meth:`positives`."""
        references = self.positives(prompts)
        parts = self.pair_loss(references, generated.float(), prompts)
        self.optimizer.zero_grad()
        parts["loss"].backward()
        average_gradients(self.trained())
        self.optimizer.step()
        return {f"disc/{k}": v.item() for k, v in parts.items()}

    def state_dict(self) -> dict[str, Any]:
        """The trained weights and their optimiser: tensors and plain containers (``zoo.runs.read_state``)."""
        return {self.state_name: self.trained().state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trained().load_state_dict(state[self.state_name])
        self.optimizer.load_state_dict(state["optimizer"])


def average_gradients(module: nn.Module) -> None:
    """Average ``module``'s gradients over the processes of a multi-process run (nothing in one process).

    The head is not wrapped for data parallelism and each process steps it on its own images: without this
    every rank would train, and reward with, a discriminator of its own, and a checkpoint (which holds the
    main process's) would resume the other ranks with a head they never had. Gathered as CPU objects rather
    than all-reduced: the DINOv2 head stays on the CPU, which an NCCL process group cannot reduce. The sum runs
    in rank order on every process, so the weights stay bit-equal."""
    from accelerate.state import PartialState
    from accelerate.utils import gather_object

    if PartialState().num_processes == 1:
        return
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    mean = torch.stack(gather_object([torch.cat([g.flatten() for g in grads]).cpu()])).mean(0)
    for grad, part in zip(grads, mean.split([g.numel() for g in grads]), strict=True):
        grad.copy_(part.view_as(grad))
