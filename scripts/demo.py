"""`make demo`: run the zoo's GUI-grounding checkpoint on the example screenshot, offline.

Prints the instruction, the parsed box (original pixels) and whether its centre hits the target
element, and writes the screenshot with both boxes drawn to outputs/demo.png.

When `checkpoints/gui-grounding-tiny/` is absent (a checkout without the trained checkpoint),
it says so and runs an UNTRAINED tiny model of the same architecture instead, so that the
pipeline can still be seen end to end; its answers are then noise, and it says that too.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def untrained_checkpoint(out: Path) -> Path:
    """A randomly initialised tiny Qwen2.5-VL saved as a model directory (clearly not a trained model)."""
    from zoo.tiny import build_tiny_vlm

    model, processor = build_tiny_vlm("qwen2_5_vl", seed=0)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "training.json").write_text(json.dumps({"entry": "gui-g1-3b", "trained": False}))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=str(ROOT / "examples" / "screen.png"), help="screenshot to ground on")
    parser.add_argument("--out", default=str(ROOT / "outputs" / "demo.png"), help="where to write the drawing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import zoo
    from zoo.images import load_image
    from zoo.visualize import draw_prediction

    example = json.loads(Path(args.image).with_suffix(".json").read_text())
    instruction, truth = example["instruction"], example["bbox"]
    if (ROOT / "checkpoints" / "gui-grounding-tiny").is_dir():
        pipe = zoo.load("gui-grounding-tiny")
        print(f"model: {pipe.entry.name} — {pipe.entry.notes or pipe.entry.task}")
    else:
        print("NOTE: checkpoints/gui-grounding-tiny is not in this checkout; running an UNTRAINED tiny")
        print("      Qwen2.5-VL (random weights) through the same pipeline. Its answer is noise.")
        pipe = zoo.load(str(untrained_checkpoint(ROOT / "outputs" / "untrained-gui-tiny")))
    pred = pipe(args.image, instruction)
    print(f"instruction: {instruction}")
    print(f"model text:  {pred.text!r}")
    if pred.bbox is None:
        print(f"parsed box:  none ({pred.parse_error})")
        hit = False
    else:
        cx, cy = (pred.bbox[0] + pred.bbox[2]) / 2, (pred.bbox[1] + pred.bbox[3]) / 2
        hit = truth[0] <= cx <= truth[2] and truth[1] <= cy <= truth[3]
        print(f"parsed box:  {[round(v, 1) for v in pred.bbox]} (original pixels); target {truth}")
    print(f"hit:         {'yes' if hit else 'no'} (centre of the predicted box inside the target)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    draw_prediction(load_image(args.image), bbox=pred.bbox, truth=truth, label=instruction).save(out)
    print(f"drawing:     {out} (green: target, red: prediction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
