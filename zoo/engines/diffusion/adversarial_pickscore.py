"""Adv-GRPO's PickScore discriminator: PickScore's CLIP, its last vision layers fine-tuned online.

``algorithm.discriminator: pickscore`` ports showlab/Adv-GRPO at commit 8287f90,
``scripts/train_sd3_fast_pickscore.py`` run with ``config/grpo.py: pickscore_cotrain_sd3_fast``
(``scripts/grpo_pickscore.sh``). Line numbers below are that commit's.

Model. ``CLIPModel`` ``yuvalkirstain/PickScore_v1`` with the processor of
``laion/CLIP-ViT-H-14-laion2B-s32B-b79K`` (``adv_grpo/pickscore_scorer.py:8-13``). Before each step every weight
is frozen but the vision encoder's layers from ``config.tune_layer`` on (-1: the last;
``train_sd3_fast_pickscore.py:1016-1020``, ``config/grpo.py:356``); Adam, lr ``config.d_lr`` 5e-6, betas
(0.5, 0.999) (``train_sd3_fast_pickscore.py:658``, ``config/grpo.py:354``).

Reward. PickScore as their scorer computes it (``pickscore_scorer.py:21-51``): the image rounded to uint8
(``adv_grpo/rewards.py:581-584``, ``pickscore_cotrain_score``) and put through the processor (shortest side
resized bicubically, centre-cropped, normalised; its PIL backend, which their pinned transformers 4.54 loads
unless asked for the fast one, ``requirements.txt:3``, where transformers 5 would pick torchvision's resize),
the prompt tokenised with ``padding=True``, truncated at 77::

    reward = exp(logit_scale) * cos(text, image) / 26

Loss. PickScore's own pairwise loss, ``CLIPCriterion`` without in-batch negatives
(``adv_grpo/pick_score_training.py:95-106, 143-199``; ``train_sd3_fast_pickscore.py:48, 151-183``), the
reference preferred (``label_0 = 1``, ``label_1 = 0``): with ``s(x) = exp(logit_scale) * cos(text, x)``, the
prompt padded to 77 tokens and no attention mask::

    L_D = mean_i -log softmax([s(ref_i), s(gen_i)])_0

Both images reach the processor as their ``tensor_to_pil_list`` leaves them: mapped to [-1, 1] and back, then
*truncated* to uint8 (``train_sd3_fast_pickscore.py:133-148, 1006-1007``), unlike the reward's rounding.

Schedule. Every round samples and scores the generations and the reference images of their prompts with the
current discriminator; when the references' mean reward over all processes is below the generations'
(``reference_rewards_mean < rewards_mean``) the round takes one discriminator step on those images and
pairs, and no generator step (``train_sd3_fast_pickscore.py:816-817, 1008-1037``: ``continue``); otherwise it
is an ordinary generator round (:func:`references_score_below`). ``d_times`` is not read: its test is
commented out there (line 1024).

Differences, ``zoo:``.

* Float32. Theirs casts the scorer and the scored images to bfloat16 (lines 655, 816-817); the zoo keeps
  float32, on the run's device.
* One reference per generated image, drawn uniformly among its prompt's (the DINOv2 discriminator's
  :class:`~zoo.engines.diffusion.adversarial.References`); theirs takes a prompt's listed files in order, 8
  against its 8 generations (lines 773-801). The same draw is scored and trained on, as theirs is.
* Gradients averaged over processes (:func:`~zoo.engines.diffusion.adversarial.average_gradients`). Theirs
  wraps the CLIP in DDP (line 657), but its scorer unwraps it at the first reward (``pickscore_scorer.py:19-20``),
  so each of their ranks trains a copy of its own; a zoo checkpoint holds one, which every rank must have had.
* Prompts as drawn; theirs are decoded back from SD3's CLIP tokens (lines 812-814, 962-965: lower-cased and
  whitespace-normalised, which PickScore's tokenizer does anyway).
* The engine's evaluation scores with this co-trained discriminator (it is the run's reward); theirs
  evaluates with the frozen PickScore (``config/grpo.py:370-372``).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from rewards.base import require, target_of
from zoo.engines.diffusion.adversarial import DISCRIMINATORS, AdversarialReward, References, weights_path
from zoo.engines.diffusion.distributed import gather_all

PROCESSOR = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"
"""The processor PickScore was trained with and theirs loads (``pickscore_scorer.py:8``)."""
MAX_TOKENS = 77
TINY_CHARACTERS = string.ascii_lowercase + string.digits
TINY_VISION = {"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 2, "num_hidden_layers": 2,
               "image_size": 24, "patch_size": 8}  # fmt: skip
"""Two layers, so that training the last leaves one frozen; 24 px, so a 32 px image is resized and cropped."""
TINY_TEXT = {"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 2, "num_hidden_layers": 1,
             "max_position_embeddings": MAX_TOKENS, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1}  # fmt: skip
"""77 positions, the length the loss pads to; the pooled token is the first end-of-text one, as in CLIP."""


class PickScoreDiscriminator:
    """PickScore's CLIP and processor; the vision encoder layers from ``tune_layer`` on train, the rest is frozen.

    Images are (B, 3, H, W) in [0, 1]; ``prompts[i]`` is image ``i``'s.
    """

    def __init__(self, model: Any, processor: Any, tune_layer: int = -1, device: str | torch.device = "cpu") -> None:
        self.model = model.eval().requires_grad_(False).to(device)
        self.processor, self.device = processor, device
        self.trained: nn.ModuleList = model.vision_model.encoder.layers[tune_layer:]
        if len(self.trained) == 0:
            raise ValueError(f"discriminator_tune_layer={tune_layer} leaves none of the "
                             f"{len(model.vision_model.encoder.layers)} vision layers to train")  # fmt: skip
        self.trained.requires_grad_(True)

    def pixels(self, images: torch.Tensor) -> torch.Tensor:
        """The processor's ``pixel_values`` of (B, 3, H, W) uint8 images."""
        from PIL import Image

        pil = [Image.fromarray(image) for image in images.permute(0, 2, 3, 1).cpu().numpy()]
        return self.processor(images=pil, return_tensors="pt")["pixel_values"].to(self.device)

    def image_features(self, pixels: torch.Tensor) -> torch.Tensor:
        features = self.model.get_image_features(pixel_values=pixels).pooler_output
        return features / features.norm(dim=-1, keepdim=True)

    def text_features(self, **tokens: torch.Tensor) -> torch.Tensor:
        features = self.model.get_text_features(**{k: v.to(self.device) for k, v in tokens.items()}).pooler_output
        return features / features.norm(dim=-1, keepdim=True)

    @torch.no_grad()
    def score(self, images: torch.Tensor, prompts: Sequence[str]) -> torch.Tensor:
        """(B,) rewards on the CPU: ``exp(logit_scale) * cos / 26`` of the images rounded to uint8."""
        pixels = self.pixels((images * 255).round().clamp(0, 255).to(torch.uint8))
        tokens = self.processor(text=list(prompts), padding=True, truncation=True, max_length=MAX_TOKENS,
                                return_tensors="pt")  # fmt: skip
        cosine = (self.text_features(**tokens) * self.image_features(pixels)).sum(-1)
        return (self.model.logit_scale.exp() * cosine / 26).float().cpu()

    def loss(self, real: torch.Tensor, fake: torch.Tensor, prompts: Sequence[str]) -> dict[str, torch.Tensor]:
        """PickScore's pairwise loss, ``real[i]`` preferred to ``fake[i]`` for ``prompts[i]``, with the mean
        logits of each side and how often the reference wins (what the step logs)."""
        tokens = self.processor.tokenizer(list(prompts), padding="max_length", truncation=True, max_length=MAX_TOKENS,
                                          return_tensors="pt")  # fmt: skip
        text = self.text_features(input_ids=tokens["input_ids"])
        image = self.image_features(torch.cat([self.pixels(truncated(real)), self.pixels(truncated(fake))]))
        # every text against every image, then each text's own pair, as their calc_loss: the same products, so
        # the step is theirs even where a gradient is rounding noise (a key bias's), which Adam scales up to lr
        ref, gen = (self.model.logit_scale.exp() * text @ image.T).chunk(2, dim=-1)
        logits = torch.stack([ref.diagonal(), gen.diagonal()], dim=-1)
        loss = nn.functional.cross_entropy(logits, torch.zeros(len(logits), dtype=torch.long, device=logits.device))
        return {"loss": loss, "real": logits[:, 0].mean(), "fake": logits[:, 1].mean(),
                "accuracy": (logits[:, 0] > logits[:, 1]).float().mean()}  # fmt: skip


