"""Pictures that say more than numbers: predictions drawn on the image, grids of examples."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw

PRED_COLOUR = (220, 0, 220)
TRUTH_COLOUR = (0, 170, 60)
HALO = (255, 255, 255)


def draw_prediction(
    image: Image.Image,
    bbox: Sequence[float] | None = None,
    point: Sequence[float] | None = None,
    truth: Sequence[float] | None = None,
    label: str | None = None,
) -> Image.Image:
    """A copy of ``image`` with the ground-truth box (green), predicted box/point (magenta) and a caption.

    Every stroke has a white halo so that it stays visible on a button of the same colour.
    """
    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(1, round(min(out.size) / 150))
    if truth is not None:
        _haloed_box(draw, _box(truth), TRUTH_COLOUR, width)
    if bbox is not None:
        _haloed_box(draw, _box(bbox), PRED_COLOUR, width)
        point = point or [(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2]
    if point is not None:
        r = 3 * width + 2
        x, y = point
        for colour, w in ((HALO, width + 2), (PRED_COLOUR, width)):
            draw.line([(x - r, y), (x + r, y)], fill=colour, width=w)
            draw.line([(x, y - r), (x, y + r)], fill=colour, width=w)
    if label:
        draw.rectangle([0, 0, out.width, 12], fill=(0, 0, 0))
        draw.text((2, 0), label[: max(8, out.width // 6)], fill=(255, 255, 255))
    return out


def grid(images: Sequence[Image.Image], columns: int = 4, cell: int = 256) -> Image.Image:
    """Tile images (each scaled up or down to fit a ``cell`` square) into one picture."""
    if not images:
        raise ValueError("grid() needs at least one image")
    rows = (len(images) + columns - 1) // columns
    sheet = Image.new("RGB", (columns * cell, rows * cell), (255, 255, 255))
    for i, img in enumerate(images):
        scale = cell / max(img.size)
        size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        sheet.paste(img.resize(size, Image.Resampling.LANCZOS), ((i % columns) * cell, (i // columns) * cell))
    return sheet


def _haloed_box(draw: ImageDraw.ImageDraw, box: list[float], colour: tuple[int, int, int], width: int) -> None:
    draw.rectangle(box, outline=HALO, width=width + 2)
    draw.rectangle([box[0] + 1, box[1] + 1, box[2] - 1, box[3] - 1], outline=colour, width=width)


def _box(values: Sequence[float]) -> list[float]:
    x1, y1, x2, y2 = (float(v) for v in values)
    return [min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)]
