"""Inference pipelines, one per model kind, imported lazily (``zoo`` stays cheap to import)."""

from __future__ import annotations

from zoo.pipelines.base import Prediction

#: model kind -> "module:function" that builds its pipeline as ``fn(entry, resolved, device, dtype)``
#: (``resolved`` is a :class:`zoo.hub.ResolvedModel`: local directory, revision and source).
LOADERS: dict[str, str] = {
    "vlm": "zoo.pipelines.vlm:load_vlm_pipeline",
    "clip": "zoo.pipelines.clip:load_clip_pipeline",
}

__all__ = ["LOADERS", "Prediction"]
