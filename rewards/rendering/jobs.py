"""The renderers proper: source bytes in, raw RGB bytes of exactly ``size`` out.

They run inside a sandboxed job process (see :mod:`rewards.rendering.worker`); any exception
they raise becomes the job's error message. Each kind registers a preload hook (imports done
once in the warm worker) and a render function.
"""

from __future__ import annotations

import functools
import io
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

Size = tuple[int, int]


class ExternalResourceRefused(PermissionError):
    """An SVG asked for a file or URL; renders use only what is inside the document."""


def _refuse_fetch(url: str, resource_type: str | None = None) -> bytes:
    """cairosvg ``url_fetcher`` that allows ``data:`` URLs only (they are part of the input)."""
    if url.startswith("data:"):
        from cairosvg.url import fetch

        return fetch(url, resource_type)
    raise ExternalResourceRefused(f"SVG references an external resource {url[:200]!r}; only data: URLs are allowed")


def _to_rgb(image, size: Size) -> bytes:
    """Composite on white (transparent pixels are background, not black) and force ``size``."""
    from PIL import Image

    rgba = image.convert("RGBA")
    if rgba.size != tuple(size):
        rgba = rgba.resize(size, Image.Resampling.BILINEAR)
    canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(canvas, rgba).convert("RGB").tobytes()


def render_svg(source: bytes, size: Size) -> bytes:
    """cairosvg at exactly ``size``: the SVG's own width/height never size the surface.

    ``unsafe=False`` keeps defusedxml's entity and external-DTD refusal and cairosvg's
    100 000 ``<use>`` cap (CVE-2026-31899); the fetcher refuses files and URLs.
    """
    from cairosvg.surface import PNGSurface
    from PIL import Image

    png = PNGSurface.convert(
        source, unsafe=False, url_fetcher=_refuse_fetch, output_width=size[0], output_height=size[1]
    )
    return _to_rgb(Image.open(io.BytesIO(png)), size)


def render_matplotlib(source: bytes, size: Size) -> bytes:
    """Run chart code with the Agg backend, then draw its figure at exactly ``size``.

    ``plt.show``, ``plt.close``, ``savefig`` and ``matplotlib.use`` are no-ops inside the job:
    code ending in ``savefig("/somewhere/out.png", dpi=600); close()`` still leaves its figure
    behind, costs no extra rendering, and writes nothing; the most recently created pyplot
    figure is the chart.
    """
    import matplotlib
    import matplotlib.figure
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    def ignored(*args: object, **kwargs: object) -> None:
        return None

    plt.show = plt.close = plt.savefig = matplotlib.use = ignored
    matplotlib.figure.Figure.savefig = ignored
    code = compile(source.decode("utf-8"), "<model-code>", "exec")
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102  (sandboxed job)
    numbers = plt.get_fignums()
    if not numbers:
        raise ValueError("the code created no matplotlib figure (use plt.figure/plt.subplots)")
    fig = plt.figure(numbers[-1])
    fig.set_dpi(100)
    fig.set_size_inches(size[0] / 100, size[1] / 100)
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    return _to_rgb(Image.fromarray(rgba, "RGBA"), size)


def _preload_svg() -> None:
    import cairosvg.surface  # noqa: F401
    import PIL.Image
    import PIL.PngImagePlugin  # noqa: F401


def _preload_matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    import numpy  # noqa: F401

    fig = plt.figure()  # first draw loads fonts and the font cache, once
    fig.text(0.5, 0.5, "warm")
    fig.canvas.draw()
    plt.close(fig)


RENDERERS: dict[str, Callable[[bytes, Size], bytes]] = {"svg": render_svg, "matplotlib": render_matplotlib}
PRELOADERS: dict[str, Callable[[], None]] = {"svg": _preload_svg, "matplotlib": _preload_matplotlib}

# Optional kinds, each in its own module (their packages load only in workers that preload them).
from rewards.rendering import cad, chart_facts, svg_skia

RENDERERS["svg-skia"], PRELOADERS["svg-skia"] = svg_skia.render_svg_skia, svg_skia.preload_svg_skia
RENDERERS["matplotlib-facts"] = functools.partial(chart_facts.render_chart_facts, draw=render_matplotlib)
PRELOADERS["matplotlib-facts"] = _preload_matplotlib
RENDERERS["cadquery"], PRELOADERS["cadquery"] = cad.render_cadquery, cad.preload_cadquery
RENDERERS["cadquery-geometry"], PRELOADERS["cadquery-geometry"] = cad.render_cadquery_geometry, cad.preload_cadquery
#: Kinds that execute model-written Python (and so get the module blocklist of the audit hook).
RUNS_MODEL_CODE = frozenset({"matplotlib", "matplotlib-facts", "cadquery", "cadquery-geometry"})


def install_roots() -> list[str]:
    """The Python installation: prefixes, stdlib and site-packages.

    Deliberately not ``sys.path`` or ``PYTHONPATH``: they may hold the current directory, a
    script's folder (often the user's home) or this project's checkout (``.git/config``, data),
    none of which a job may read.
    """
    import os
    import site
    import sys
    import sysconfig

    roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sysconfig.get_paths().values()]
    roots += site.getsitepackages()
    return sorted({os.path.realpath(p) for p in roots if p and os.path.realpath(p) != "/"})


def python_roots() -> list[str]:
    """:func:`install_roots` plus the ``PYTHONPATH`` entries: what a worker process must keep
    visible to import its own modules (the job's audit hook reads only the install roots)."""
    import os

    extra = [os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return sorted({*install_roots(), *(p for p in extra if p != "/")})


def data_roots() -> list[str]:
    """Data directories of the preloaded renderers (matplotlib's fonts and styles), which jobs
    read lazily; the worker keeps them visible even when they live outside ``python_roots``."""
    import sys

    if "matplotlib" not in sys.modules:
        return []
    import matplotlib

    return [matplotlib.get_data_path()]


def read_roots() -> list[str]:
    """Directories a job may read under the audit hook: the Python installation (not the
    project checkout), fonts, matplotlib data."""
    import sys

    roots = install_roots() + data_roots()
    roots += ["/usr/share/fonts", "/usr/local/share/fonts", "/etc/fonts", "/usr/share/fontconfig",
              "/usr/share/zoneinfo", "/etc/localtime", "/dev/null", "/dev/urandom"]
    if "matplotlib" in sys.modules:
        import matplotlib

        roots.append(matplotlib.get_cachedir())
    return roots
