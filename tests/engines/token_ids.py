"""The token ids a sample becomes, on either side of the input contract: what ``zoo.load``'s pipeline tokenises
and what the GRPO trainer tokenises (TRL's own ``prepare_multimodal_messages`` and the processor's chat template,
as ``GRPOTrainer._tokenize_prompts`` runs them), image tokens included."""

from __future__ import annotations

from typing import Any

from trl.data_utils import prepare_multimodal_messages

from zoo.engines.vlm.trl_data import to_trl_dataset


def pipeline_ids(pipe: Any, image: Any, question: str) -> list[int]:
    """The ids the pipeline feeds the model for ``question`` about ``image``."""
    _, resized = pipe.prepare(image)
    text = pipe.processor.apply_chat_template(pipe.messages(resized, question), add_generation_prompt=True,
                                              tokenize=False)  # fmt: skip
    return pipe.processor(text=[text], images=[resized], return_tensors="pt")["input_ids"][0].tolist()


def trainer_ids(processor: Any, samples: list[Any]) -> list[list[int]]:
    """The ids the GRPO trainer feeds the policy for each of ``samples`` (already wrapped by the contract)."""
    dataset = to_trl_dataset(samples, processor=processor)
    prompts = [prepare_multimodal_messages(row["prompt"], images=row["images"]) for row in dataset]
    tokenized = processor.apply_chat_template(conversation=prompts, add_generation_prompt=True, tokenize=True,
                                              return_dict=True)  # fmt: skip
    return [list(ids) for ids in tokenized["input_ids"]]
