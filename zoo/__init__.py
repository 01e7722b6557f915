"""A zoo of RL-tuned multimodal models: ``zoo.load(name)`` gives a ready inference pipeline.

Importing ``zoo`` is cheap: it loads the catalog machinery only. Model code (torch,
transformers, diffusers) is imported when a pipeline is built, reward code when a reward is
looked up.
"""

from __future__ import annotations

from zoo.data import Sample
from zoo.domains import Domain
from zoo.kinds import ClipSpec, DiffusionSpec, PolicySpec, VLMSpec
from zoo.load import load  # binds the function over the submodule of the same name
from zoo.outputs import ActionOutput, ImageOutput, Prediction
from zoo.registry import ModelEntry, info, list_models, register

__version__ = "0.1.0"


__all__ = [
    "ActionOutput", "ClipSpec", "DiffusionSpec", "Domain", "ImageOutput", "ModelEntry", "PolicySpec", "Prediction",
    "Sample", "VLMSpec", "info", "list_models", "load", "register",
]
