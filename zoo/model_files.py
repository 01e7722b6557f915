"""Reading the files a model folder ships, so that a hostile one ends in one line naming it.

Model folders are handed around (a colleague's run, a tarball, a Hub snapshot): a ``config.json``
can be an 8 GiB sparse file (nothing on disk, all of it in memory once read), a FIFO, or the
weights' safetensors header can claim 2^62 bytes. The loaders read JSON only through
:func:`read_json`, which looks at the file's size before reading it, and check the weights with
:func:`check_safetensors` before a library reads them; either refuses with a :class:`ModelFileError`
(a ``ValueError``, which the CLI prints as one ``error:`` line). Other handed files (a policy's
``--observation``, prompt files) are read through the same :func:`read_bounded`.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

#: The file that says how to build a model folder's model, by kind (:data:`zoo.kinds.SPECS`): the one
#: table :func:`zoo.load.infer_kind` reads a folder's kind from (in this order, the more specific first:
#: an open_clip repository may ship a transformers ``config.json`` beside its own) and of which
#: :func:`zoo.push.select_files` requires, and uploads, one at the top of a folder.
CONFIG_FILES: Mapping[str, str] = {
    "diffusion": "model_index.json",  # a diffusers pipeline; its components hold their own config.json
    "clip": "open_clip_config.json",  # open_clip's Hub layout
    "policy": "policy_config.json",  # zoo.pipelines.policy.save_policy
    "vlm": "config.json",  # transformers
}

#: Largest JSON file of a model folder that is read (bytes). Big tokenizers' ``tokenizer.json`` are ~35 MB.
MAX_JSON_BYTES = 64 << 20


class ModelFileError(ValueError):
    """A file of a model folder is not what the loader can safely read; the message names it."""


class FileTooLargeError(ModelFileError):
    """A model folder's JSON file exceeds :data:`MAX_JSON_BYTES`; it was not read."""


def read_bounded(file: str | Path, limit: int, what: str) -> bytes:
    """The bytes of ``file``, read only when it is a regular file of at most ``limit`` bytes.

    The one check every handed file goes through before it is read (model folders' JSON, a policy's
    ``--observation`` file, prompt files): a FIFO would block the read forever, ``/dev/zero`` never ends and an
    8 GiB sparse file costs nothing on disk but all of it in memory. ``what`` names the file's role in the
    errors (``"a model folder's JSON file"``).

    Raises:
        FileTooLargeError: the file is larger than ``limit`` (stated from its size, nothing read).
        ModelFileError: it is not a regular file.
        OSError: it cannot be opened (``FileNotFoundError`` when it does not exist).
    """
    info = os.stat(file)  # follows a symlink: the size of what open() would read
    if not stat.S_ISREG(info.st_mode):
        raise ModelFileError(f"{file} is not a regular file (a pipe or device would block or never end); "
                             f"{what} is read from a plain file")  # fmt: skip
    if info.st_size > limit:
        raise FileTooLargeError(f"{file} is {info.st_size:,} bytes; {what} may be at most {limit:,} bytes, so it "
                                "was not read")  # fmt: skip
    with open(file, "rb") as handle:
        data = handle.read(limit + 1)  # bounded even if the file grew after the stat
    if len(data) > limit:
        raise FileTooLargeError(f"{file} grew past {limit:,} bytes while being read; it was not parsed")
    return data


def read_json(file: Path, *, limit: int = MAX_JSON_BYTES, what: str = "a model folder's JSON file") -> Any:
    """The content of ``file``, read through :func:`read_bounded` (a regular file of at most ``limit`` bytes).

    Raises:
        FileTooLargeError: the file is larger than ``limit`` (stated from its size, nothing read).
        ModelFileError: it is not a regular file (a FIFO would block, a device never ends) or not JSON.
        OSError: it cannot be opened.
    """
    data = read_bounded(file, limit, what)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ModelFileError(f"{file} is not valid JSON ({err})") from None


def npy_header(stream: IO[bytes]) -> tuple[tuple[int, ...], Any]:
    """The shape and dtype an ``.npy`` stream's header claims, read without its data (NumPy's own header parser).

    ``np.load`` allocates what the header claims before it reads a byte of data, so a handed array (a replay
    buffer's member, an ``--observation`` file) is held to what it may be from this first. Raises ``ValueError``
    for a malformed header (``EOFError`` for a cut one)."""
    from numpy.lib import format as npy

    version = npy.read_magic(stream)
    shape, _, dtype = (npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0)(stream)
    return shape, dtype


def check_safetensors(file: Path) -> None:
    """Refuse a weights file whose safetensors header is malformed, before a library reads it.

    ``safe_open`` parses only the header and checks it against the file's length (lengths, offsets,
    dtypes), allocating nothing for the tensors; its own ``SafetensorError`` names no file, and
    transformers lets it escape as a long traceback.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), framework="numpy"):
            pass
    except SafetensorError as err:
        raise ModelFileError(f"{file} is not a valid safetensors file ({err})") from None
