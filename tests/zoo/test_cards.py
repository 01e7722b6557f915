"""Model cards: rendered from entry + measured numbers, validated locally, medical cards state out-of-scope use."""

import pytest
from huggingface_hub import ModelCard

import zoo
from zoo.cards import CardError, render_card, validate_card, write_card

RECORD = {
    "summary": "A tiny grounding model.",
    "metrics": [
        {"dataset": "synthetic-screens", "split": "heldout", "stage": "sft", "metric": "accuracy", "value": 0.3},
        {"dataset": "synthetic-screens", "split": "heldout", "stage": "final", "metric": "accuracy", "value": 0.4},
    ],
}


def test_card_carries_measured_numbers_as_model_index():
    card = render_card(zoo.info("gui-g1-3b"), RECORD)
    meta = ModelCard(str(card)).data.to_dict()
    assert meta["license"] == "apache-2.0" and meta["base_model"] == "Qwen/Qwen2.5-VL-3B-Instruct"
    (result,) = meta["model-index"][0]["results"]
    assert result["metrics"][0]["value"] == 0.4
    assert "| synthetic-screens | heldout | sft | accuracy | 0.3 |" in card.text


def test_unevaluated_entry_quotes_no_numbers_and_medical_states_out_of_scope(tmp_path):
    path = write_card("patho-r1", tmp_path)
    text = path.read_text()
    assert path == tmp_path / "patho-r1-7b" / "README.md"
    assert "Not evaluated by this project yet" in text and "Not a medical device" in text
    assert "base_model:" not in text  # a free-text base model is not a Hub id, so it stays out of metadata


def test_validation_catches_broken_cards():
    with pytest.raises(CardError, match="license"):
        validate_card(ModelCard("---\ntags: [a]\n---\n# x"))
    with pytest.raises(CardError, match="unrendered"):
        validate_card(ModelCard("---\nlicense: mit\ntags: [a]\n---\n# {{ name }}"))
