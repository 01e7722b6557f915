"""GenEval's own detector on transformers: OpenMMLab's Mask2Former checkpoint as a transformers Mask2Former.

GenEval scores with mmdetection's ``mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco`` weights
(djghosh13/geneval@af4902f:evaluation/download_models.sh:8, loaded by ``init_detector`` in
evaluation/evaluate_images.py:59-64, mmdet 2.x and mmcv-full 1.7.1 per README.md:46-47 and environment.yml:151).
The Hub's ``facebook/mask2former-swin-small-coco-instance`` is another training of the same architecture, so
the zoo reads the OpenMMLab file itself when a user has it: :func:`convert_state_dict` renames mmdetection's
parameters to transformers' and :func:`load_mmdet_mask2former` builds the model and processor around them.

Where the names come from (mmdetection v2.28.2, the 2.x branch GenEval checks out; mmcv v1.7.1 = commit 7a13f99):

* Swin backbone (``backbone.``): ``mmdet/models/backbones/swin.py:60-73`` (``w_msa.relative_position_bias_table``,
  ``qkv``, ``proj``), ``:334-348`` (``norm1``, ``attn``, ``norm2``, ``ffn``), ``:434, 453`` (``blocks``,
  ``downsample``), ``:579, 602, 639-640`` (``patch_embed``, ``stages``, ``norm{i}``); ``PatchEmbed.projection`` /
  ``norm`` and ``PatchMerging.sampler`` (``nn.Unfold``) / ``norm`` / ``reduction`` in
  ``mmdet/models/utils/transformer.py:198-209, 325-338``; mmcv's ``FFN.layers`` = ``[Sequential(Linear, act,
  Dropout), Linear, Dropout]`` (open-mmlab/mmcv@7a13f99:mmcv/cnn/bricks/transformer.py:605-612).
* Pixel decoder (``panoptic_head.pixel_decoder.``): ``mmdet/models/plugins/msdeformattn_pixel_decoder.py:85-129``
  (``input_convs`` low to high resolution, ``encoder``, ``level_encoding``, ``lateral_convs``/``output_convs`` built
  high to low index, ``mask_feature``); ``ConvModule`` holds ``conv`` and its GroupNorm as ``gn``
  (mmcv@7a13f99:mmcv/cnn/bricks/conv_module.py:117, 148-150; norm.py:55-56, 107); each encoder layer is a
  ``BaseTransformerLayer`` with ``attentions``/``ffns``/``norms`` (transformer.py:722-759) over
  ``('self_attn', 'norm', 'ffn', 'norm')`` and mmcv's ``MultiScaleDeformableAttention`` (``sampling_offsets``,
  ``attention_weights``, ``value_proj``, ``output_proj``: mmcv/ops/multi_scale_deform_attn.py:228-233).
* Transformer decoder and head (``panoptic_head.``): ``mmdet/models/dense_heads/mask2former_head.py:93-120``
  (``query_embed`` is the query position, ``query_feat`` its content, ``level_embed``, ``cls_embed``,
  ``mask_embed`` = Linear, ReLU, Linear, ReLU, Linear), ``:329`` (``transformer_decoder.post_norm`` before every
  prediction); decoder layers run ``('cross_attn', 'norm', 'self_attn', 'norm', 'ffn', 'norm')``
  (``configs/mask2former/mask2former_r50_lsj_8x2_50e_coco-panoptic.py:88-89``), so ``attentions.0`` is the masked
  cross-attention and ``attentions.1`` the self-attention, each mmcv's ``MultiheadAttention`` around an
  ``nn.MultiheadAttention`` named ``attn`` (transformer.py:452).

Two tensors change layout, not only name: ``qkv`` / ``in_proj`` weights split into transformers' separate q, k, v
projections (``qkv(x).reshape(B, N, 3, heads, C // heads)``: swin.py:87-88), and the patch-merging ``reduction`` and
``norm`` go from ``nn.Unfold``'s channel order (``c * 4 + 2 * row + col``) back to the concatenation order of the
original Swin that transformers keeps (``[row 0 col 0, row 1 col 0, row 0 col 1, row 1 col 1]`` blocks of C), the
inverse of mmdetection's own ``swin_converter`` (mmdet/models/utils/ckpt_convert.py:89-100).
``relative_position_index`` buffers are dropped: transformers builds the same index. Not in the checkpoint and left
at their initial values: ``swin.layernorm`` (transformers' Swin pools through it; the backbone's outputs do not use
it) and the loss's ``criterion.empty_weight``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from domains.image.geneval import CLASSES

#: The file GenEval downloads (djghosh13/geneval@af4902f:evaluation/download_models.sh:8).
GENEVAL_CHECKPOINT = "mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco_20220504_001756-743b7d99.pth"
GENEVAL_CHECKPOINT_URL = ("https://download.openmmlab.com/mmdetection/v2.0/mask2former/"
                          f"mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco/{GENEVAL_CHECKPOINT}")  # fmt: skip

_BACKBONE = "model.pixel_level_module.encoder."
_SWIN = _BACKBONE + "swin."
_PIXEL = "model.pixel_level_module.decoder."
_MODULE = "model.transformer_module."
_DEFORMABLE = ("sampling_offsets", "attention_weights", "value_proj", "output_proj")
#: Keys of a transformers model that no mmdetection tensor fills (see the module docstring).
UNFILLED = frozenset({_SWIN + "layernorm.weight", _SWIN + "layernorm.bias", "criterion.empty_weight"})


def mask2former_config(*, depths: tuple[int, ...] = (2, 2, 18, 2), embed_dim: int = 96,
                       num_heads: tuple[int, ...] = (3, 6, 12, 24), window_size: int = 7, mlp_ratio: float = 4.0,
                       hidden_dim: int = 256, num_queries: int = 100, attention_heads: int = 8,
                       encoder_layers: int = 6, encoder_feedforward_dim: int = 1024, decoder_layers: int = 9,
                       dim_feedforward: int = 2048, labels: tuple[str, ...] = CLASSES) -> Any:  # fmt: skip
    """A transformers ``Mask2FormerConfig`` of mmdetection's instance model; the defaults are GenEval's Swin-S.

    Values: mmdetection v2.28.2 ``configs/mask2former/mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco.py:4``
    (depths) over ``mask2former_swin-t-p4-w7-224_lsj_8x2_50e_coco.py:8-17`` (96 channels, heads 3/6/12/24, window
    7, MLP ratio 4) and ``mask2former_r50_lsj_8x2_50e_coco-panoptic.py:23-89`` (256 channels, 100 queries, 6
    deformable encoder layers of 8 heads with FFN 1024, 9 decoder layers of 8 heads with FFN 2048) with 80 things
    and no stuff (``mask2former_r50_lsj_8x2_50e_coco.py:2-3``). ``decoder_layers`` counts mmdetection's layers;
    transformers' field counts one more (its first prediction from the bare queries, which mmdetection makes too).
    Labels are GenEval's names in COCO's order, the order its ``evaluate_image`` reads classes by index
    (evaluate_images.py:70-71, 231).
    """
    from transformers import Mask2FormerConfig, SwinConfig

    backbone = SwinConfig(embed_dim=embed_dim, depths=list(depths), num_heads=list(num_heads), window_size=window_size,
                          mlp_ratio=mlp_ratio, qkv_bias=True, drop_path_rate=0.0,
                          out_features=[f"stage{i + 1}" for i in range(len(depths))])  # fmt: skip
    return Mask2FormerConfig(backbone_config=backbone, feature_size=hidden_dim, mask_feature_size=hidden_dim,
                             hidden_dim=hidden_dim, num_queries=num_queries, num_attention_heads=attention_heads,
                             encoder_layers=encoder_layers, encoder_feedforward_dim=encoder_feedforward_dim,
                             decoder_layers=decoder_layers + 1, dim_feedforward=dim_feedforward,
                             id2label=dict(enumerate(labels)),
                             label2id={n: i for i, n in enumerate(labels)})  # fmt: skip


def image_processor() -> Any:
    """transformers' Mask2Former processor set to mmdetection's test pipeline.

    ``mask2former_r50_lsj_8x2_50e_coco.py:17-18, 43-56``: resize keeping the ratio into 1333 x 800, pad to a
    multiple of 32, normalise with mean (123.675, 116.28, 103.53) / std (58.395, 57.12, 57.375) on 0-255 RGB
    (= ImageNet's on 0-1). zoo: mmdetection pads with 128 before normalising and resizes with OpenCV; transformers
    pads the normalised image with 0 and resizes with torchvision, so padded borders and edge pixels differ slightly.
    """
    from transformers import Mask2FormerImageProcessor

    return Mask2FormerImageProcessor(size={"shortest_edge": 800, "longest_edge": 1333}, size_divisor=32,
                                     image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])  # fmt: skip


def _unfold_to_concat(tensor: torch.Tensor) -> torch.Tensor:
    """A patch-merging ``reduction`` weight (out, 4C) or ``norm`` vector (4C) from ``nn.Unfold`` order to Swin's."""
    flat = tensor.dim() == 1
    weight = tensor[None] if flat else tensor
    out, channels = weight.shape[0], weight.shape[1] // 4
    blocks = weight.reshape(out, channels, 4).transpose(1, 2)[:, [0, 2, 1, 3], :]  # unfold block k = 2*row + col
    merged = blocks.reshape(out, 4 * channels)
    return merged[0] if flat else merged


_QKV = "{qkv}"  # a target holding this is written three times, q, k and v, from one fused (3C, ...) tensor
_W = r"(weight|bias)"
_BLOCK = r"backbone\.stages\.(\d+)\.blocks\.(\d+)\."
_SWIN_BLOCK = _SWIN + r"encoder.layers.\1.blocks.\2."
_ENCODER = r"panoptic_head\.pixel_decoder\.encoder\.layers\.(\d+)\."
_DECODER = r"panoptic_head\.transformer_decoder\.layers\.(\d+)\."
_CONV_OR_GN = {"conv": "0", "gn": "1"}  # ConvModule's conv and GroupNorm -> transformers' Sequential(Conv2d, GroupNorm)

#: mmdetection key pattern -> transformers key (``re`` expansion, or a function of the match and the number of FPN
#: levels), and the layout change, if any.
Target = str | Callable[[re.Match[str], int], str]
RULES: tuple[tuple[str, Target, Callable[[torch.Tensor], torch.Tensor] | None], ...] = (
    (r"backbone\.patch_embed\.projection\." + _W, _SWIN + r"embeddings.patch_embeddings.projection.\1", None),
    (r"backbone\.patch_embed\.norm\." + _W, _SWIN + r"embeddings.norm.\1", None),
    (r"backbone\.norm(\d+)\." + _W, lambda m, _: f"{_BACKBONE}hidden_states_norms.stage{int(m[1]) + 1}.{m[2]}", None),
    (r"backbone\.stages\.(\d+)\.downsample\.(reduction|norm)\." + _W, _SWIN + r"encoder.layers.\1.downsample.\2.\3",
     _unfold_to_concat),
    (_BLOCK + r"norm1\." + _W, _SWIN_BLOCK + r"layernorm_before.\3", None),
    (_BLOCK + r"norm2\." + _W, _SWIN_BLOCK + r"layernorm_after.\3", None),
    (_BLOCK + r"attn\.w_msa\.relative_position_bias_table",
     _SWIN_BLOCK + "attention.relative_position_bias.relative_position_bias_table", None),
    (_BLOCK + r"attn\.w_msa\.qkv\." + _W, _SWIN_BLOCK + f"attention.{_QKV}_proj." + r"\3", None),
    (_BLOCK + r"attn\.w_msa\.proj\." + _W, _SWIN_BLOCK + r"attention.o_proj.\3", None),
    (_BLOCK + r"ffn\.layers\.0\.0\." + _W, _SWIN_BLOCK + r"mlp.fc1.\3", None),
    (_BLOCK + r"ffn\.layers\.1\." + _W, _SWIN_BLOCK + r"mlp.fc2.\3", None),
    (r"panoptic_head\.pixel_decoder\.input_convs\.(\d+)\.(conv|gn)\." + _W,
     lambda m, _: f"{_PIXEL}input_projections.{m[1]}.{_CONV_OR_GN[m[2]]}.{m[3]}", None),
    # mmdetection appends the FPN convs from the lowest resolution up; transformers numbers them from the highest
    # (adapter_1 / layer_1 at stride 4)
    (r"panoptic_head\.pixel_decoder\.(lateral|output)_convs\.(\d+)\.(conv|gn)\." + _W,
     lambda m, levels: (f"{_PIXEL}{'adapter' if m[1] == 'lateral' else 'layer'}_{levels - int(m[2])}."
                        f"{_CONV_OR_GN[m[3]]}.{m[4]}"), None),  # fmt: skip
    (r"panoptic_head\.pixel_decoder\.level_encoding\.weight", _PIXEL + "level_embed", None),
    (r"panoptic_head\.pixel_decoder\.mask_feature\." + _W, _PIXEL + r"mask_projection.\1", None),
    (_ENCODER + r"attentions\.0\.(" + "|".join(_DEFORMABLE) + r")\." + _W,
     _PIXEL + r"encoder.layers.\1.self_attn.\2.\3", None),
    (_ENCODER + r"norms\.0\." + _W, _PIXEL + r"encoder.layers.\1.self_attn_layer_norm.\2", None),
    (_ENCODER + r"norms\.1\." + _W, _PIXEL + r"encoder.layers.\1.final_layer_norm.\2", None),
    (_ENCODER + r"ffns\.0\.layers\.0\.0\." + _W, _PIXEL + r"encoder.layers.\1.fc1.\2", None),
    (_ENCODER + r"ffns\.0\.layers\.1\." + _W, _PIXEL + r"encoder.layers.\1.fc2.\2", None),
    (_DECODER + r"attentions\.0\.attn\.(in_proj_weight|in_proj_bias|out_proj\.weight|out_proj\.bias)",
     _MODULE + r"decoder.layers.\1.cross_attn.\2", None),
    (_DECODER + r"attentions\.1\.attn\.in_proj_" + _W, _MODULE + f"decoder.layers.\\1.self_attn.{_QKV}_proj." + r"\2",
     None),
    (_DECODER + r"attentions\.1\.attn\.out_proj\." + _W, _MODULE + r"decoder.layers.\1.self_attn.out_proj.\2", None),
    (_DECODER + r"norms\.0\." + _W, _MODULE + r"decoder.layers.\1.cross_attn_layer_norm.\2", None),
    (_DECODER + r"norms\.1\." + _W, _MODULE + r"decoder.layers.\1.self_attn_layer_norm.\2", None),
    (_DECODER + r"norms\.2\." + _W, _MODULE + r"decoder.layers.\1.final_layer_norm.\2", None),
    (_DECODER + r"ffns\.0\.layers\.0\.0\." + _W, _MODULE + r"decoder.layers.\1.fc1.\2", None),
    (_DECODER + r"ffns\.0\.layers\.1\." + _W, _MODULE + r"decoder.layers.\1.fc2.\2", None),
    (r"panoptic_head\.transformer_decoder\.post_norm\." + _W, _MODULE + r"decoder.layernorm.\1", None),
    (r"panoptic_head\.query_embed\.weight", _MODULE + "queries_embedder.weight", None),
    (r"panoptic_head\.query_feat\.weight", _MODULE + "queries_features.weight", None),
    (r"panoptic_head\.level_embed\.weight", _MODULE + "level_embed.weight", None),
    (r"panoptic_head\.cls_embed\." + _W, r"class_predictor.\1", None),
    (r"panoptic_head\.mask_embed\.([024])\." + _W,
     lambda m, _: f"{_MODULE}decoder.mask_predictor.mask_embedder.{int(m[1]) // 2}.0.{m[2]}", None),
)
_COMPILED = tuple((re.compile(pattern), target, transform) for pattern, target, transform in RULES)


def _target(key: str, levels: int) -> tuple[str, Callable[[torch.Tensor], torch.Tensor] | None] | None:
    for pattern, target, transform in _COMPILED:
        if match := pattern.fullmatch(key):
            return (match.expand(target) if isinstance(target, str) else target(match, levels)), transform
    return None


def convert_state_dict(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """mmdetection Mask2Former parameter names and layouts -> ``Mask2FormerForUniversalSegmentation``'s.

    Raises:
        ValueError: a key that is not part of mmdetection's Swin Mask2Former (another model's checkpoint), named.
    """
    levels = len({k.split(".")[3] for k in state if k.startswith("panoptic_head.pixel_decoder.lateral_convs.")})
    out: dict[str, torch.Tensor] = {}
    unknown = []
    for key, tensor in state.items():
        if key.endswith(".relative_position_index"):
            continue  # a buffer transformers builds itself, the same indices
        found = _target(key, levels)
        if found is None:
            unknown.append(key)
            continue
        target, transform = found
        tensor = transform(tensor) if transform else tensor
        if _QKV in target:
            out.update({target.replace(_QKV, name): part for name, part in zip("qkv", tensor.chunk(3, dim=0))})
        else:
            out[target] = tensor
    if unknown:
        raise ValueError(f"{len(unknown)} parameter(s) are not mmdetection's Swin Mask2Former, e.g. {unknown[0]!r}; "
                         "expected a checkpoint such as GenEval's " + GENEVAL_CHECKPOINT)  # fmt: skip
    return out


def read_mmdet_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict of an mmdetection ``.pth`` (``{"meta", "state_dict"}``), read tensors-only.

    The pickle is read once by :func:`zoo.safe_weights.convert_pickled` (torch's ``weights_only`` unpickler, nothing
    executed) into a cached safetensors copy, which is what is read here and on later calls.
    """
    from safetensors.torch import load_file

    from zoo.safe_weights import convert_pickled

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"no mmdetection checkpoint at {path}; GenEval's is {GENEVAL_CHECKPOINT_URL}")
    return load_file(str(convert_pickled(path)))


def load_mmdet_mask2former(path: str | Path, *, config: Any = None, device: str = "cpu") -> tuple[Any, Any]:
    """``(model, processor)``: the mmdetection checkpoint at ``path`` in transformers, in eval mode.

    Args:
        path: the ``.pth`` file (GenEval's :data:`GENEVAL_CHECKPOINT`).
        config: the transformers config it fills (default :func:`mask2former_config`, GenEval's Swin-S).
        device: where the model runs.
    """
    from transformers import Mask2FormerForUniversalSegmentation

    weights = convert_state_dict(read_mmdet_checkpoint(path))
    model = Mask2FormerForUniversalSegmentation(config or mask2former_config())
    try:
        missing, unexpected = model.load_state_dict(weights, strict=False)
    except RuntimeError as err:  # a shape mismatch: another size of Swin or head
        raise ValueError(f"{path} does not fit the Mask2Former config given (default: GenEval's Swin-S): "
                         f"{str(err).splitlines()[1].strip()}") from None  # fmt: skip
    missing = sorted(set(missing) - UNFILLED)
    if missing or unexpected:
        raise ValueError(f"{path} does not fill the Mask2Former model: missing {missing[:3]}, "
                         f"unexpected {unexpected[:3]}")
    return model.to(device).eval(), image_processor()
