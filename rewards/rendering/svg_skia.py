"""The ``svg-skia`` render kind: skia-python's SVG module, about 5x cairosvg's speed at 224 px.

Measured in ``bench/svg_renderers.py`` (skia against cairosvg and resvg-py on a 200-element SVG at 224 px).
Safety, on top of the sandbox's walls: skia loads no external resource of any kind and returns
no DOM for a document with a DTD entity (same note, §2). The source is still screened here so a
refusal is a named ``invalid`` result, not a silent blank: any ``<!DOCTYPE``/``<!ENTITY`` and
any ``href`` that is not ``#fragment`` or ``data:`` is refused before skia sees the bytes.
"""

from __future__ import annotations

import re

Size = tuple[int, int]

_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)
_HREF = re.compile(rb"""(?:xlink:)?href\s*=\s*(["'])\s*(?P<url>.*?)\1""", re.IGNORECASE | re.DOTALL)
_CSS_URL = re.compile(rb"""(?:url\(\s*["']?(?P<url>[^)"']*)|@import)""", re.IGNORECASE)


class SvgRefused(ValueError):
    """The SVG asks for something outside the document (a file, a URL) or declares a DTD."""


def screen_svg(source: bytes) -> None:
    """Raise :class:`SvgRefused` for DTDs and external references; pure, so it is unit-tested directly."""
    if _DTD.search(source):
        raise SvgRefused("SVG declares a DTD or entities; they are refused (entity expansion, external files)")
    for match in _HREF.finditer(source):
        url = match.group("url").strip()
        if url and not (url.startswith(b"#") or url.lower().startswith(b"data:")):
            raise SvgRefused(f"SVG references an external resource {url[:200]!r}; only #fragment and data: are allowed")
    for match in _CSS_URL.finditer(source):
        url = (match.group("url") or b"@import").strip()
        if not (url.startswith(b"#") or url.lower().startswith(b"data:")):
            raise SvgRefused(f"SVG style references {url[:200]!r}; only #fragment and data: are allowed")


def render_svg_skia(source: bytes, size: Size) -> bytes:
    """Rasterise at exactly ``size`` on white; the document's own width/height only set the scale."""
    import numpy as np
    import skia

    screen_svg(source)
    dom = skia.SVGDOM.MakeFromStream(skia.MemoryStream(source))
    if dom is None:
        raise ValueError("skia could not parse the SVG (malformed XML or an unsupported root)")
    width, height = size
    intrinsic = dom.containerSize()
    if intrinsic.width() <= 0 or intrinsic.height() <= 0:
        dom.setContainerSize(skia.Size(width, height))
        intrinsic = dom.containerSize()
    surface = skia.Surface(width, height)
    with surface as canvas:
        canvas.clear(skia.ColorWHITE)
        canvas.scale(width / intrinsic.width(), height / intrinsic.height())
        dom.render(canvas)
    rgba = surface.makeImageSnapshot().toarray(colorType=skia.kRGBA_8888_ColorType)
    return np.ascontiguousarray(rgba[:, :, :3]).tobytes()


def preload_svg_skia() -> None:
    """Import skia and render once, text included: the font manager and SVG module set up in the
    worker, once, instead of in every forked job."""
    render_svg_skia(b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="4" height="4"/>'
                    b'<text x="1" y="7" font-size="4">w</text></svg>', (8, 8))