def truncated(images: torch.Tensor) -> torch.Tensor:
    """uint8 images as the authors hand them to the discriminator step: mapped to [-1, 1] (their lines 1006-1007),
    back to [0, 1] and scaled, then cast, which truncates (``tensor_to_pil_list``). The float round trip is kept:
    on reference pixels, which are exact multiples of 1/255, it decides whether a level survives the truncation."""
    return (((images.float() - 0.5) * 2.0 * 0.5 + 0.5).clamp(0, 1) * 255).to(torch.uint8)


def references_score_below(reference_mean: float, generated_mean: float) -> bool:
    """Whether a round steps the discriminator: ``reference_rewards_mean < rewards_mean``, both over every process
    (``train_sd3_fast_pickscore.py:1008-1025``). A tie is a generator round."""
    return reference_mean < generated_mean


class PickScoreReward(AdversarialReward):
    """The PickScore discriminator as the run's reward; each round's references are drawn and scored in
    :meth:`plan` and are the positives of that round's step."""

    state_name = "layers"

    def __init__(self, references: References, lr: float, generator: torch.Generator,
                 discriminator: PickScoreDiscriminator) -> None:  # fmt: skip
        super().__init__(references, lr, generator, discriminator)
        self.drawn: torch.Tensor | None = None

    def trained(self) -> nn.Module:
        return self.discriminator.trained

    def scores(self, images: torch.Tensor, samples: Sequence[Any]) -> dict[str, torch.Tensor]:
        prompts = [str(require(target_of(s), "prompt", self.name)) for s in samples]
        return {"reward": self.discriminator.score(images, prompts)}

    def pair_loss(self, real: torch.Tensor, fake: torch.Tensor, prompts: Sequence[str]) -> dict[str, torch.Tensor]:
        return self.discriminator.loss(real, fake, prompts)

    def positives(self, prompts: Sequence[str]) -> torch.Tensor:
        """The references :meth:`plan` drew and scored for this round's images, once."""
        drawn, self.drawn = self.drawn, None
        if drawn is None:
            raise RuntimeError("the PickScore discriminator steps on the references its plan() drew and scored for "
                               "these images; call plan() first")  # fmt: skip
        return drawn

    def plan(self, round_index: int, reward: float, prompts: Sequence[str]) -> tuple[bool, dict[str, float]]:
        """Draw one reference of each image's prompt, score them, and step when their mean over every process is
        below the generations' (``reward``); the references' mean is logged either way."""
        self.drawn = self.references.draw(prompts, self.generator)
        reference = float(gather_all(self.discriminator.score(self.drawn, prompts)).mean())
        return references_score_below(reference, reward), {"disc/reference_reward": reference}


