"""GenEval's detector checkpoint (mmdetection's Mask2Former) converted to transformers: a random state dict in
mmdetection's layout, its key list written here from mmdetection v2.28.2 and mmcv v1.7.1 (not from the converter),
filled into a tiny transformers Mask2Former."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from domains.image import mmdet_mask2former
from domains.image.mmdet_mask2former import UNFILLED, convert_state_dict, mask2former_config

TINY = {"depths": (2, 1, 2, 1), "embed_dim": 16, "num_heads": (1, 2, 2, 4), "window_size": 7, "hidden_dim": 32,
        "num_queries": 5, "attention_heads": 2, "encoder_layers": 1, "encoder_feedforward_dim": 48,
        "decoder_layers": 2, "dim_feedforward": 40}  # fmt: skip


def mmdet_layout(depths, embed_dim, num_heads, window_size, hidden_dim, num_queries, attention_heads, encoder_layers,
                 encoder_feedforward_dim, decoder_layers, dim_feedforward, classes=80) -> dict[str, torch.Tensor]:  # fmt: skip
    """Random tensors under the names and shapes mmdetection's ``Mask2Former`` state dict holds."""
    shapes: dict[str, tuple[int, ...]] = {}

    def linear(name, out, inp, bias=True):
        shapes[f"{name}.weight"] = (out, inp)
        if bias:
            shapes[f"{name}.bias"] = (out,)

    def norm(name, channels):
        shapes[f"{name}.weight"] = shapes[f"{name}.bias"] = (channels,)

    def conv_module(name, out, inp, kernel, bias):  # mmcv ConvModule: conv + GroupNorm named gn (conv_module.py:117-150)
        shapes[f"{name}.conv.weight"] = (out, inp, kernel, kernel)
        if bias:
            shapes[f"{name}.conv.bias"] = (out,)
        norm(f"{name}.gn", out)

    def ffn(name, channels, hidden):  # mmcv FFN.layers: Sequential(Linear, act, Dropout), Linear (transformer.py:605-612)
        linear(f"{name}.layers.0.0", hidden, channels)
        linear(f"{name}.layers.1", channels, hidden)

    # backbone: mmdet/models/backbones/swin.py:579-640, utils/transformer.py:198-209 (PatchEmbed), 325-338 (PatchMerging)
    shapes["backbone.patch_embed.projection.weight"], shapes["backbone.patch_embed.projection.bias"] = (embed_dim, 3, 4, 4), (embed_dim,)
    norm("backbone.patch_embed.norm", embed_dim)
    dims = [embed_dim * 2**i for i in range(len(depths))]
    for i, (depth, heads, dim) in enumerate(zip(depths, num_heads, dims)):
        for j in range(depth):  # SwinBlock: norm1, attn (ShiftWindowMSA.w_msa = WindowMSA), norm2, ffn (swin.py:60-73, 168, 334-348)
            block = f"backbone.stages.{i}.blocks.{j}"
            norm(f"{block}.norm1", dim)
            shapes[f"{block}.attn.w_msa.relative_position_bias_table"] = ((2 * window_size - 1) ** 2, heads)
            shapes[f"{block}.attn.w_msa.relative_position_index"] = (window_size**2, window_size**2)
            linear(f"{block}.attn.w_msa.qkv", 3 * dim, dim)
            linear(f"{block}.attn.w_msa.proj", dim, dim)
            norm(f"{block}.norm2", dim)
            ffn(f"{block}.ffn", dim, 4 * dim)
        if i < len(depths) - 1:
            norm(f"backbone.stages.{i}.downsample.norm", 4 * dim)
            linear(f"backbone.stages.{i}.downsample.reduction", 2 * dim, 4 * dim, bias=False)
        norm(f"backbone.norm{i}", dim)
    # pixel decoder: mmdet/models/plugins/msdeformattn_pixel_decoder.py:80-130
    pixel = "panoptic_head.pixel_decoder"
    for k, channels in enumerate(dims[::-1][:3]):  # input_convs from the lowest resolution
        conv_module(f"{pixel}.input_convs.{k}", hidden_dim, channels, 1, bias=True)
    for layer in range(encoder_layers):  # BaseTransformerLayer ('self_attn', 'norm', 'ffn', 'norm')
        base = f"{pixel}.encoder.layers.{layer}"
        linear(f"{base}.attentions.0.sampling_offsets", attention_heads * 3 * 4 * 2, hidden_dim)
        linear(f"{base}.attentions.0.attention_weights", attention_heads * 3 * 4, hidden_dim)
        linear(f"{base}.attentions.0.value_proj", hidden_dim, hidden_dim)
        linear(f"{base}.attentions.0.output_proj", hidden_dim, hidden_dim)
        ffn(f"{base}.ffns.0", hidden_dim, encoder_feedforward_dim)
        norm(f"{base}.norms.0", hidden_dim)
        norm(f"{base}.norms.1", hidden_dim)
    shapes[f"{pixel}.level_encoding.weight"] = (3, hidden_dim)
    conv_module(f"{pixel}.lateral_convs.0", hidden_dim, dims[0], 1, bias=False)  # with GN: no conv bias (L105)
    conv_module(f"{pixel}.output_convs.0", hidden_dim, hidden_dim, 3, bias=False)
    shapes[f"{pixel}.mask_feature.weight"], shapes[f"{pixel}.mask_feature.bias"] = (hidden_dim, hidden_dim, 1, 1), (hidden_dim,)
    # transformer decoder and head: mmdet/models/dense_heads/mask2former_head.py:93-120, mmcv MultiheadAttention.attn
    for layer in range(decoder_layers):  # ('cross_attn', 'norm', 'self_attn', 'norm', 'ffn', 'norm')
        base = f"panoptic_head.transformer_decoder.layers.{layer}"
        for a in (0, 1):
            linear(f"{base}.attentions.{a}.attn.out_proj", hidden_dim, hidden_dim)
            shapes[f"{base}.attentions.{a}.attn.in_proj_weight"] = (3 * hidden_dim, hidden_dim)
            shapes[f"{base}.attentions.{a}.attn.in_proj_bias"] = (3 * hidden_dim,)
        ffn(f"{base}.ffns.0", hidden_dim, dim_feedforward)
        for n in range(3):
            norm(f"{base}.norms.{n}", hidden_dim)
    norm("panoptic_head.transformer_decoder.post_norm", hidden_dim)
    shapes["panoptic_head.query_embed.weight"] = shapes["panoptic_head.query_feat.weight"] = (num_queries, hidden_dim)
    shapes["panoptic_head.level_embed.weight"] = (3, hidden_dim)
    linear("panoptic_head.cls_embed", classes + 1, hidden_dim)
    for i in (0, 2, 4):
        linear(f"panoptic_head.mask_embed.{i}", hidden_dim, hidden_dim)
    generator = torch.Generator().manual_seed(0)
    return {name: (torch.randint(0, 10, shape, generator=generator) if name.endswith("index")
                   else torch.randn(shape, generator=generator)) for name, shape in shapes.items()}  # fmt: skip


