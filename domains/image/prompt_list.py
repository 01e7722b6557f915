"""``prompt-list``: text-to-image training prompts from a plain text file, one prompt per line.

The format Flow-GRPO (yifan123/flow_grpo ``dataset/pickscore/train.txt``, ``dataset/ocr/train.txt``) and
DanceGRPO (``assets/prompts.txt``: HPD v2 prompts, its README says) train from; any file of that shape works. Blank lines are skipped;
lines are stripped, kept in file order, and numbered by line so a sample id points back into the file.
"""

from __future__ import annotations

from pathlib import Path

from zoo.data import Sample


def load_prompt_list(path: str | Path, n: int | None = None) -> list[Sample]:
    """The first ``n`` (all when ``None``) non-blank lines of ``path`` as prompt-only samples."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"prompt-list: {str(path)!r} does not exist; give a text file with one prompt per "
                                "line (e.g. DanceGRPO's assets/prompts.txt)")  # fmt: skip
    samples = [Sample(id=f"line-{i + 1}", prompt=line.strip())
               for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()) if line.strip()]  # fmt: skip
    if not samples:
        raise ValueError(f"prompt-list: {str(path)!r} holds no prompts (every line is blank)")
    return samples if n is None else samples[:n]
