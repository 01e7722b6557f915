"""``prompt-list``: text-to-image training prompts from a plain text file, one prompt per line.

The format Flow-GRPO (yifan123/flow_grpo ``dataset/pickscore/train.txt``, ``dataset/ocr/train.txt``) and
DanceGRPO (``assets/prompts.txt``: HPD v2 prompts, its README says) train from; any file of that shape works. Blank lines are skipped;
lines are stripped, kept in file order, and numbered by line so a sample id points back into the file.

Every prompt file of the field (this one, ``zoo eval --data ocr|geneval --path``) is read by :func:`prompt_lines`.
"""

from __future__ import annotations

from pathlib import Path

from zoo.data import Sample
from zoo.model_files import read_bounded

#: Largest prompt file read (bytes): a million prompts of 60 characters. GenEval's metadata is ~100 KB, DanceGRPO's
#: HPD prompts and Flow-GRPO's training lists a few MB.
MAX_PROMPT_FILE_BYTES = 64 << 20


def prompt_lines(path: str | Path, what: str) -> list[tuple[int, str]]:
    """``(line number, stripped text)`` of every non-blank line of ``path``, a UTF-8 text file.

    Read only as a regular file under :data:`MAX_PROMPT_FILE_BYTES` (an 8 GiB sparse file was read as one line into
    a ``MemoryError``); a file without a prompt is refused here, in a sentence naming it, rather than by whatever
    would next need one (an empty evaluation said ``grid() needs at least one image``).
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{what}: {str(path)!r} does not exist; give a text file with one prompt per line")
    try:
        text = read_bounded(path, MAX_PROMPT_FILE_BYTES, "a prompt file").decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{what}: {str(path)!r} is not UTF-8 text ({err})") from None
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise ValueError(f"{what}: {str(path)!r} holds no prompts (it is empty, or every line is blank)")
    return lines


def load_prompt_list(path: str | Path, n: int | None = None) -> list[Sample]:
    """The first ``n`` (all when ``None``) non-blank lines of ``path`` as prompt-only samples."""
    samples = [Sample(id=f"line-{number}", prompt=line) for number, line in prompt_lines(path, "prompt-list")]
    return samples if n is None else samples[:n]
