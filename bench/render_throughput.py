"""Render throughput: the warm sandboxed pool versus a fresh Python subprocess per sample.

    python bench/render_throughput.py [--n 64] [--workers 2] [--size 256]

Both sides render the same 64 matplotlib charts and 64 SVGs at the same size with the same
parallelism (``--workers`` at a time); the baseline is what chart-to-code evaluators do
(ChartMimic runs ``python3 file.py`` per sample): one interpreter per render, importing
matplotlib or cairosvg each time, with no sandbox at all. The pool's start-up is timed
separately and excluded from its rate (it is paid once per training run).
Prints renders/s for both, the ratio (target >= 8x for matplotlib) and SVG renders/s per core.

Last, SVG per core at 224 px with skia (the ``svg-skia`` kind, 200-element scenes of
``bench/svg_renderers.py``) on one worker, so one core: one sandboxed job per SVG (``max_batch=1``,
how the pool rendered SVG before batch jobs) against batch jobs (the default, see
:mod:`rewards.rendering.batching`), with the ratio after / before (target >= 50 renders/s per core).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from svg_renderers import scene  # bench/, beside this script

from rewards.rendering import RenderPool
from rewards.rendering.batching import DEFAULT_MAX_BATCH

BASELINE = {
    "matplotlib": """
import io, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
w, h = int(sys.argv[1]), int(sys.argv[2])
exec(compile(sys.stdin.read(), "<model-code>", "exec"), {"__name__": "__main__"})
fig = plt.gcf()
fig.set_dpi(100)
fig.set_size_inches(w / 100, h / 100)
fig.savefig(io.BytesIO(), format="png", dpi=100)
""",
    "svg": """
import io, sys
from cairosvg.surface import PNGSurface
from PIL import Image
w, h = int(sys.argv[1]), int(sys.argv[2])
png = PNGSurface.convert(sys.stdin.buffer.read(), output_width=w, output_height=h)
Image.open(io.BytesIO(png)).convert("RGB")
""",
}


def make_chart(rng: random.Random) -> str:
    kind = rng.choice(["bar", "plot", "scatter", "pie"])
    values = [round(rng.uniform(1, 10), 2) for _ in range(rng.randint(4, 9))]
    labels = [f"c{i}" for i in range(len(values))]
    call = {"bar": f"ax.bar({labels!r}, {values!r}, color='tab:blue')",
            "plot": f"ax.plot({values!r}, marker='o')",
            "scatter": f"ax.scatter(range({len(values)}), {values!r}, s=40)",
            "pie": f"ax.pie({values!r}, labels={labels!r})"}[kind]
    return (f"import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(6, 4))\n{call}\n"
            f"ax.set_title('chart {rng.randint(0, 999)}')\nplt.tight_layout()\n")


def make_svg(rng: random.Random, elements: int = 100) -> str:
    parts = []
    for i in range(elements):
        x, y, r = rng.randint(0, 200), rng.randint(0, 200), rng.randint(3, 30)
        color = f"#{rng.randint(0, 0xFFFFFF):06x}"
        parts.append([f'<rect x="{x}" y="{y}" width="{r}" height="{r}" fill="{color}"/>',
                      f'<circle cx="{x}" cy="{y}" r="{r}" fill="{color}" opacity="0.6"/>',
                      f'<path d="M{x} {y} Q {x + r} {y - r} {x + 2 * r} {y}" stroke="{color}" fill="none"/>',
                      f'<text x="{x}" y="{y}" font-size="{r}">t{i}</text>'][i % 4])
    return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 240 240">{"".join(parts)}</svg>'


def fresh_subprocess(kind: str, source: str, size: int) -> bool:
    done = subprocess.run([sys.executable, "-c", BASELINE[kind], str(size), str(size)], input=source.encode(),
                          capture_output=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"}, check=False)
    return done.returncode == 0


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def skia_per_core(n: int, size: int = 224) -> dict[str, float]:
    """svg-skia renders/s on one worker: one job per SVG, then the default batch jobs."""
    import numpy as np

    rng = np.random.default_rng(0)
    svgs = [scene(rng, 200) for _ in range(n)]
    rates = {}
    for label, max_batch in (("one job per SVG", 1), (f"batches of <= {DEFAULT_MAX_BATCH}", DEFAULT_MAX_BATCH)):
        with RenderPool(1, kinds=("svg-skia",), max_batch=max_batch) as pool:
            pool.render_many("svg-skia", svgs[:4], size=(size, size))  # first-touch warm-up
            elapsed, results = timed(partial(pool.render_many, "svg-skia", svgs, size=(size, size)))
        if not all(r.ok for r in results):
            raise RuntimeError(f"svg-skia renders failed: {[r.error for r in results if not r.ok][:3]}")
        rates[label] = n / elapsed
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=64, help="samples per kind")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="parallel renders")
    parser.add_argument("--size", type=int, default=256, help="output side in pixels")
    args = parser.parse_args()
    rng = random.Random(0)
    sources = {"matplotlib": [make_chart(rng) for _ in range(args.n)], "svg": [make_svg(rng) for _ in range(args.n)]}
    startup, pool = timed(lambda: RenderPool(args.workers).start())
    print(f"pool start-up: {startup:.2f} s for {args.workers} workers; sandbox: "
          f"{ {k: v for k, v in pool.isolation.items() if isinstance(v, bool)} }")
    cores = min(args.workers, os.cpu_count() or 1)
    try:
        for kind in ("matplotlib", "svg"):
            batch, size = sources[kind], (args.size, args.size)
            pool.render(kind, batch[0], size=size)  # first-touch warm-up
            t_pool, results = timed(partial(pool.render_many, kind, batch, size=size, timeout=60))
            failed = [r.error for r in results if not r.ok]
            with ThreadPoolExecutor(args.workers) as ex:
                t_fresh, oks = timed(partial(list, ex.map(partial(fresh_subprocess, kind, size=args.size), batch)))
            rate_pool, rate_fresh = args.n / t_pool, args.n / t_fresh
            print(f"{kind:10s} pool {rate_pool:7.2f} renders/s | fresh subprocess {rate_fresh:6.2f} renders/s | "
                  f"ratio {rate_pool / rate_fresh:5.1f}x | failures pool={len(failed)} fresh={oks.count(False)}")
            if kind == "svg":
                print(f"svg        pool {rate_pool / cores:7.2f} renders/s per core ({cores} cores)")
    finally:
        pool.close()
    before, after = skia_per_core(args.n).items()
    for label, rate in (before, after):
        print(f"svg-skia   224 px, one worker: {rate:7.2f} renders/s per core ({label})")
    print(f"svg-skia   batch jobs / one job per SVG = {after[1] / before[1]:.2f}x")


if __name__ == "__main__":
    main()
