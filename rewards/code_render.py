"""Rewards for model-written picture code: render it in the sandbox, compare with the reference image.

* :class:`RenderedCodeReward`: the MSRL group's released reward (DocTron-hub/VinciCoder@dbe1e94
  ``examples/reward_function/vincicoder.py:620-682``, ``compute_score``):
  ``0.9 * visual + 0.1 * format``, ``format`` = 1 when a fenced block of the language is found,
  ``visual`` = ``(cos(CLS_gen, CLS_ref) + 1) / 2`` of DINOv2 averaged over InternVL's tiles
  (L404-471), the generated image resized (bicubic) to the reference's size first. Failure
  semantics are the zoo's contract: well-formed code whose render fails, times out or crashes
  scores ``visual = 0`` (VinciCoder too: the job's own failure is the answer's, :mod:`rewards.base`);
  only a failure outside the job (a lost worker, a pool that cannot start) is ``score=None`` (masked).
* :class:`DinoEncoder`: the DINOv2 feature VinciCoder takes (the CLS token of the last layer's
  output *before* the final LayerNorm, from bfloat16-rounded pixels), from a local/cached
  checkpoint, or built from a tiny config with a seed for offline tests.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from rewards.base import RewardResult, check_lengths, require, target_of, text_of

logger = logging.getLogger(__name__)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: VinciCoder scores 0 a rendered image over this many pixels (vincicoder.py:384-393, 580). zoo: renders
#: have a fixed size here, so the bound guards the reference instead, as a refusal rather than a score.
MAX_PIXELS = 83_000_000


def tile_grid(width: int, height: int, max_tiles: int = 12, tile: int = 448) -> tuple[int, int]:
    """``(columns, rows)`` of InternVL's ``dynamic_preprocess`` as VinciCoder copies it
    (vincicoder.py:70-102): the grids of 1..max_tiles tiles in order of tile count, the closest
    aspect ratio wins, and on a tie the later (larger) grid wins when the image has more than half
    the grid's pixels, so a large square picture is cut 3x3 rather than kept whole."""
    aspect, area = width / height, width * height
    grids = sorted({(i, j) for n in range(1, max_tiles + 1) for i in range(1, n + 1) for j in range(1, n + 1)
                    if i * j <= max_tiles}, key=lambda g: g[0] * g[1])
    best, best_error = (1, 1), float("inf")
    for cols, rows in grids:
        error = abs(aspect - cols / rows)
        if error < best_error:
            best, best_error = (cols, rows), error
        elif error == best_error and area > 0.5 * tile * tile * cols * rows:
            best = (cols, rows)
    return best


def tiles(image: Any, tile: int = 448, max_tiles: int = 12) -> list[Any]:
    """The image resized to a grid of ``tile``-px squares, cut into them row by row, plus a
    thumbnail when there is more than one tile (InternVL's layout, vincicoder.py:104-121)."""
    from PIL import Image

    cols, rows = tile_grid(image.width, image.height, max_tiles, tile)
    resized = image.resize((cols * tile, rows * tile), Image.Resampling.BICUBIC)
    parts = [resized.crop((c * tile, r * tile, (c + 1) * tile, (r + 1) * tile)) for r in range(rows) for c in range(cols)]
    if len(parts) > 1:
        parts.append(image.resize((tile, tile), Image.Resampling.BICUBIC))
    return parts


def reference_image(value: Any) -> Any:
    """A sample's reference picture as an RGB PIL image: a PIL image, an array, a file path, or a
    ``data:image/...;base64,`` URI (how loaders keep targets JSON-serialisable for TRL's dataset)."""
    import base64
    import io

    from PIL import Image

    from rewards.image_similarity import to_array

    if isinstance(value, str) and value.startswith("data:image/"):
        value = Image.open(io.BytesIO(base64.b64decode(value.partition(",")[2])))
    return Image.fromarray(to_array(value))


