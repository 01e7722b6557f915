"""Pictures that say more than numbers: predictions drawn on the image, grids of examples."""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw

PRED_COLOUR = (230, 40, 40)
TRUTH_COLOUR = (30, 170, 60)


def draw_prediction(
    image: Image.Image,
    bbox: Sequence[float] | None = None,
    point: Sequence[float] | None = None,
    truth: Sequence[float] | None = None,
    label: str | None = None,
) -> Image.Image:
    """A copy of ``image`` with the ground-truth box (green), predicted box/point (red) and a caption."""
    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    width = max(1, round(min(out.size) / 150))
    if truth is not None:
        draw.rectangle(_box(truth), outline=TRUTH_COLOUR, width=width)
    if bbox is not None:
        draw.rectangle(_box(bbox), outline=PRED_COLOUR, width=width)
        point = point or [(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2]
    if point is not None:
        r = 2 * width + 1
        x, y = point
        draw.line([(x - r, y), (x + r, y)], fill=PRED_COLOUR, width=width)
        draw.line([(x, y - r), (x, y + r)], fill=PRED_COLOUR, width=width)
    if label:
        draw.rectangle([0, 0, out.width, 12], fill=(0, 0, 0))
        draw.text((2, 0), label[: max(8, out.width // 6)], fill=(255, 255, 255))
    return out


def grid(images: Sequence[Image.Image], columns: int = 4, cell: int = 256) -> Image.Image:
    """Tile images (each scaled to fit a ``cell`` square) into one picture."""
    if not images:
        raise ValueError("grid() needs at least one image")
    rows = (len(images) + columns - 1) // columns
    sheet = Image.new("RGB", (columns * cell, rows * cell), (255, 255, 255))
    for i, img in enumerate(images):
        thumb = img.copy()
        thumb.thumbnail((cell, cell))
        sheet.paste(thumb, ((i % columns) * cell, (i // columns) * cell))
    return sheet


def _box(values: Sequence[float]) -> list[float]:
    x1, y1, x2, y2 = (float(v) for v in values)
    return [min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)]
