"""A recipe's ``model.entry``: the entry's input contract applied to training samples, as ``zoo.load`` applies it.

The pipeline wraps a user's question in the entry's system prompt and user template
(:meth:`zoo.kinds.VLMSpec.user_text`, :meth:`~zoo.kinds.VLMSpec.system_prompt`) and sizes the image
within its pixel limits. A recipe that names the entry trains on exactly that: its dataset yields raw
questions and the loops wrap them here (the GRPO loops, the verl export) or in the SFT example builder,
from the same two methods, so a model trained by the recipe is asked at inference what it learned to answer.
A dataset whose questions are of several kinds (Curr-ReFT's curriculum) names each sample's template
(``meta["template"]``) among the entry's :attr:`~zoo.kinds.VLMSpec.templates`; the pipeline takes the same
name (``template=``). ``model.variant`` trains with one of the entry's named system prompts.

The multi-turn loops (UI-S1's semi-online RL, the multi-turn SFT, the GUI agent evaluation) apply it per
step with :func:`with_turn_contract`: the system prompt opens the dialogue, the first turn wraps the goal,
later turns are the entry's :data:`NEXT_TURN` template.
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


#: The entry's template of a trajectory's later turns (:func:`with_turn_contract`); without one, every turn is
#: asked in the entry's user template (the goal repeated, UI-S1's ``repeat_query`` layout).
NEXT_TURN = "next-turn"
#: The entry's template of a step's low-level instruction, appended to the turn of a sample that shows it
#: (``meta["instruction_level"] == "low"``, AndroidControl-Low); ``{question}`` is ``meta["step_instruction"]``.
#: An entry without one was not taught low-level instructions: its turns are asked without them.
STEP_INSTRUCTION = "step-instruction"


def with_turn_contract(sample: Sample, spec: VLMSpec | None) -> Sample:
    """One step of a trajectory (``meta["step"]``, its goal the question) as the turn the multi-turn loops add to
    the dialogue under ``spec`` (unchanged without a spec): the entry's system prompt opens the dialogue and the
    first turn is its user template around the goal (``meta["template"]`` names another, as in
    :func:`with_contract`); later turns are its :data:`NEXT_TURN` template (UI-S1's continuing turns carry the
    output format only), or the user template again when it has none; a sample showing its low-level
    instruction gets the entry's :data:`STEP_INSTRUCTION` template appended. The screenshot's place in the turn
    is the entry's ``image_first``, which the loops pass to the rollout
    (:func:`zoo.engines.vlm.semi_online_rollout.semi_online_rollout`, ``expert_turns``).

    ``zoo.load``'s pipeline asks single questions: a trajectory's first turn is what it builds for the goal;
    the later turns, the history and the screenshots kept are the loops' (UI-S1's ``gen_next_round``)."""
    if spec is None:
        return sample
    first = sample.meta.get("step", 0) == 0
    template = sample.meta.get("template")
    if not first and NEXT_TURN in spec.templates:
        template = NEXT_TURN
    text = spec.user_text(sample.question, template)
    if sample.meta.get("instruction_level") == "low" and STEP_INSTRUCTION in spec.templates:
        text += spec.user_text(str(sample.meta.get("step_instruction") or ""), STEP_INSTRUCTION)
    system = spec.system_prompt() if first else None
    user = {"role": "user", "content": text}
    return replace(sample, prompt=[{"role": "system", "content": system}, user] if system else [user])