class DinoEncoder:
    """DINOv2 CLS features exactly as VinciCoder reads them (vincicoder.py:42, 445-459).

    VinciCoder calls ``AutoModelForImageClassification.from_pretrained('facebook/dinov2-large')``
    (L42) with ``pixel_values=batch.to(torch.bfloat16), output_hidden_states=True`` and takes
    ``hidden_states[-1][:, 0]`` (L445-458). In transformers ``hidden_states[-1]`` is the last
    ``Dinov2Layer``'s output, before ``Dinov2Model.layernorm``; ``last_hidden_state`` is after it, a
    different vector with a different cosine. The weights load in float32 (transformers 4.54-4.57,
    VinciCoder's ``requirements.txt:18``, loads float32 when no dtype is given) and Dinov2's patch
    embedding casts the pixel values to the weights' dtype, so the network runs in float32 on pixels
    rounded to bfloat16: the zoo does the same, on any device. The classification head VinciCoder's
    call adds is random and unused, so the zoo loads the backbone (``Dinov2Model``) alone.

    Other DINOv2 users state their own feature: StarVector's DinoScore is the mean of all post-LayerNorm
    tokens of dinov2-base (joanrod/star-vector@0e083c1:starvector/metrics/compute_dino_score.py:38), and
    :class:`rewards.embedding_similarity.DinoSimilarity` takes timm's post-norm CLS.

    Args:
        model: a local directory or a cached Hub id (``facebook/dinov2-large``, VinciCoder's choice),
            or ``"tiny"`` for a random 2-layer model built from a config (tests, CPU smoke runs).
        tile: tile side in pixels (448 in VinciCoder; the tiny model uses 28).
        max_tiles: most tiles per image (12 in VinciCoder).
        seed: initialisation seed of the tiny model.
    """

    def __init__(self, model: str = "facebook/dinov2-large", tile: int = 448, max_tiles: int = 12,
                 seed: int = 0, device: str = "cpu") -> None:
        self.model, self.tile, self.max_tiles, self.seed, self.device = model, tile, max_tiles, seed, device
        self._net = None

    def _load(self) -> Any:
        import torch
        from transformers import Dinov2Config, Dinov2Model

        if self.model == "tiny":
            torch.manual_seed(self.seed)
            config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                  patch_size=14, image_size=self.tile)
            return Dinov2Model(config).eval().to(self.device)
        try:
            return Dinov2Model.from_pretrained(self.model, dtype=torch.float32).eval().to(self.device)
        except OSError as err:
            raise OSError(f"DINOv2 weights {self.model!r} are not in the local cache or folder ({err}); download them "
                          f"with `hf download {self.model}`, or pass encoder={{'model': 'tiny'}} for a smoke run") from err

    def cls(self, images: Sequence[Any]) -> Any:
        """``(N, D)`` pre-LayerNorm CLS features of PIL images: resized (bicubic) to the tile, scaled to
        [0, 1] and ImageNet-normalised in float32 (VinciCoder's ``build_transform``, L59-67), then
        rounded to bfloat16 (L445-446)."""
        import torch
        from PIL import Image

        if self._net is None:
            self._net = self._load()
        arrays = [np.asarray(im.convert("RGB").resize((self.tile, self.tile), Image.Resampling.BICUBIC),
                             dtype=np.float32) / 255.0 for im in images]
        batch = (torch.from_numpy(np.stack(arrays)) - torch.tensor(IMAGENET_MEAN)) / torch.tensor(IMAGENET_STD)
        pixels = batch.permute(0, 3, 1, 2).to(torch.bfloat16)
        with torch.inference_mode():
            hidden = self._net(pixel_values=pixels.to(self.device), output_hidden_states=True).hidden_states[-1]
        return hidden[:, 0].float()

    def similarity(self, generated: Any, reference: Any) -> float:
        """Mean over tiles of ``(cos + 1) / 2``; the generated image is resized to the reference's size first."""
        import torch
        from PIL import Image

        reference = reference.convert("RGB")
        if reference.width * reference.height > MAX_PIXELS:
            raise ValueError(f"reference image has {reference.width * reference.height} pixels, over {MAX_PIXELS}")
        generated = generated.convert("RGB").resize(reference.size, Image.Resampling.BICUBIC)
        a, b = tiles(generated, self.tile, self.max_tiles), tiles(reference, self.tile, self.max_tiles)
        feats = self.cls(a + b)
        cos = torch.nn.functional.cosine_similarity(feats[: len(a)], feats[len(a):], dim=-1)
        return float(((cos + 1) / 2).mean().clamp(0, 1))

    def __getstate__(self) -> dict:  # pickles without the weights (TRL may copy reward functions)
        return {**self.__dict__, "_net": None}


