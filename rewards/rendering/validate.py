"""Checks done in the caller's process before a source reaches a worker.

Caller mistakes (unknown kind, a size of 0) raise ``ValueError``: they are bugs in the reward.
Source problems (empty, not UTF-8, too large, gzip) are the model's output and come back as
``RenderResult(status="invalid")`` with the reason, without spending a worker.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

#: Every kind a pool can serve; DEFAULT_KINDS are those a pool preloads when none are named
#: (the optional ones need extra packages: skia-python for ``svg-skia``, cadquery for ``cadquery*``).
KINDS = ("svg", "matplotlib", "svg-skia", "matplotlib-facts", "cadquery", "cadquery-geometry")
DEFAULT_KINDS = ("svg", "matplotlib")
#: Kind -> (module its worker imports, how to install it), checked before a pool starts a worker that would die on it.
KIND_PACKAGES = {"svg-skia": ("skia", "pip install skia-python"),
                 "cadquery": ("cadquery", "pip install -e '.[cad]' (cadquery)"),
                 "cadquery-geometry": ("cadquery", "pip install -e '.[cad]' (cadquery)")}  # fmt: skip
#: What a kind's renderer needs beyond its Python package, said when the worker cannot import it.
KIND_LIBRARIES = {"svg": "cairosvg needs the cairo C library (Debian/Ubuntu: apt-get install libcairo2; conda: "
                         "conda install cairo; macOS: brew install cairo)",
                  "svg-skia": "skia-python needs its wheel's libraries (Debian/Ubuntu: apt-get install libgl1 "
                              "libfontconfig1)"}  # fmt: skip
MAX_SIDE = 4096
Source = str | bytes


def check_installed(kinds: Sequence[str]) -> None:
    """``ImportError`` naming the install command when a kind's renderer package is missing (a worker started
    without it would only die with a traceback)."""
    import importlib.util

    for kind in kinds:
        module, install = KIND_PACKAGES.get(kind, (None, ""))
        if module and importlib.util.find_spec(module) is None:
            raise ImportError(f"render kind {kind!r} needs the {module!r} package, which is not installed: {install}")


class RendererUnavailableError(ImportError):
    """A render kind's renderer cannot be imported on this machine (its package or a C library is missing)."""

    def __init__(self, kind: str, error: str) -> None:
        hint = KIND_LIBRARIES.get(kind, "")
        super().__init__(f"render kind {kind!r} cannot load its renderer here: {error}" + (f". {hint}" if hint else ""))
        self.kind = kind


def check_request(kind: str, size: Sequence[int], timeout: float,
                  kinds: Sequence[str]) -> tuple[tuple[int, int], float]:
    """Validated ``(width, height)`` and timeout, or ``ValueError`` naming the bad value."""
    if kind not in kinds:
        raise ValueError(f"render kind {kind!r} is not served by this pool; available: {list(kinds)}")
    try:
        width, height = (operator.index(v) for v in size)
    except (TypeError, ValueError):
        width = height = 0
    if isinstance(size, (str, bytes)) or not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise ValueError(f"size must be (width, height) with integers in 1..{MAX_SIDE}, got {size!r}")
    if not (isinstance(timeout, (int, float)) and 0 < timeout <= 600):
        raise ValueError(f"timeout must be a number of seconds in (0, 600], got {timeout!r}")
    return (width, height), float(timeout)


def prepare_source(kind: str, source: Source, max_bytes: int) -> tuple[bytes, str | None]:
    """UTF-8 bytes of ``source`` and ``None``, or ``b""`` and the reason it cannot be rendered."""
    if isinstance(source, str):
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as err:  # lone surrogates
            return b"", f"source is not encodable as UTF-8 ({err.reason} at character {err.start})"
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if kind == "svg" and data[:2] == b"\x1f\x8b":
            return b"", "gzip-compressed SVG (svgz) is refused: it can hide a decompression bomb"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            return b"", f"source is not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})"
    else:
        return b"", f"source must be str or bytes, got {type(source).__name__}"
    if len(data) > max_bytes:
        return b"", (f"source is {len(data)} bytes, over the {max_bytes}-byte limit "
                     "(RenderPool(max_source_bytes=...) raises it)")
    if not data.strip():
        return b"", "source is empty"
    if b"\x00" in data:
        return b"", "source contains NUL bytes"
    return data, None
