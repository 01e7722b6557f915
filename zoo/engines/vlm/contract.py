"""A recipe's ``model.entry``: the entry's input contract applied to training samples, as ``zoo.load`` applies it.

The pipeline wraps a user's question in the entry's system prompt and user template
(:meth:`zoo.kinds.VLMSpec.user_text`, :meth:`~zoo.kinds.VLMSpec.system_prompt`) and sizes the image
within its pixel limits. A recipe that names the entry trains on exactly that: its dataset yields raw
questions and the loops wrap them here (the GRPO loops, the verl export) or in the SFT example builder,
from the same two methods, so a model trained by the recipe is asked at inference what it learned to answer.
A dataset whose questions are of several kinds (Curr-ReFT's curriculum) names each sample's template
(``meta["template"]``) among the entry's :attr:`~zoo.kinds.VLMSpec.templates`; the pipeline takes the same
name (``template=``). ``model.variant`` trains with one of the entry's named system prompts.
"""

from __future__ import annotations

from dataclasses import replace

from zoo.data import Sample
from zoo.kinds import VLMSpec


def with_contract(sample: Sample, spec: VLMSpec | None) -> Sample:
    """``sample`` with its question wrapped as ``spec`` wraps it (unchanged without a spec), in the entry's
    user template named by ``sample.meta["template"]`` when the dataset asks another kind of question."""
    if spec is None:
        return sample
    system = spec.system_prompt()
    user = {"role": "user", "content": spec.user_text(sample.question, sample.meta.get("template"))}
    return replace(sample, prompt=[{"role": "system", "content": system}, user] if system else [user])
