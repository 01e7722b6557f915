"""``python -m domains.gui.demo``: the shipped tiny GUI-grounding model on the example screenshot.

Prints the instruction, the raw answer, the parsed box (original pixels) and whether its centre
hits the button, and writes the screenshot with the truth (green) and the prediction (magenta).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gui-grounding-tiny", help="zoo model name or directory")
    parser.add_argument("--image", type=Path, default=ROOT / "examples/screen.png")
    parser.add_argument("--out", type=Path, default=ROOT / "outputs/demo/screen_pred.png")
    args = parser.parse_args(argv)

    import zoo
    from domains.gui.evaluate import click_point, point_in_box
    from zoo.images import load_image
    from zoo.visualize import draw_prediction

    meta = json.loads(args.image.with_suffix(".json").read_text())
    pipe = zoo.load(args.model)
    pred = pipe(str(args.image), meta["instruction"])
    hit = point_in_box(click_point(pred), meta["bbox"])
    print(f"model:        {pipe.entry.name} ({pipe.source}): {pipe.entry.task}")
    print(f"instruction:  {meta['instruction']}")
    print(f"answer:       {pred.text.strip()}")
    if pred.bbox is None:
        print(f"parsed box:   none ({pred.parse_error})")
    else:
        width, height = meta["image_size"]
        box = ", ".join(f"{v:.1f}" for v in pred.bbox)
        seen = "x".join(str(v) for v in pred.extra.get("model_frame_size", []))
        print(f"parsed box:   [{box}] (pixels of the {width}x{height} screenshot; the model saw it at {seen})")
    print(f"target box:   {meta['bbox']}")
    print(f"hit:          {hit}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    draw_prediction(load_image(str(args.image)), bbox=pred.bbox, truth=meta["bbox"],
                    label=meta["instruction"]).save(args.out)  # fmt: skip
    print(f"drawn:        {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
