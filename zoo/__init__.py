"""A zoo of RL-tuned multimodal models: ``zoo.load(name)`` gives a ready inference pipeline.

Importing ``zoo`` is cheap: it loads the catalog machinery only. Model code (torch,
transformers) is imported when a pipeline is built.
"""

from __future__ import annotations

from zoo.data import Sample
from zoo.load import load  # binds the function over the submodule of the same name
from zoo.pipelines.base import Prediction
from zoo.registry import ModelEntry, PromptSpec, info, list_models, register

__version__ = "0.1.0"


__all__ = ["ModelEntry", "Prediction", "PromptSpec", "Sample", "info", "list_models", "load", "register"]
