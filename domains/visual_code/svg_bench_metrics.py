"""SVG-Bench's image metrics as StarVector's own code computes them: ``L2`` (a mean squared error), ``SSIM``,
``DinoScore``.

Each function reads the two rasters StarVector's validator compares (the reference SVG and the answer, both drawn at
512x512 on white, :mod:`domains.visual_code.svg_bench`) as RGB ``uint8`` images and transcribes one metric class of
joanrod/star-vector@0e083c1 (``starvector/metrics/``). The names are the authors' keys of ``results_avg.json``
(``configs/metrics/im2svg.yaml:1-12`` turns on L2, LPIPS, SSIM, CountTokenLength and DinoScore for image-to-SVG), so
a number here compares with theirs. LPIPS and CountTokenLength are not computed: the authors' LPIPS is the ``lpips``
package's VGG network, whose backbone torchvision downloads at first use (``compute_LPIPS.py:13``), and their token
count needs the ``bigcode/starcoder2-7b`` tokenizer (``count_token_length.py:12``); :data:`NOT_COMPUTED` says so in
``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: The DINOv2 the authors score with: ``get_DINOv2_model("base")`` (compute_dino_score.py:14, 24).
DINO_MODEL = "facebook/dinov2-base"
#: ``BitImageProcessor`` settings of ``facebook/dinov2-base``'s ``preprocessor_config.json`` (not readable here, so
#: UNVERIFIED beyond public copies of it): bicubic resize of the short side to 256, centre crop 224, ImageNet
#: mean/std. Only the ``tiny`` smoke model is given these by hand; a real model loads its own file.
DINOV2_PREPROCESSING: dict[str, Any] = {
    "size": {"shortest_edge": 256}, "resample": 3, "crop_size": {"height": 224, "width": 224},
    "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
}
NOT_COMPUTED = {
    "LPIPS": "not computed: the authors' LPIPS is lpips.LPIPS(net='vgg') (joanrod/star-vector@0e083c1:"
             "starvector/metrics/compute_LPIPS.py:13), whose VGG16 weights torchvision downloads at first use; the "
             "zoo pins no LPIPS package",
    "CountTokenLength": "not computed: it needs the bigcode/starcoder2-7b tokenizer "
                        "(joanrod/star-vector@0e083c1:starvector/metrics/count_token_length.py:12)",
}
_SSIM_WINDOW = 11  # compute_SSIM.py:15, win_size=11


def l2(reference: np.ndarray, generated: np.ndarray) -> float:
    """The authors' ``L2``: a mean squared error, not a distance (joanrod/star-vector@0e083c1:
    starvector/metrics/compute_l2.py:17-34, ``masked_l2=False`` as ``metrics.py:33`` builds it).

    ``ToTensor`` maps ``uint8`` RGB to [0, 1] and ``F.mse_loss`` averages the squared difference over every channel
    and pixel. zoo: float64 where torch computes in float32 (a difference below 1e-6).
    """
    _same_shape(reference, generated)
    return float(np.mean((reference.astype(np.float64) / 255.0 - generated.astype(np.float64) / 255.0) ** 2))


def ssim(reference: np.ndarray, generated: np.ndarray) -> float:
    """The authors' ``SSIM``: scikit-image's ``structural_similarity(gt, gen, win_size=11, channel_axis=-1,
    sigma=1.5, full=True)`` on ``uint8`` RGB arrays (joanrod/star-vector@0e083c1:starvector/metrics/
    compute_SSIM.py:15-26), written out here as scikit-image computes it
    (scikit-image/scikit-image@v0.26.0:skimage/metrics/_structural_similarity.py:121-151, 161-275).

    ``gaussian_weights`` stays False, so ``sigma`` is unused: an 11x11 uniform window (``scipy.ndimage.
    uniform_filter``, reflected borders), sample covariances (``N / (N - 1)``), ``data_range`` 255 from the
    ``uint8`` type, K1 = 0.01, K2 = 0.03; the SSIM map is cropped by 5 pixels on each side and averaged per channel,
    then over channels. It differs from :func:`rewards.image_similarity.ssim` (Gaussian window, luminance only).
    The authors' branch for images that are not three-channel never runs: both rasters are RGB.
    """
    from scipy.ndimage import uniform_filter

    _same_shape(reference, generated)
    if reference.ndim != 3 or reference.shape[2] != 3 or min(reference.shape[:2]) < _SSIM_WINDOW:
        raise ValueError(f"SSIM takes two HxWx3 images of at least {_SSIM_WINDOW} px a side, got {reference.shape}")
    x, y = reference.astype(np.float64), generated.astype(np.float64)
    window = (_SSIM_WINDOW, _SSIM_WINDOW, 1)  # per channel, as skimage loops over channel_axis
    mean = lambda image: uniform_filter(image, size=window)
    ux, uy = mean(x), mean(y)
    cov_norm = _SSIM_WINDOW**2 / (_SSIM_WINDOW**2 - 1)
    vx, vy = cov_norm * (mean(x * x) - ux * ux), cov_norm * (mean(y * y) - uy * uy)
    vxy = cov_norm * (mean(x * y) - ux * uy)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    smap = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux**2 + uy**2 + c1) * (vx + vy + c2))
    pad = (_SSIM_WINDOW - 1) // 2
    return float(smap[pad:-pad, pad:-pad].mean(axis=(0, 1), dtype=np.float64).mean())


def _same_shape(reference: np.ndarray, generated: np.ndarray) -> None:
    if reference.shape != generated.shape:
        raise ValueError(f"the two rasters differ in shape: {reference.shape} vs {generated.shape}")


class DinoScore:
    """The authors' ``DinoScore`` (joanrod/star-vector@0e083c1:starvector/metrics/compute_dino_score.py:31-55).

    Each image goes through the model's own image processor and ``Dinov2Model``; its feature is the mean of
    ``last_hidden_state`` over every token (the CLS and register-free patch tokens, after the final LayerNorm,
    L37-38); the score is ``(cos(feature_gt, feature_gen) + 1) / 2`` (L51-53). Images are embedded in batches,
    which changes nothing but float rounding: the processor treats each image alone and there is no padding.

    Args:
        model: a ``transformers`` ``Dinov2Model`` (any size; the authors' is :data:`DINO_MODEL`).
        processor: its image processor, called as ``processor(images=[...], return_tensors="pt")``.
        device: where the model runs.
        batch_size: images per forward pass.
    """

    def __init__(self, model: Any, processor: Any, device: str = "cpu", batch_size: int = 16) -> None:
        self.model, self.processor = model.eval().to(device), processor
        self.device, self.batch_size = device, batch_size

    def features(self, images: Sequence[Any]) -> Any:
        """``(N, D)`` mean-token features of PIL images."""
        import torch

        chunks = []
        for start in range(0, len(images), self.batch_size):
            inputs = self.processor(images=list(images[start:start + self.batch_size]), return_tensors="pt")
            with torch.inference_mode():
                hidden = self.model(pixel_values=inputs["pixel_values"].to(self.device)).last_hidden_state
            chunks.append(hidden.mean(dim=1).float().cpu())
        return torch.cat(chunks)

    def scores(self, references: Sequence[Any], generated: Sequence[Any]) -> list[float]:
        """One ``(cos + 1) / 2`` per pair of PIL images, in order."""
        import torch

        if len(references) != len(generated):
            raise ValueError(f"{len(references)} references for {len(generated)} generated images")
        if not references:
            return []
        cos = torch.nn.functional.cosine_similarity(self.features(references), self.features(generated), dim=1)
        return [float(v) for v in (cos + 1) / 2]


def load_dino_score(name: str = DINO_MODEL, device: str = "cpu", seed: int = 0) -> DinoScore:
    """The authors' scorer with ``name``'s weights and image processor from a local folder or the Hugging Face cache,
    or ``"tiny"``: a random two-layer DINOv2 with dinov2-base's preprocessing, for smoke runs only (its scores mean
    nothing).

    The processor is the PIL one (``backend="pil"``): transformers 4.49, the authors' pin (joanrod/star-vector@0e083c1:
    pyproject.toml:17), returns the slow, PIL-based ``BitImageProcessor`` for DINOv2. The weights load in float32, as
    ``AutoModel.from_pretrained`` does there (compute_dino_score.py:29).
    """
    import torch
    from transformers import AutoImageProcessor, Dinov2Config, Dinov2Model
    from transformers.models.bit.image_processing_pil_bit import BitImageProcessorPil

    if name == "tiny":
        torch.manual_seed(seed)
        config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                              patch_size=14, image_size=224)
        return DinoScore(Dinov2Model(config), BitImageProcessorPil(**DINOV2_PREPROCESSING), device)
    try:
        model = Dinov2Model.from_pretrained(name, dtype=torch.float32)
        processor = AutoImageProcessor.from_pretrained(name, backend="pil")
    except OSError as err:
        raise OSError(f"DINOv2 weights {name!r} are neither a local folder nor in the Hugging Face cache; download "
                      f"them with `hf download {name}`, or pass --option dino_model=tiny for a smoke run") from err
    return DinoScore(model, processor, device)
