"""The ``matplotlib-facts`` kind: run chart code in the sandbox and report what the figure holds.

ChartMimic (chart2code/utils/evaluator/*_prefix.py) traces plotting calls by patching matplotlib
before running the code. This kind reads the finished figure instead, which is simpler and
independent of the API the code used: drawn texts are logged while the figure is drawn (as
ChartMimic logs ``draw_text``), layout is each axes' gridspec cell (ChartMimic's exact rule),
types and colours come from the artists (``bar`` from bar containers, ``line`` from data lines,
``scatter`` from path collections, ``pie`` from wedges, ``fill`` from polygon collections,
``image`` from images and meshes). A chart drawn by unusual calls may get other type names
than ChartMimic's; the metric maths (:mod:`rewards.chart_metrics`) is ChartMimic's.

The answer travels through the pool's image channel unchanged: UTF-8 JSON, zero-padded to the
requested ``size`` (``w * h * 3`` bytes), decoded with :func:`decode_facts`. Nothing in the
pool's core changes, and the channel stays data-only (JSON, never ``eval``).
"""

from __future__ import annotations

import json
from collections.abc import Callable

Size = tuple[int, int]


def _hex(color) -> str:
    from matplotlib.colors import to_hex

    return to_hex(color, keep_alpha=False).upper()


def _axes_facts(ax, types: list[str], colors: dict[str, list[str]]) -> None:
    from matplotlib.collections import PathCollection, PolyCollection, QuadMesh
    from matplotlib.container import BarContainer
    from matplotlib.patches import Wedge

    def add(kind: str, color) -> None:
        types.append(kind)
        colors.setdefault(kind, []).append(_hex(color))

    for container in ax.containers:
        if isinstance(container, BarContainer):
            for patch in container.patches:
                add("bar", patch.get_facecolor())
    for line in ax.get_lines():
        if len(line.get_xdata()) > 1 and line.get_visible():
            add("line", line.get_color())
    for patch in ax.patches:
        if isinstance(patch, Wedge):
            add("pie", patch.get_facecolor())
    for coll in ax.collections:
        faces = coll.get_facecolor()
        if isinstance(coll, PathCollection):
            add("scatter", faces[0] if len(faces) else coll.get_edgecolor()[0])
        elif isinstance(coll, QuadMesh):
            types.append("image")
        elif isinstance(coll, PolyCollection) and len(faces):
            add("fill", faces[0])
    types.extend("image" for _ in ax.images)


def render_chart_facts(source: bytes, size: Size, draw: Callable[[bytes, Size], bytes]) -> bytes:
    """Exec the chart code with ``draw``, then ``{"texts", "layout", "types", "colors"}``.

    ``draw`` is the ``matplotlib`` kind's renderer, which runs the code and draws its figure once;
    :mod:`rewards.rendering.jobs` passes it in when it registers this kind, so the kind runs chart code
    exactly as ``matplotlib`` does without this module importing the registry that imports it.
    """
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import RendererAgg

    texts: list[str] = []
    original = RendererAgg.draw_text

    def logged(self, gc, x, y, s, *args, **kwargs):
        if s and str(s).strip():
            texts.append(str(s))
        return original(self, gc, x, y, s, *args, **kwargs)

    RendererAgg.draw_text = logged
    draw(source, (max(64, size[0]), max(64, size[1])))
    fig = plt.figure(plt.get_fignums()[-1])
    layout, types, colors = [], [], {}
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is not None:
            rows, cols = spec.get_gridspec().get_geometry()
            layout.append([rows, cols, spec.rowspan.start, spec.rowspan.stop - 1, spec.colspan.start,
                           spec.colspan.stop - 1])
        _axes_facts(ax, types, colors)
    data = json.dumps({"texts": texts, "layout": layout, "types": types, "colors": colors}).encode()
    capacity = size[0] * size[1] * 3
    if len(data) > capacity:
        raise ValueError(f"chart facts take {len(data)} bytes, over the {capacity} a {size} answer holds")
    return data + b"\0" * (capacity - len(data))


def decode_facts(image) -> dict:
    """The facts dict from a ``matplotlib-facts`` result image."""
    return json.loads(image.tobytes().rstrip(b"\0").decode("utf-8"))