@pytest.fixture(scope="module")
def converted():
    from transformers import Mask2FormerForUniversalSegmentation

    state = mmdet_layout(**TINY)
    model = Mask2FormerForUniversalSegmentation(mask2former_config(**TINY)).eval()
    weights = convert_state_dict(state)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    return state, weights, model, missing, unexpected


def test_every_mmdet_tensor_fills_exactly_the_transformers_model(converted):
    state, weights, model, missing, unexpected = converted
    assert unexpected == [] and set(missing) == UNFILLED
    kept = [v for k, v in state.items() if not k.endswith("relative_position_index")]
    assert sum(v.numel() for v in weights.values()) == sum(v.numel() for v in kept)  # nothing dropped or doubled
    model_state = model.state_dict()
    assert all(torch.equal(model_state[k], v) for k, v in weights.items())
    with torch.inference_mode():
        out = model(pixel_values=torch.randn(1, 3, 64, 64))
    assert out.class_queries_logits.shape == (1, 5, 81) and torch.isfinite(out.masks_queries_logits).all()


def test_renamed_tensors_are_copies_and_fused_projections_split_in_q_k_v_order(converted):
    state, weights, *_ = converted
    swin, module = "model.pixel_level_module.encoder.swin.encoder.layers.", "model.transformer_module."
    qkv = state["backbone.stages.2.blocks.1.attn.w_msa.qkv.weight"]  # (3C, C), C = 64: reshape(B, N, 3, heads, C/heads), swin.py:87-88
    for i, name in enumerate("qkv"):
        assert torch.equal(weights[f"{swin}2.blocks.1.attention.{name}_proj.weight"], qkv[64 * i : 64 * (i + 1)])
    in_proj = state["panoptic_head.transformer_decoder.layers.1.attentions.1.attn.in_proj_bias"]  # self-attention
    assert torch.equal(weights[f"{module}decoder.layers.1.self_attn.v_proj.bias"], in_proj[64:])
    assert torch.equal(weights[f"{module}decoder.layers.1.cross_attn.in_proj_weight"],
                       state["panoptic_head.transformer_decoder.layers.1.attentions.0.attn.in_proj_weight"])  # fmt: skip
    assert torch.equal(weights[f"{module}decoder.layers.0.cross_attn_layer_norm.weight"],
                       state["panoptic_head.transformer_decoder.layers.0.norms.0.weight"])  # norms follow operation_order
    assert torch.equal(weights[f"{module}queries_embedder.weight"], state["panoptic_head.query_embed.weight"])
    assert torch.equal(weights[f"{module}decoder.mask_predictor.mask_embedder.2.0.weight"], state["panoptic_head.mask_embed.4.weight"])
    assert torch.equal(weights["model.pixel_level_module.decoder.adapter_1.0.weight"],
                       state["panoptic_head.pixel_decoder.lateral_convs.0.conv.weight"])  # fmt: skip
    assert torch.equal(weights["class_predictor.bias"], state["panoptic_head.cls_embed.bias"])