def load_pickscore(name: str, tune_layer: int = -1, seed: int = 0,
                   device: str | torch.device = "cpu") -> PickScoreDiscriminator:  # fmt: skip
    """PickScore's CLIP (a directory or Hub id, safetensors only) with :data:`PROCESSOR`'s processor, or
    ``tiny:clip``: a random CLIP from :data:`TINY_VISION` / :data:`TINY_TEXT` (weights drawn from ``seed``
    without touching torch's global RNG), a tokenizer of single characters and a 24 px processor."""
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor, CLIPTokenizer

    if name == DISCRIMINATORS["pickscore"].tiny:
        from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

        characters = list(TINY_CHARACTERS) + [c + "</w>" for c in TINY_CHARACTERS]
        tokenizer = CLIPTokenizer(vocab={"<|startoftext|>": 0, "<|endoftext|>": 1,
                                         **{c: i + 2 for i, c in enumerate(characters)}}, merges=[])  # fmt: skip
        size = TINY_VISION["image_size"]
        images = CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
        config = CLIPConfig(text_config={**TINY_TEXT, "vocab_size": len(tokenizer)}, vision_config=TINY_VISION,
                            projection_dim=16)  # fmt: skip
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = CLIPModel(config)
        processor = CLIPProcessor(image_processor=images, tokenizer=tokenizer)
    else:
        model = CLIPModel.from_pretrained(weights_path(name), use_safetensors=True)
        processor = CLIPProcessor.from_pretrained(weights_path(PROCESSOR), backend="pil")
    return PickScoreDiscriminator(model, processor, tune_layer, device)