_FENCE = re.compile(r"```(?P<lang>[A-Za-z0-9_+-]*)[ \t]*\n?(?P<body>.*?)```", re.DOTALL)
_SVG = re.compile(r"<svg\b.*?</svg\s*>", re.DOTALL | re.IGNORECASE)
_LANGUAGE = {"matplotlib": ("python", "py", "python3"), "cadquery": ("python", "py", "python3"), "svg": ("svg", "xml")}


def extract_code(text: str, kind: str) -> str | None:
    """The last fenced block labelled for ``kind`` (VinciCoder's rule); for SVG a bare ``<svg>`` also counts."""
    labels = _LANGUAGE.get(kind, (kind,))
    blocks = [m.group("body").strip() for m in _FENCE.finditer(text) if m.group("lang").lower() in labels]
    if blocks and blocks[-1]:
        return blocks[-1]
    if kind.startswith("svg"):
        match = _SVG.search(text)
        return match.group(0) if match else None
    return None


class RenderedCodeReward:
    """``visual_weight * DINO-tiled similarity + (1 - visual_weight) * format`` of rendered code.

    Args:
        kind: render kind (``matplotlib``, ``svg``, ``svg-skia``).
        encoder: a :class:`DinoEncoder`, or keyword arguments for one (``{"model": "tiny", "tile": 28}``).
        visual_weight: 0.9 in VinciCoder.
        size: render size (VinciCoder renders SVG at 336x336; chart code at its own figure size).
        timeout: seconds per render.

    Target: ``sample.target["image"]`` (see :func:`reference_image`). Components: ``format``, ``visual``,
    ``executed`` (VinciCoder's ``execution = visual != 0``).
    """

    component_names = ("format", "visual", "executed")

    def __init__(self, kind: str = "matplotlib", encoder: DinoEncoder | dict | None = None, visual_weight: float = 0.9,
                 size: tuple[int, int] = (336, 336), timeout: float = 10.0, name: str | None = None) -> None:
        if not 0.0 <= visual_weight <= 1.0:
            raise ValueError(f"visual_weight must be in [0, 1], got {visual_weight}")
        self.kind, self.visual_weight, self.size, self.timeout = kind, float(visual_weight), tuple(size), timeout
        self.encoder = encoder if isinstance(encoder, DinoEncoder) else DinoEncoder(**(encoder or {}))
        self.name = name or f"{kind}-dino-render"

    def with_options(self, **kwargs: Any) -> RenderedCodeReward:
        """A copy with other settings (recipes' ``kwargs``)."""
        settings = {"kind": self.kind, "encoder": self.encoder, "visual_weight": self.visual_weight,
                    "size": self.size, "timeout": self.timeout, "name": self.name, **kwargs}
        return type(self)(**settings)

    def __call__(self, predictions: Sequence[Any], samples: Sequence[Any]) -> list[RewardResult]:
        from rewards.rendering import render_many

        check_lengths(predictions, samples, self.name)
        references = [reference_image(require(target_of(s), "image", self.name)) for s in samples]
        codes = [getattr(p, "code", None) or extract_code(text_of(p), self.kind) for p in predictions]
        todo = [i for i, c in enumerate(codes) if c]
        rendered = dict(zip(todo, render_many(self.kind, [codes[i] for i in todo], size=self.size,
                                              timeout=self.timeout), strict=True))
        out = []
        for i, reference in enumerate(references):
            fmt = 1.0 if codes[i] else 0.0
            result = rendered.get(i)
            if result is None:
                out.append(self._result(fmt, 0.0, f"no {self.kind} code block in the answer"))
            elif result.infra_failure:
                out.append(RewardResult(None, {"format": fmt, "visual": math.nan, "executed": math.nan},
                                        f"{result.status}: {result.error}"))
            elif not result.ok:
                out.append(self._result(fmt, 0.0, f"render failed: {result.error}"))
            else:
                out.append(self._result(fmt, self.encoder.similarity(result.image, reference), None))
        return out

    def _result(self, fmt: float, visual: float, error: str | None) -> RewardResult:
        score = self.visual_weight * visual + (1.0 - self.visual_weight) * fmt
        return RewardResult(score, {"format": fmt, "visual": visual, "executed": float(visual != 0.0)}, error)