def test_patch_merging_gives_what_mmdetections_unfold_merging_gives(converted):
    """mmdetection's PatchMerging (utils/transformer.py:360-385): nn.Unfold 2x2, LayerNorm, Linear, on its weights;
    transformers' SwinPatchMerging with the converted ones must compute the same."""
    state, _, model, *_ = converted
    height, width, channels = 6, 8, 32  # stage 1 of TINY: 2 x 16 channels
    x = torch.randn(2, height * width, channels, generator=torch.Generator().manual_seed(1))
    unfolded = torch.nn.functional.unfold(x.view(2, height, width, channels).permute(0, 3, 1, 2), kernel_size=2, stride=2)
    merged = torch.nn.functional.layer_norm(unfolded.transpose(1, 2), (4 * channels,),
                                            state["backbone.stages.1.downsample.norm.weight"],
                                            state["backbone.stages.1.downsample.norm.bias"])  # fmt: skip
    theirs = merged @ state["backbone.stages.1.downsample.reduction.weight"].T
    merging = model.model.pixel_level_module.encoder.swin.encoder.layers[1].downsample
    with torch.inference_mode():
        np.testing.assert_allclose(merging(x, (height, width)).numpy(), theirs.numpy(), rtol=1e-5, atol=1e-4)


def test_a_key_of_another_model_is_named():
    state = mmdet_layout(**TINY)
    state["roi_head.bbox_head.fc_cls.weight"] = torch.zeros(1)
    with pytest.raises(ValueError, match="not mmdetection's Swin Mask2Former, e.g. 'roi_head.bbox_head.fc_cls.weight'"):
        convert_state_dict(state)


def test_a_pth_in_mmdetections_layout_loads_and_the_detector_selects_it(tmp_path, monkeypatch):
    """The file as mmdetection saves it ({"meta", "state_dict"}), read tensors-only, behind the detector setting of
    the reward (a recipe's ``kwargs``) and of ``zoo eval --data geneval --option detector=...``."""
    from domains.image import evaluate
    from domains.image.geneval_models import HF_DETECTOR, GenEvalReward, Mask2FormerDetector

    monkeypatch.setattr("zoo.safe_weights.CONVERTED_CACHE", tmp_path / "cache")
    monkeypatch.setattr(mmdet_mask2former, "mask2former_config", lambda: mask2former_config(**TINY))
    path = tmp_path / "mask2former_swin-s-p4-w7-224_lsj_8x2_50e_coco.pth"
    torch.save({"meta": {"mmdet_version": "2.25.0", "CLASSES": ("person",)}, "state_dict": mmdet_layout(**TINY)}, path)
    model, processor = mmdet_mask2former.load_mmdet_mask2former(path)
    assert torch.equal(model.class_predictor.weight, mmdet_layout(**TINY)["panoptic_head.cls_embed.weight"])
    assert processor.size == {"shortest_edge": 800, "longest_edge": 1333} and processor.size_divisor == 32

    reward = GenEvalReward().with_options(detector=str(path))
    assert isinstance(reward.detector, Mask2FormerDetector) and "GenEval's detector" in reward.detector_source
    assert isinstance(reward.detector(np.zeros((40, 48, 3))), list)  # loads and runs the converted model
    assert "zoo: not GenEval's" in GenEvalReward().detector_source and HF_DETECTOR in GenEvalReward().detector_source
    metrics = evaluate.run(Painter(), "geneval", None, tmp_path / "out", limit=1, images_per_prompt=1,
                           reward=GenEvalReward(), detector=str(path))  # fmt: skip
    assert metrics["detector"] == f"mmdetection Mask2Former {path.name}, converted to transformers (GenEval's detector)"
    with pytest.raises(FileNotFoundError, match="no mmdetection checkpoint"):
        mmdet_mask2former.load_mmdet_mask2former(tmp_path / "missing.pth")


class Painter:
    """A text-to-image stand-in: grey squares."""

    def __call__(self, prompts, *, seed, num_images_per_prompt, **sampling):
        from PIL import Image

        from zoo.outputs import ImageOutput

        images = [Image.new("RGB", (32, 32), (128, 128, 128))] * (len(prompts) * num_images_per_prompt)
        return ImageOutput(images, list(prompts), {"seed": seed})
