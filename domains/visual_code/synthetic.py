"""Random charts, SVG scenes and CadQuery parts, each with the code that draws it, for offline runs.

Every generator is seeded and returns code only; images come from rendering that code in the
sandbox (:func:`rewards.rendering.render_many`), so the reference image of a sample is exactly
what the reward's renderer makes of the reference code (a perfect answer scores 1).
"""

from __future__ import annotations

import numpy as np

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta")
CHART_TYPES = ("bar", "line", "scatter", "barh")


def _pick(rng: np.random.Generator, seq, n: int | None = None):
    if n is None:
        return seq[int(rng.integers(len(seq)))]
    return [seq[i] for i in rng.choice(len(seq), size=n, replace=False)]


def random_chart_code(rng: np.random.Generator) -> tuple[str, dict]:
    """Matplotlib code for a one-axes chart (bar, line, scatter or horizontal bar) and its facts."""
    kind = _pick(rng, CHART_TYPES)
    n = int(rng.integers(3, 7))
    series = int(rng.integers(1, 3)) if kind in ("line", "scatter") else 1
    labels = _pick(rng, WORDS, n)
    colors = _pick(rng, PALETTE, series)
    title = " ".join(_pick(rng, WORDS, 2)).title()
    lines = ["import matplotlib.pyplot as plt", "", "fig, ax = plt.subplots()"]
    for s in range(series):
        values = [round(float(v), 1) for v in rng.uniform(1, 10, n)]
        if kind == "bar":
            lines.append(f"ax.bar({labels!r}, {values!r}, color={colors[s]!r})")
        elif kind == "barh":
            lines.append(f"ax.barh({labels!r}, {values!r}, color={colors[s]!r})")
        elif kind == "line":
            lines.append(f"ax.plot({list(range(n))!r}, {values!r}, color={colors[s]!r}, marker='o')")
        else:
            xs = [round(float(v), 1) for v in rng.uniform(0, 10, n)]
            lines.append(f"ax.scatter({xs!r}, {values!r}, color={colors[s]!r})")
    lines += [f"ax.set_title({title!r})", f"ax.set_xlabel({_pick(rng, WORDS)!r})", "plt.tight_layout()"]
    return "\n".join(lines) + "\n", {"type": kind, "title": title, "colors": colors}


SHAPES = ("rect", "circle", "ellipse", "triangle", "path")


def random_svg(rng: np.random.Generator, size: int = 64, shapes: tuple[int, int] = (2, 5),
               kinds: tuple[str, ...] = SHAPES, colors: int = len(PALETTE), compact: bool = False) -> str:
    """An SVG scene of ``shapes[0]..shapes[1]`` filled shapes of ``kinds`` in the first ``colors``
    colours of the palette, on a white ground. The defaults make varied scenes; one circle or
    rectangle in four colours is a scene a ~1M-parameter model learns on CPU (``svg-tiny`` recipes).
    ``compact`` leaves out ``xmlns``, width, height and the white rectangle (the renderers draw on
    white anyway): half the tokens for a model that writes the document."""
    unknown = sorted(set(kinds) - set(SHAPES))
    if unknown or not 1 <= shapes[0] <= shapes[1] or not 1 <= colors <= len(PALETTE):
        raise ValueError(f"random_svg needs kinds from {SHAPES}, 1 <= shapes[0] <= shapes[1] and colors in "
                         f"1..{len(PALETTE)}; got kinds={kinds}, shapes={shapes}, colors={colors}")
    parts = []
    for _ in range(int(rng.integers(shapes[0], shapes[1] + 1))):
        fill = _pick(rng, PALETTE[:colors])
        x, y = (int(v) for v in rng.integers(4, size - 4, 2))
        r = int(rng.integers(4, size // 3))
        parts.append(_shape(_pick(rng, kinds), fill, x, y, r))
    if compact:
        return f'<svg viewBox="0 0 {size} {size}">{"".join(parts)}</svg>'
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" width="{size}" height="{size}">'
            f'<rect width="{size}" height="{size}" fill="white"/>{"".join(parts)}</svg>')


def _shape(kind: str, fill: str, x: int, y: int, r: int) -> str:
    if kind == "rect":
        return f'<rect x="{x - r}" y="{y - r}" width="{2 * r}" height="{r}" fill="{fill}"/>'
    if kind == "circle":
        return f'<circle cx="{x}" cy="{y}" r="{r}" fill="{fill}"/>'
    if kind == "ellipse":
        return f'<ellipse cx="{x}" cy="{y}" rx="{r}" ry="{max(2, r // 2)}" fill="{fill}"/>'
    if kind == "triangle":
        return f'<polygon points="{x},{y - r} {x - r},{y + r} {x + r},{y + r}" fill="{fill}"/>'
    return f'<path d="M{x - r} {y} Q{x} {y - 2 * r} {x + r} {y} Z" fill="{fill}"/>'


def random_cad_part(rng: np.random.Generator) -> tuple[str, str]:
    """CadQuery code for a plate with optional bore, boss and fillet, and a plain-English description."""
    length, width, height = (int(v) for v in (rng.integers(20, 60), rng.integers(10, 40), rng.integers(4, 15)))
    lines = ["import cadquery as cq", "", f"result = cq.Workplane('XY').box({length}, {width}, {height})"]
    words = [f"A rectangular plate {length} mm long, {width} mm wide and {height} mm thick"]
    if rng.random() < 0.6:
        hole = int(rng.integers(2, max(3, min(length, width) // 3)))
        lines.append(f"result = result.faces('>Z').workplane().hole({hole})")
        words.append(f"with a {hole} mm through hole in the centre")
    if rng.random() < 0.5:
        boss_r, boss_h = int(rng.integers(2, max(3, width // 4))), int(rng.integers(2, 10))
        lines.append(f"result = result.faces('>Z').workplane().center({length // 4}, 0)"
                     f".circle({boss_r}).extrude({boss_h})")
        words.append(f"and a cylindrical boss of radius {boss_r} mm and height {boss_h} mm offset {length // 4} mm")
    if rng.random() < 0.5:
        lines.append("result = result.edges('|Z').fillet(1)")
        words.append("with its vertical edges filleted by 1 mm")
    return "\n".join(lines) + "\n", ", ".join(words) + "."
