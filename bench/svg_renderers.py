"""SVG rasterisers at 224 px: skia-python (the ``svg-skia`` kind) against cairosvg (the ``svg`` kind) and resvg-py.

    python bench/svg_renderers.py [--n 100] [--elements 200] [--size 224]

Part 1 renders the same ``--n`` random SVGs of ``--elements`` shapes in this process, one core,
with each library's plain call (cairosvg ``svg2png`` + PNG decode, resvg-py ``svg_to_bytes`` + PNG
decode, skia ``SVGDOM`` straight to an array), and prints ms per render and the ratio to cairosvg.
Part 2 renders them through a one-worker sandboxed pool per kind (``svg`` and ``svg-skia``) with
``render_many``, as rewards call it (batch jobs: the fork, walls and pipe of a job are shared by up
to 16 SVGs), and prints renders/s per core (target >= 50 for skia; ``bench/render_throughput.py``
sets batch jobs against one job per SVG).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np

from rewards.rendering import RenderPool
from rewards.rendering.svg_skia import render_svg_skia

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")


def scene(rng: np.random.Generator, elements: int) -> str:
    """Rects, circles, polygons, cubic paths and lines on a 512-unit canvas with one gradient."""
    parts = [('<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/><stop offset="1" stop-color="#09c"/>'
              '</linearGradient></defs><rect width="512" height="512" fill="url(#g)"/>')]
    for _ in range(elements):
        x, y, r = (int(v) for v in rng.integers(0, 512, 3))
        fill = PALETTE[int(rng.integers(len(PALETTE)))]
        parts.append([f'<rect x="{x}" y="{y}" width="{r // 4}" height="{r // 5}" fill="{fill}"/>',
                      f'<circle cx="{x}" cy="{y}" r="{r // 8}" fill="{fill}" fill-opacity="0.6"/>',
                      f'<polygon points="{x},{y} {x + 30},{y + 50} {x - 30},{y + 40}" fill="{fill}"/>',
                      f'<path d="M{x} {y} C{x + 40} {y - 60} {r} {r} {y} {x}" stroke="{fill}" fill="none"/>',
                      f'<line x1="{x}" y1="{y}" x2="{r}" y2="{x}" stroke="{fill}" stroke-width="2"/>'][_ % 5])
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512">{"".join(parts)}</svg>'


def cairosvg_render(svg: str, size: int) -> np.ndarray:
    import cairosvg
    from PIL import Image

    png = cairosvg.svg2png(bytestring=svg.encode(), output_width=size, output_height=size)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def resvg_render(svg: str, size: int) -> np.ndarray:
    import resvg_py
    from PIL import Image

    png = bytes(resvg_py.svg_to_bytes(svg_string=svg, width=size, height=size))
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def skia_render(svg: str, size: int) -> np.ndarray:
    return np.frombuffer(render_svg_skia(svg.encode(), (size, size)), np.uint8).reshape(size, size, 3)


def in_process(svgs: list[str], size: int) -> dict[str, float]:
    times = {}
    for name, fn in (("cairosvg", cairosvg_render), ("resvg-py", resvg_render), ("skia", skia_render)):
        try:
            fn(svgs[0], size)  # warm imports and caches
        except ImportError as err:
            print(f"{name}: not installed ({err})")
            continue
        per = []
        for svg in svgs:
            start = time.perf_counter()
            fn(svg, size)
            per.append(time.perf_counter() - start)
        times[name] = statistics.median(per) * 1000
    return times


def pooled(svgs: list[str], size: int) -> dict[str, float]:
    rates = {}
    for kind in ("svg", "svg-skia"):
        with RenderPool(1, kinds=(kind,)) as pool:
            pool.render_many(kind, svgs[:4], size=(size, size))
            start = time.perf_counter()
            results = pool.render_many(kind, svgs, size=(size, size))
            elapsed = time.perf_counter() - start
        failed = sum(not r.ok for r in results)
        if failed:
            raise RuntimeError(f"{failed} of {len(svgs)} {kind} renders failed: {results[0].error}")
        rates[kind] = len(svgs) / elapsed
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--elements", type=int, default=200)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    svgs = [scene(rng, args.elements) for _ in range(args.n)]
    print(f"{args.n} SVGs of {args.elements} elements ({len(svgs[0]) // 1024} KiB each), {args.size} px")
    times = in_process(svgs, args.size)
    for name, ms in times.items():
        print(f"in process  {name:9s} {ms:7.2f} ms/render  cairosvg/{name} = {times['cairosvg'] / ms:5.2f}x")
    rates = pooled(svgs, args.size)
    for kind, rate in rates.items():
        print(f"sandboxed   {kind:9s} {rate:7.1f} renders/s on one worker (one core)")
    print(f"sandboxed ratio svg-skia / svg = {rates['svg-skia'] / rates['svg']:.2f}x")


if __name__ == "__main__":
    main()
