"""Small vector icons drawn with PIL for the synthetic screens (no icon font or image assets needed)."""

from __future__ import annotations

import math
from collections.abc import Callable

from PIL import ImageDraw

Box = tuple[float, float, float, float]

#: icon name -> (noun used in instructions, a functional instruction as ScreenSpot phrases them)
ICONS: dict[str, tuple[str, str]] = {
    "search": ("search", "search for something"),
    "settings": ("settings", "open settings"),
    "add": ("add", "create a new item"),
    "trash": ("delete", "delete the selected item"),
    "home": ("home", "go to the home page"),
    "star": ("star", "add to favourites"),
    "heart": ("favorites", "show my favorites"),
    "download": ("download", "download the file"),
    "share": ("share", "share this"),
    "edit": ("edit", "edit this item"),
    "refresh": ("refresh", "reload the page"),
    "mail": ("mail", "open the mailbox"),
    "close": ("close", "close this window"),
    "minimize": ("minimize", "minimize the window"),
    "maximize": ("maximize", "maximize the window"),
    "back": ("back", "go back"),
    "more": ("more options", "show more options"),
    "bell": ("notifications", "check notifications"),
    "user": ("profile", "open my profile"),
    "cart": ("cart", "view the shopping cart"),
}


def _search(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.ellipse((x1, y1, x1 + 0.65 * s, y1 + 0.65 * s), outline=c, width=lw)
    d.line((x1 + 0.55 * s, y1 + 0.55 * s, x1 + s, y1 + s), fill=c, width=lw + 1)


def _settings(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    cx, cy = x1 + s / 2, y1 + s / 2
    for k in range(8):
        a = k * math.pi / 4
        d.line((cx, cy, cx + 0.5 * s * math.cos(a), cy + 0.5 * s * math.sin(a)), fill=c, width=lw + 1)
    d.ellipse((cx - 0.32 * s, cy - 0.32 * s, cx + 0.32 * s, cy + 0.32 * s), fill=c)
    d.ellipse((cx - 0.12 * s, cy - 0.12 * s, cx + 0.12 * s, cy + 0.12 * s), fill="#808080")


def _add(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1 + s / 2, y1, x1 + s / 2, y1 + s), fill=c, width=lw + 1)
    d.line((x1, y1 + s / 2, x1 + s, y1 + s / 2), fill=c, width=lw + 1)


def _trash(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1, y1 + 0.18 * s, x1 + s, y1 + 0.18 * s), fill=c, width=lw)
    d.rectangle((x1 + 0.38 * s, y1, x1 + 0.62 * s, y1 + 0.18 * s), outline=c, width=lw)
    d.rectangle((x1 + 0.15 * s, y1 + 0.25 * s, x1 + 0.85 * s, y1 + s), outline=c, width=lw)


