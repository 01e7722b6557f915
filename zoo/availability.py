"""Whether an entry's weights can be used here and now, decided once for ``zoo list`` and the docs' model table.

Four answers, from the most to the least ready:

- ``runs offline here``: the weights are on this machine (a checkpoint shipped in ``checkpoints/``, or, when the
  cache is consulted, the entry's Hub repository and its base's already in the Hugging Face cache);
- ``needs download``: public weights on the Hub, not yet in the cache;
- ``gated``: the Hub repository, or that of the base pipeline it is applied on, asks to accept a licence first;
- ``not released``: no weights the zoo can load (none published, or a shipped checkpoint missing from this
  installation).
"""

from __future__ import annotations

from typing import Literal

from zoo.registry import ModelEntry, info

Availability = Literal["runs offline here", "needs download", "gated", "not released"]

#: every answer of :func:`availability`, most ready first.
AVAILABILITIES: tuple[Availability, ...] = ("runs offline here", "needs download", "gated", "not released")


def availability(entry: ModelEntry, *, look_in_cache: bool = True) -> Availability:
    """How ready ``entry``'s weights are (module docstring).

    ``look_in_cache=False`` leaves the Hugging Face cache out, so the answer is the same on every machine (the docs
    site is built once and read everywhere); ``zoo list`` looks, so a downloaded model reads as ready.
    """
    from zoo.hub import CHECKPOINTS_DIR

    if not entry.released:
        return "not released"
    if (CHECKPOINTS_DIR / entry.name).is_dir():  # what zoo.load reads first (zoo.hub.resolve)
        return "runs offline here"
    if entry.repo_id is None:
        return "not released"
    chain = _with_bases(entry)
    if look_in_cache and all(_in_cache(e) for e in chain):
        return "runs offline here"
    return "gated" if any(e.gated for e in chain) else "needs download"


def _with_bases(entry: ModelEntry) -> list[ModelEntry]:
    """``entry`` and the entries its weights are applied on (a LoRA's base pipeline names it as ``base_entry``)."""
    chain = [entry]
    while (base := getattr(chain[-1].spec, "base_entry", "")) and len(chain) < 8:  # 8: a cycle cannot hang a listing
        chain.append(info(base))
    return chain


def _in_cache(entry: ModelEntry) -> bool:
    """Whether the files ``zoo.load`` fetches for ``entry`` are in the Hugging Face cache (nothing is downloaded)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from zoo.hub import allow_patterns

    if entry.repo_id is None:
        return False
    try:
        snapshot_download(entry.repo_id, revision=entry.revision, allow_patterns=allow_patterns(entry),
                          local_files_only=True)  # fmt: skip
    except LocalEntryNotFoundError:
        return False
    return True
