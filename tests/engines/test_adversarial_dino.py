"""Adv-GRPO's DINOv2 discriminator, against showlab/Adv-GRPO @ 8287f90: ``adv_grpo/rewards.py:
dino_patch_cotrain_score`` (reward ``0.7 * head(cls/|cls|) + 0.3 * mean head(p/|p|)`` over 64 random patches) and
``scripts/train_sd3_fast_dino_patch.py: train_dino`` / ``DINOHead`` (Linear(D, 512)-GELU-Linear(512, 1); hinge
on raw CLS plus 0.3 x hinge on raw random patches; Adam betas (0.5, 0.999) on the head). A tiny random DINOv2
stands in for ViT-B/14."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from zoo.engines.diffusion.adversarial import AdversarialReward, DinoDiscriminator, References, load_backbone


def tiny_dinov2(folder: Path) -> Path:
    """A random transformers DINOv2 (28 px, patch 14: 4 patch tokens) saved as safetensors."""
    from transformers import Dinov2Config, Dinov2Model

    torch.manual_seed(0)
    Dinov2Model(Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, mlp_ratio=2, image_size=28,
                             patch_size=14)).save_pretrained(folder, safe_serialization=True)  # fmt: skip
    return folder


@pytest.fixture
def disc(tmp_path):
    torch.manual_seed(1)
    return DinoDiscriminator(load_backbone(str(tiny_dinov2(tmp_path / "dino"))), n_patches=3)


def _hand_tokens(disc, images):
    x = torch.nn.functional.interpolate(images, size=(28, 28), mode="bicubic", align_corners=False)
    mean, std = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1), torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    hidden = disc.backbone(pixel_values=(x - mean) / std).last_hidden_state
    return hidden[:, 0], hidden[:, 1:]


def test_head_shape_and_frozen_backbone(disc):
    layers = list(disc.head)
    assert [type(m).__name__ for m in layers] == ["Linear", "GELU", "Linear"]
    assert (layers[0].in_features, layers[0].out_features, layers[2].out_features) == (32, 512, 1)
    assert not any(p.requires_grad for p in disc.backbone.parameters())


def test_reward_is_the_weighted_cls_and_mean_patch_score(disc):
    images = torch.rand(2, 3, 20, 20, generator=torch.Generator().manual_seed(0))
    parts = disc.score(images, torch.Generator().manual_seed(5))
    cls, patches = _hand_tokens(disc, images)
    index = torch.randint(0, 4, (2, 3), generator=torch.Generator().manual_seed(5))
    picked = torch.stack([patches[b, index[b]] for b in range(2)])
    cls_score = disc.head(cls / (cls.norm(dim=-1, keepdim=True) + 1e-6)).squeeze(-1)
    patch_score = disc.head(picked / (picked.norm(dim=-1, keepdim=True) + 1e-6)).squeeze(-1).mean(1)
    torch.testing.assert_close(parts["cls"], cls_score)
    torch.testing.assert_close(parts["patch"], patch_score)
    torch.testing.assert_close(parts["reward"], 0.7 * cls_score + 0.3 * patch_score)


def test_loss_is_their_hinge_on_raw_tokens(disc):
    real, fake = torch.rand(2, 3, 20, 20), torch.rand(2, 3, 20, 20)
    parts = disc.loss(real, fake, torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(7)
    (cr, pr), (cf, pf) = _hand_tokens(disc, real), _hand_tokens(disc, fake)
    ir, if_ = torch.randint(0, 4, (2, 3), generator=g), torch.randint(0, 4, (2, 3), generator=g)
    sr, sf = torch.stack([pr[b, ir[b]] for b in range(2)]), torch.stack([pf[b, if_[b]] for b in range(2)])
    head = lambda x: disc.head(x).squeeze(-1)
    expected = (0.5 * (torch.relu(1 - head(cr)).mean() + torch.relu(1 + head(cf)).mean())
                + 0.3 * 0.5 * (torch.relu(1 - head(sr)).mean() + torch.relu(1 + head(sf)).mean()))  # fmt: skip
    torch.testing.assert_close(parts["loss"], expected)


def test_updates_train_the_head_only_and_separate_real_from_fake(disc):
    references = torch.zeros(4, 3, 20, 20) + torch.tensor([0.9, 0.8, 0.1]).view(1, 3, 1, 1)
    reward = AdversarialReward(References(references, {"a": [0, 1, 2, 3]}), 1e-2, torch.Generator().manual_seed(0), disc)
    backbone = {k: v.clone() for k, v in disc.backbone.state_dict().items()}
    fake = torch.zeros(4, 3, 20, 20) + torch.tensor([0.1, 0.2, 0.9]).view(1, 3, 1, 1)
    first = reward.update(fake, ["a"] * 4)
    for _ in range(20):
        last = reward.update(fake, ["a"] * 4)
    assert last["disc/loss"] < first["disc/loss"] and last["disc/real"] > last["disc/fake"]
    assert all(torch.equal(v, disc.backbone.state_dict()[k]) for k, v in backbone.items())
    scores = reward(list(references[:2]) + list(fake[:2]), [{}] * 4)
    assert min(s.score for s in scores[:2]) > max(s.score for s in scores[2:])
    assert set(scores[0].components) == {"cls", "patch"} and set(reward.state_dict()) == {"head", "optimizer"}


def test_positives_are_references_of_each_generated_image_s_prompt():
    """The authors' discriminator step takes the references listed for the prompt of the generations it is
    shown (``train_sd3_fast_dino_patch.py``: ``reference_images_dic[prompts[0]]``); every draw here is one of the
    drawn prompt's own rows, each of them reachable, and a prompt without references is refused."""
    images = torch.arange(5.0).view(5, 1, 1, 1).expand(5, 3, 2, 2)
    references = References(images, {"red": [0, 1, 2], "blue": [3, 4]})
    generator = torch.Generator().manual_seed(0)
    seen: dict[str, set[int]] = {"red": set(), "blue": set()}
    for _ in range(30):
        drawn = references.draw(["red", "blue", "red"], generator)
        for prompt, row in zip(["red", "blue", "red"], drawn[:, 0, 0, 0].long().tolist(), strict=True):
            seen[prompt].add(row)
    assert seen == {"red": {0, 1, 2}, "blue": {3, 4}}
    assert references.missing(["red", "green", "green"]) == ["green"]
    with pytest.raises(KeyError, match="green"):
        references.draw(["green"], generator)


def test_tiny_backbone_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b, c = load_backbone("tiny:dinov2", seed=3), load_backbone("tiny:dinov2", seed=3), load_backbone("tiny:dinov2")
    assert torch.equal(torch.random.get_rng_state(), state)
    weights = lambda m: torch.cat([p.flatten() for p in m.parameters()])
    assert torch.equal(weights(a), weights(b)) and not torch.equal(weights(a), weights(c))
    assert a.config.image_size == 28 and not any(p.requires_grad for p in a.parameters())
    assert DinoDiscriminator(a).score(torch.rand(2, 3, 20, 20))["reward"].shape == (2,)
