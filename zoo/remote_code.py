"""Does a model directory ask to run its own Python code? One answer for every way a model is opened.

transformers runs a repository's modelling code when a config's ``auto_map`` names it and the
caller passes ``trust_remote_code=True``; diffusers imports a component's module from the model
folder when ``model_index.json`` names a module file the folder holds. Registry entries
declare this (``ModelEntry.trust_remote_code``); a local directory, an unlisted Hub repository or a
training recipe's model directory declares it only in its files. :func:`require_opt_in` reads those
files, so ``zoo.load(<dir>)``, ``zoo run DIR``, ``zoo eval DIR`` and ``zoo train`` ask for the same
explicit opt-in a registry name needs (transformers' own rule: ``trust_remote_code`` is off by
default, and its SECURITY.md asks users to read the code first).
"""

from __future__ import annotations

from pathlib import Path

from zoo.model_files import FileTooLargeError, read_json


class RemoteCodeError(ValueError):
    """A model directory declares its own code and the caller did not opt in."""


def declared_code(path: Path) -> list[str]:
    """Where ``path`` declares code of its own: ``"<file>: <what>"`` per declaration (empty: none).

    Read: ``auto_map`` in every top-level JSON config (model, processor, tokenizer, image processor)
    and in each diffusers component's ``config.json``; in ``model_index.json`` a ``_class_name``
    ``[module, class]`` or a component ``[library, class]`` whose module file is in the folder
    (``<module>.py``, ``<component>/<library>.py``): what diffusers imports as custom code.
    """
    path = Path(path)
    found = []
    for file in sorted([*path.glob("*.json"), *path.glob("*/config.json")]):
        config = _read_json(file)
        if isinstance(config, dict) and config.get("auto_map"):
            found.append(f"{file.relative_to(path)}: auto_map {config['auto_map']}")
    index = _read_json(path / "model_index.json")
    if isinstance(index, dict):
        # diffusers imports ``<folder>/<module>.py`` for a custom pipeline class or component
        pipeline_class = index.get("_class_name")
        if isinstance(pipeline_class, list) and (path / f"{pipeline_class[0]}.py").is_file():
            found.append(f"model_index.json: custom pipeline {pipeline_class}")
        for component, value in index.items():
            if component.startswith("_") or not isinstance(value, list) or not value or not isinstance(value[0], str):
                continue
            if (path / component / f"{value[0]}.py").is_file():
                found.append(f"model_index.json: component {component!r} from {component}/{value[0]}.py")
    return found


#: How a Python or CLI caller opts in, as the error tells it.
OPT_IN = "trust_remote_code=True (CLI: --trust-remote-code)"


def require_opt_in(path: Path, trust_remote_code: bool, *, how: str = OPT_IN) -> bool:
    """Refuse a directory that declares code unless the caller opted in; returns whether it declares any.

    ``how`` is how the caller opts in where the error is read (``--trust-remote-code`` on the CLI,
    ``model.trust_remote_code=true`` in a recipe).
    """
    found = declared_code(path)
    if found and not trust_remote_code:
        listed = "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")
        raise RemoteCodeError(
            f"{path} asks to run Python code shipped with the model ({listed}). Nothing of it was run. "
            f"Read those files, then pass {how} to allow it"
        )
    return bool(found)


def _read_json(file: Path) -> object:
    """A JSON file's content; ``None`` when absent or unreadable (the loader reports those itself).

    One too large to read is refused instead: whether it declares code cannot be told, and the
    loader that comes next would read it whole."""
    if not file.is_file():
        return None
    try:
        return read_json(file)
    except FileTooLargeError:
        raise
    except (ValueError, OSError):
        return None
