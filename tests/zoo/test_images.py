"""Image input: every accepted form, and a named error for every bad one."""

import numpy as np
import pytest
from PIL import Image

from zoo.images import ImageError, load_image


def test_accepts_path_pil_array_and_bytes(tmp_path):
    img = Image.new("RGBA", (30, 20), (10, 20, 30, 0))
    img.save(tmp_path / "a.png")
    from_path = load_image(tmp_path / "a.png")
    assert from_path.mode == "RGB" and from_path.size == (30, 20)
    assert from_path.getpixel((0, 0)) == (255, 255, 255)  # transparent pixels composited on white
    assert load_image(np.zeros((20, 30), np.uint8)).size == (30, 20)
    assert load_image(np.ones((20, 30, 3), np.float32)).getpixel((0, 0)) == (255, 255, 255)
    assert load_image((tmp_path / "a.png").read_bytes()).size == (30, 20)


def test_missing_and_non_image_files_are_named(tmp_path):
    with pytest.raises(ImageError, match="no such image file"):
        load_image(tmp_path / "missing.png")
    (tmp_path / "notes.png").write_text("not a picture")
    with pytest.raises(ImageError, match="not an image file"):
        load_image(tmp_path / "notes.png")


def test_truncated_file_is_named(tmp_path):
    Image.new("RGB", (64, 64), "red").save(tmp_path / "full.jpg")
    data = (tmp_path / "full.jpg").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(data[: len(data) // 3])
    with pytest.raises(ImageError, match="truncated"):
        load_image(tmp_path / "cut.jpg")


def test_decompression_bomb_is_refused_from_its_header(tmp_path):
    # a 1-bit PNG of 20000 x 20000 pixels is a few KB on disk but 400 MP once decoded
    Image.new("1", (20000, 20000)).save(tmp_path / "bomb.png", optimize=True)
    assert (tmp_path / "bomb.png").stat().st_size < 200_000
    with pytest.raises(ImageError, match="decompression bomb"):
        load_image(tmp_path / "bomb.png")


def test_bad_arrays_and_types_are_named():
    with pytest.raises(ImageError, match="shape"):
        load_image(np.zeros((2, 3, 4, 5)))
    with pytest.raises(ImageError, match="unsupported image input"):
        load_image(42)
    with pytest.raises(ImageError, match="URLs are not fetched"):
        load_image("https://example.com/a.png")
