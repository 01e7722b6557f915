"""The one sample type every loader yields and every exporter consumes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.domains import register_all
from zoo.import_strings import resolve
from zoo_common.registry import Registry

if TYPE_CHECKING:
    from PIL import Image


@dataclass(frozen=True)
class Sample:
    """One training or evaluation example.

    Attributes:
        id: stable identifier (file name, record index) so results can be traced back.
        images: PIL images, paths or encoded image bytes (decoded by :func:`zoo.images.load_image`
            when used, so a table of large images is not all decoded at load), in the order the
            prompt refers to them.
        prompt: chat messages (``[{"role": "user", "content": [...]}]``) or the bare question text.
        target: the task's ground truth, e.g. ``{"bbox": [x1, y1, x2, y2], "image_size": [w, h]}``
            in original-image pixels, or ``{"answer": "B"}``.
        meta: anything else (platform, element type, difficulty ``rate``) passed through to rewards
            and evaluation.
    """

    id: str
    images: tuple[Image.Image | str | bytes, ...] = ()
    prompt: str | list[dict[str, Any]] = ""
    target: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def question(self) -> str:
        """The text of the prompt (the last user text when ``prompt`` is a message list)."""
        if isinstance(self.prompt, str):
            return self.prompt
        for message in reversed(self.prompt):
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [c.get("text", "") for c in content or [] if c.get("type") == "text"]
            if texts:
                return "\n".join(texts)
        return ""


def path_under(root: str | Path, name: str, where: str) -> Path:
    """``root / name`` for a file name read from a dataset's annotation file, refusing one that leaves ``root``.

    Annotation files name their images relative to the dataset folder; an absolute path or a ``..``
    would let a crafted file make the zoo read (and feed to a model, or draw into a report) any file
    on the machine. The check is on the name itself, so symlinked image folders keep working.
    """
    relative = Path(str(name))
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(
            f"{where}: image path {str(name)!r} points outside the data folder {str(root)!r}; "
            "annotation files must name images relative to it"
        )
    return Path(root) / relative


def take(samples: Iterable[Sample], n: int) -> Iterator[Sample]:
    """The first ``n`` samples of a (possibly endless) generator."""
    for i, sample in enumerate(samples):
        if i >= n:
            return
        yield sample


# Dataset loaders are registered by name as "module:function" strings (a domain's descriptor
# lists them) so that listing them imports nothing; the function is imported when asked for.
DATASETS: Registry[str] = Registry("dataset", discover=lambda: register_all(DATASETS, "datasets"))


def register_dataset(name: str, target: str) -> str:
    """Register a loader ``"package.module:function"`` returning an iterable of :class:`Sample`."""
    if ":" not in target:
        raise ValueError(f"dataset target must look like 'package.module:function', got {target!r}")
    return DATASETS.register(name, target)


# Answer formats turn a sample's ground truth into the assistant text an SFT stage teaches
# (``data.answer_format`` of a ``vlm-sft`` recipe); registered the same way, from descriptors.
ANSWER_FORMATS: Registry[str] = Registry("answer format",
                                         discover=lambda: register_all(ANSWER_FORMATS, "answer_formats"))


def register_answer_format(name: str, target: str) -> str:
    """Register ``"package.module:function"`` mapping a :class:`Sample` to its reference answer text."""
    if ":" not in target:
        raise ValueError(f"answer format target must look like 'package.module:function', got {target!r}")
    return ANSWER_FORMATS.register(name, target)


def answer_format(name: str) -> Callable[[Sample], str]:
    """The function registered under ``name`` (any domain's: :data:`ANSWER_FORMATS` discovers them)."""
    return resolve(ANSWER_FORMATS.get(name), what=f"answer format {name!r}")


def load_dataset(name: str, **kwargs: Any) -> Iterable[Sample]:
    """Call the loader registered under ``name`` with ``kwargs`` (path, split, n, seed, ...)."""
    return resolve(DATASETS.get(name), what=f"dataset {name!r}")(**kwargs)


def read_records(path: Path) -> list[dict[str, Any]]:
    """A JSON list (``.json``) or JSON-lines (``.jsonl``) annotation file as a list of objects.

    Every published benchmark format the loaders read is one of the two; errors name the file and
    say what was expected, so a wrong download is a sentence, not a traceback.
    """
    import json

    if not path.is_file():
        raise FileNotFoundError(f"annotation file {str(path)!r} does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{str(path)!r} is not valid JSON ({err}); expected the published annotation file") from err
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{str(path)!r} must hold a list of JSON objects (one per sample)")
    return records


def record_field(record: dict[str, Any], key: str, where: str) -> Any:
    """``record[key]``, or a ``ValueError`` naming the record (``where``) and the fields it has."""
    if key not in record:
        raise ValueError(f"{where}: missing field {key!r} (fields present: {sorted(record)})")
    return record[key]
