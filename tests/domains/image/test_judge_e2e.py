"""The EditScore judge end to end, offline: a tiny Qwen2.5-VL laid out in a Hugging Face cache as
``Qwen/Qwen2.5-VL-7B-Instruct`` and a PEFT LoRA on it as ``EditScore/EditScore-7B``; ``zoo.load("editscore-7b")``
merges the LoRA into the base (as the authors' ``mllm_tools/qwen25vl.py`` does) and ``JudgePipeline.ask`` puts
several images per question in their chat layout; the ``editscore`` reward reads what comes back."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

import zoo
from domains.image.editscore import chat_text, pq_prompt, sc_prompt
from domains.image.editscore_reward import EditScoreReward
from domains.image.pipelines import JudgePipeline
from zoo.tiny import build_tiny_vlm


@pytest.fixture
def judge_cache(tmp_path, hf_cache, install):
    """The base and the LoRA in the cache; returns the merged reference model and processor built by hand."""
    from peft import LoraConfig, PeftModel, get_peft_model

    model, processor = build_tiny_vlm("qwen2_5_vl", seed=0)
    model.save_pretrained(tmp_path / "base", safe_serialization=True)
    processor.save_pretrained(tmp_path / "base")
    install(tmp_path / "base", "Qwen/Qwen2.5-VL-7B-Instruct", hf_cache)
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights="gaussian"))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    lora.save_pretrained(tmp_path / "lora")
    install(tmp_path / "lora", "EditScore/EditScore-7B", hf_cache)
    base, _ = build_tiny_vlm("qwen2_5_vl", seed=0)
    reference = PeftModel.from_pretrained(base, tmp_path / "lora").merge_and_unload().eval()
    return reference, processor


def _images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (56, 56, 3), dtype=np.uint8)) for _ in range(2)]


def test_judge_merges_the_lora_and_asks_in_the_authors_layout(judge_cache):
    reference, processor = judge_cache
    pipe = zoo.load("editscore-7b", device="cpu", dtype=torch.float32)
    assert isinstance(pipe, JudgePipeline) and pipe.source == "cache"
    merged = dict(pipe.model.named_parameters())
    for name, param in reference.named_parameters():
        torch.testing.assert_close(merged[name], param)  # the LoRA is folded in, nothing else changed
    base, _ = build_tiny_vlm("qwen2_5_vl", seed=0)
    changed = [n for n, p in base.named_parameters() if not torch.equal(p, merged[n])]
    assert changed and all(n.endswith(("q_proj.weight", "v_proj.weight")) for n in changed)

    source, edited = _images()
    question = sc_prompt("make the sky purple")
    answers = pipe.ask([[source, edited]], [question], do_sample=False, max_new_tokens=6)
    inputs = processor(text=[chat_text(question, 2)], images=[source, edited], return_tensors="pt")
    with torch.no_grad():
        out = reference.generate(**inputs, do_sample=False, max_new_tokens=6)
    expected = processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[0].strip()
    assert answers == [expected]

    sampled = [pipe.ask([[source, edited], [edited]], [question, pq_prompt()], seed=7, max_new_tokens=6) for _ in range(2)]
    assert sampled[0] == sampled[1] and len(sampled[0]) == 2  # seeded sampling at the authors' temperature is repeatable
    with pytest.raises(ValueError, match="one set per prompt"):
        pipe.ask([[source]], [question, question])


def test_editscore_reward_loads_the_judge_by_name_and_reads_its_answers(judge_cache):
    source, edited = _images()
    reward = EditScoreReward("editscore-7b", batch_size=2)
    results = reward([edited, source], [{"instruction": "make the sky purple", "image": source},
                                        {"instruction": "add a boat", "image": edited}])  # fmt: skip
    assert isinstance(reward.judge, JudgePipeline)
    for result in results:  # a random tiny model writes no JSON: the authors' neutral score, with the reason
        assert result.components["parse_failed"] == 1.0 and result.score == pytest.approx(0.5)
        assert "neutral" in result.error


def test_a_qwen3_vl_judge_asks_in_its_processors_chat_template(tmp_path, hf_cache, install):
    """VectorSpaceLab/EditScore@6e0f1b9:editscore/mllm_tools/qwen3vl.py:51-70 asks the Qwen3-VL judges through the
    processor's own chat template (no system turn, no ``<imgN>:`` labels), not Qwen2.5-VL's hand-written layout."""
    from peft import LoraConfig, PeftModel, get_peft_model

    model, processor = build_tiny_vlm("qwen3_vl", seed=0)
    model.save_pretrained(tmp_path / "base", safe_serialization=True)
    processor.save_pretrained(tmp_path / "base")
    install(tmp_path / "base", "Qwen/Qwen3-VL-4B-Instruct", hf_cache)
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights="gaussian"))
    lora.save_pretrained(tmp_path / "lora")
    install(tmp_path / "lora", "EditScore/EditScore-Qwen3-VL-4B-Instruct", hf_cache)
    base, _ = build_tiny_vlm("qwen3_vl", seed=0)
    reference = PeftModel.from_pretrained(base, tmp_path / "lora").merge_and_unload().eval()

    pipe = zoo.load("editscore-qwen3-vl-4b", device="cpu", dtype=torch.float32)
    source, edited = _images()
    question = sc_prompt("make the sky purple")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": question}]}]
    theirs = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert pipe.chat(question, 2) == theirs and "<img1>" not in theirs and "system" not in theirs
    inputs = processor(text=[theirs], images=[pipe.prepare(source)[1], pipe.prepare(edited)[1]], return_tensors="pt")
    with torch.no_grad():
        out = reference.generate(**inputs, do_sample=False, max_new_tokens=6)
    expected = processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)[0].strip()
    assert pipe.ask([[source, edited]], [question], do_sample=False, max_new_tokens=6) == [expected]
