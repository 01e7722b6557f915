"""Image uploads on the pages: a preview in the browser, and the zoo's own reading of the file on the server.

Gradio's ``gr.Image`` reads an upload itself before the handler runs, so a broken file failed inside
Gradio with a bare "Error" (the page's ``show_error`` is off) instead of the zoo's sentence in the status
line. :func:`image_upload` is that component handing the handler the uploaded file's path unread;
:func:`read_upload` reads it with :func:`zoo.images.load_image` (broken, non-image and oversized files
refused by name) and names the file as the user knows it, never by the server's temporary path.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

from zoo.images import ImageError, load_image


def image_upload(**options: Any) -> gr.Image:
    """``gr.Image(type="filepath", format="png", **options)`` (preview, drag and drop, paste) whose value reaches the
    handler as the uploaded file's path, unread.

    zoo: the reading is replaced on the instance, not in a subclass: gradio writes a ``.pyi`` stub beside the module
    of every component class it sees defined, which an installed (read-only) package cannot take.
    """
    component = gr.Image(type="filepath", format="png", **options)
    component.preprocess = functools.partial(_path_unread, component)  # type: ignore[method-assign]
    return component


def _path_unread(component: gr.Image, payload: Any) -> str | None:
    """The path of the upload on the server (gradio has already checked that it is one of its uploads); an image
    pasted as a data URL is written to a file by gradio's own reading first."""
    if payload is None:
        return None
    return payload.path if payload.path is not None else gr.Image.preprocess(component, payload)


def read_upload(path: str | None, what: str = "an image") -> Image.Image:
    """The uploaded image; a missing upload or an unreadable file is a :class:`ImageError` naming the file only."""
    if not path:
        raise ImageError(f"upload {what} first")
    try:
        return load_image(path)
    except ImageError as err:
        raise ImageError(str(err).replace(str(path), Path(path).name)) from None
