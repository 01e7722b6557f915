"""The tiny Qwen2.5-VL's multimodal RoPE: how far apart it places an image's rows and columns.

``zoo.tiny.build_config``'s docstring claims the default sections leave columns almost no rotation
and interleaved sections fix that; these tests measure it on the model's own rotary embedding.
"""

from __future__ import annotations

import pytest
import torch

from zoo.tiny import build_config, build_tokenizer


def _angles(section: list[int] | None, axis: int) -> torch.Tensor:
    """Per-frequency rotation (rad) between image tokens one step apart along ``axis`` (1 row, 2 column)."""
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLRotaryEmbedding

    config = build_config(build_tokenizer(vocab_size=300), hidden=128, layers=1, mrope_section=section)
    rope = Qwen2_5_VLRotaryEmbedding(config.text_config)
    positions = torch.zeros(3, 1, 2, dtype=torch.long)  # (t, h, w) of two tokens
    positions[axis, 0, 1] = 1
    cos, sin = rope(torch.zeros(1, dtype=torch.float32), positions)
    half = cos.shape[-1] // 2  # (batch, token, frequencies twice over), sections recomposed
    angle = torch.atan2(sin[0, 1, :half], cos[0, 1, :half]) - torch.atan2(sin[0, 0, :half], cos[0, 0, :half])
    return angle.abs()


def test_default_sections_leave_columns_almost_no_rotation() -> None:
    assert _angles(None, axis=2).max() < 1e-3
    assert _angles(None, axis=1).max() == pytest.approx(1e6 ** (-4 / 16), rel=1e-4)  # rows: chunk 2 starts at 4


def test_interleaved_sections_give_rows_and_columns_high_frequencies() -> None:
    interleaved = [1] * 16
    assert _angles(interleaved, axis=1).max() == pytest.approx(1e6 ** (-1 / 16), rel=1e-4)  # 0.42 rad per row
    assert _angles(interleaved, axis=2).max() == pytest.approx(1e6 ** (-2 / 16), rel=1e-4)  # 0.18 rad per column


def test_sections_must_cover_the_head() -> None:
    with pytest.raises(ValueError, match="head_dim // 2 = 16"):
        build_config(build_tokenizer(vocab_size=300), hidden=128, mrope_section=[1] * 15)