def _home(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.polygon([(x1, y1 + 0.45 * s), (x1 + s / 2, y1), (x1 + s, y1 + 0.45 * s)], outline=c, width=lw)
    d.rectangle((x1 + 0.18 * s, y1 + 0.45 * s, x1 + 0.82 * s, y1 + s), outline=c, width=lw)


def _star(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    cx, cy = x1 + s / 2, y1 + s / 2
    pts = []
    for k in range(10):
        r = s / 2 if k % 2 == 0 else s / 5
        a = -math.pi / 2 + k * math.pi / 5
        pts.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    d.polygon(pts, fill=c)


def _heart(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.ellipse((x1, y1 + 0.05 * s, x1 + 0.55 * s, y1 + 0.55 * s), fill=c)
    d.ellipse((x1 + 0.45 * s, y1 + 0.05 * s, x1 + s, y1 + 0.55 * s), fill=c)
    d.polygon([(x1 + 0.02 * s, y1 + 0.4 * s), (x1 + 0.98 * s, y1 + 0.4 * s), (x1 + s / 2, y1 + s)], fill=c)


def _download(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1 + s / 2, y1, x1 + s / 2, y1 + 0.7 * s), fill=c, width=lw + 1)
    d.line((x1 + 0.2 * s, y1 + 0.4 * s, x1 + s / 2, y1 + 0.7 * s, x1 + 0.8 * s, y1 + 0.4 * s), fill=c, width=lw + 1)
    d.line((x1, y1 + s, x1 + s, y1 + s), fill=c, width=lw + 1)


def _share(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    pts = [(x1 + 0.8 * s, y1 + 0.15 * s), (x1 + 0.2 * s, y1 + 0.5 * s), (x1 + 0.8 * s, y1 + 0.85 * s)]
    d.line(pts, fill=c, width=lw)
    for px, py in pts:
        d.ellipse((px - 0.14 * s, py - 0.14 * s, px + 0.14 * s, py + 0.14 * s), fill=c)


def _edit(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1 + 0.15 * s, y1 + 0.85 * s, x1 + 0.85 * s, y1 + 0.15 * s), fill=c, width=lw + 2)
    d.line((x1, y1 + s, x1 + 0.2 * s, y1 + 0.95 * s), fill=c, width=lw)


def _refresh(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.arc((x1, y1, x1 + s, y1 + s), start=40, end=330, fill=c, width=lw + 1)
    d.polygon([(x1 + s, y1 + 0.1 * s), (x1 + s, y1 + 0.45 * s), (x1 + 0.65 * s, y1 + 0.35 * s)], fill=c)


def _mail(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.rectangle((x1, y1 + 0.2 * s, x1 + s, y1 + 0.8 * s), outline=c, width=lw)
    d.line((x1, y1 + 0.2 * s, x1 + s / 2, y1 + 0.55 * s, x1 + s, y1 + 0.2 * s), fill=c, width=lw)


def _close(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1, y1, x1 + s, y1 + s), fill=c, width=lw + 1)
    d.line((x1, y1 + s, x1 + s, y1), fill=c, width=lw + 1)


def _minimize(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1, y1 + 0.8 * s, x1 + s, y1 + 0.8 * s), fill=c, width=lw + 1)


def _maximize(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.rectangle((x1, y1, x1 + s, y1 + s), outline=c, width=lw)


def _back(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.line((x1 + 0.65 * s, y1, x1 + 0.15 * s, y1 + s / 2, x1 + 0.65 * s, y1 + s), fill=c, width=lw + 1)
    d.line((x1 + 0.15 * s, y1 + s / 2, x1 + s, y1 + s / 2), fill=c, width=lw + 1)


def _more(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    for k in range(3):
        cy = y1 + (0.15 + 0.35 * k) * s
        d.ellipse((x1 + 0.4 * s, cy - 0.1 * s, x1 + 0.6 * s, cy + 0.1 * s), fill=c)


def _bell(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.chord((x1 + 0.15 * s, y1, x1 + 0.85 * s, y1 + 1.3 * s), start=180, end=360, fill=c)
    d.rectangle((x1 + 0.15 * s, y1 + 0.6 * s, x1 + 0.85 * s, y1 + 0.8 * s), fill=c)
    d.ellipse((x1 + 0.4 * s, y1 + 0.8 * s, x1 + 0.6 * s, y1 + s), fill=c)


def _user(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    d.ellipse((x1 + 0.3 * s, y1, x1 + 0.7 * s, y1 + 0.4 * s), fill=c)
    d.chord((x1, y1 + 0.5 * s, x1 + s, y1 + 1.5 * s), start=180, end=360, fill=c)


def _cart(d: ImageDraw.ImageDraw, x1: float, y1: float, s: float, c: str, lw: int) -> None:
    handle = [(0, 0.1), (0.2, 0.1), (0.3, 0.7), (0.9, 0.7)]
    d.line([(x1 + u * s, y1 + v * s) for u, v in handle], fill=c, width=lw)
    basket = [(0.22, 0.25), (1.0, 0.25), (0.9, 0.55), (0.28, 0.55)]
    d.polygon([(x1 + u * s, y1 + v * s) for u, v in basket], fill=c)
    for cx in (0.38, 0.82):
        d.ellipse((x1 + (cx - 0.08) * s, y1 + 0.8 * s, x1 + (cx + 0.08) * s, y1 + 0.96 * s), fill=c)


_DRAW: dict[str, Callable[[ImageDraw.ImageDraw, float, float, float, str, int], None]] = {
    "search": _search, "settings": _settings, "add": _add, "trash": _trash, "home": _home, "star": _star,
    "heart": _heart, "download": _download, "share": _share, "edit": _edit, "refresh": _refresh, "mail": _mail,
    "close": _close, "minimize": _minimize, "maximize": _maximize, "back": _back, "more": _more, "bell": _bell,
    "user": _user, "cart": _cart,
}  # fmt: skip


def draw_icon(draw: ImageDraw.ImageDraw, name: str, box: Box, colour: str) -> None:
    """Draw icon ``name`` inside the square ``box`` (x1, y1, x2, y2) in ``colour``."""
    if name not in _DRAW:
        raise ValueError(f"unknown icon {name!r}; known icons: {', '.join(sorted(_DRAW))}")
    x1, y1, x2, y2 = box
    size = min(x2 - x1, y2 - y1)
    _DRAW[name](draw, x1, y1, size, colour, max(1, round(size / 12)))
