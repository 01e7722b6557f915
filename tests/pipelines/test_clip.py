"""The open_clip pipeline, loaded through ``zoo.load`` from a Hugging Face cache laid out as the Hub does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from PIL import Image

TINY_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
PREPROCESS = {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}


def _tiny_clip(seed: int = 0):
    import open_clip

    torch.manual_seed(seed)
    model = open_clip.CLIP(TINY_CFG["embed_dim"], TINY_CFG["vision_cfg"], TINY_CFG["text_cfg"])
    return model.eval()


def _save_hub_layout(model, directory: Path) -> Path:
    """What ``open_clip.push_to_hf_hub`` writes: open_clip_config.json + open_clip_model.safetensors."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True)
    (directory / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CFG, "preprocess_cfg": PREPROCESS}))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, directory / "open_clip_model.safetensors")
    return directory


@pytest.fixture
def patho_clip(tmp_path: Path, hf_cache: Path, install: Callable[..., Path]):
    model = _tiny_clip()
    install(_save_hub_layout(model, tmp_path / "model"), "WenchuanZhang/Patho-CLIP-B", hf_cache)
    import zoo

    return model, zoo.load("patho-clip-b", device="cpu")


def _images() -> list[Image.Image]:
    return [Image.new("RGB", (40, 30), c) for c in ("purple", "pink", "white")]


def test_zero_shot_probabilities_match_the_saved_model(patho_clip) -> None:
    import open_clip

    model, pipe = patho_clip
    labels = ["tumor", "normal tissue", "necrosis"]
    got = pipe(_images()[0], labels, template="An H&E image of {}.")
    assert list(got) == labels and sum(got.values()) == pytest.approx(1.0)
    # the same computation with the model object that was saved, outside the zoo
    tokens = open_clip.get_tokenizer("ViT-B-16", context_length=16)([f"An H&E image of {x}." for x in labels])
    pixels = pipe.preprocess(_images()[0]).unsqueeze(0)
    with torch.no_grad():
        img = torch.nn.functional.normalize(model.encode_image(pixels), dim=-1)
        txt = torch.nn.functional.normalize(model.encode_text(tokens), dim=-1)
        expected = (model.logit_scale.exp() * img @ txt.T).softmax(-1)[0]
    assert list(got.values()) == pytest.approx(expected.tolist(), abs=1e-6)


def test_batched_call_and_retrieval_embeddings(patho_clip) -> None:
    _, pipe = patho_clip
    batch = pipe(_images(), ["a", "b"])
    assert isinstance(batch, list) and len(batch) == 3
    assert batch[1] == pytest.approx(pipe(_images()[1], ["a", "b"]))
    images, texts = pipe.embed_images(_images()), pipe.embed_texts(["x", "y", "z", "w"])
    assert images.shape == (3, 16) and texts.shape == (4, 16)
    assert torch.linalg.vector_norm(images, dim=-1) == pytest.approx(torch.ones(3))


def test_bad_labels_are_refused(patho_clip) -> None:
    _, pipe = patho_clip
    with pytest.raises(ValueError, match="two distinct labels"):
        pipe(_images()[0], ["only one"])
    with pytest.raises(ValueError, match="template"):
        pipe(_images()[0], ["a", "b"], template="no slot")


def test_bare_state_dict_of_a_builtin_architecture(tmp_path: Path) -> None:
    """Layout 2: one *.safetensors for an open_clip architecture name (the authors' ViT-B-16 + file)."""
    import open_clip
    from safetensors.torch import save_file

    from zoo.hub import ResolvedModel
    from zoo.kinds import ClipSpec
    from zoo.pipelines.clip import load_clip_pipeline
    from zoo.registry import ModelEntry

    cfg = tmp_path / "zoo-test-tiny-clip.json"
    cfg.write_text(json.dumps(TINY_CFG))
    open_clip.add_model_config(cfg)
    model = _tiny_clip(seed=1)
    weights = tmp_path / "weights"
    weights.mkdir()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights / "PathoCLIP-B.safetensors")
    entry = ModelEntry("tiny-clip", None, ClipSpec(), "zoo-test-tiny-clip", "x", "medical", "test")
    pipe = load_clip_pipeline(entry, ResolvedModel(weights, "local", "local"), "cpu", torch.float32)
    state = pipe.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_pickled_only_directory_says_how_to_convert(tmp_path: Path) -> None:
    """An entry whose spec names no pickled weights never reads a .pt: the error says how to convert."""
    from zoo.hub import ResolvedModel
    from zoo.kinds import ClipSpec
    from zoo.pipelines.clip import load_clip_pipeline
    from zoo.registry import ModelEntry

    (tmp_path / "model.pt").write_bytes(b"not read")
    entry = ModelEntry("some-clip", None, ClipSpec(), "ViT-B-16", "x", "medical", "test")
    with pytest.raises(FileNotFoundError, match="convert_pickled"):
        load_clip_pipeline(entry, ResolvedModel(tmp_path, "local", "local"), "cpu", torch.float32)


def test_corrupt_patho_clip_pt_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zoo.hub import ResolvedModel
    from zoo.pipelines.clip import load_clip_pipeline
    from zoo.registry import info
    from zoo.safe_weights import UnsafeCheckpointError

    monkeypatch.setattr("zoo.safe_weights.CONVERTED_CACHE", tmp_path / "cache")
    (tmp_path / "PathoCLIP-B.pt").write_bytes(b"not a pickle")
    with pytest.raises(UnsafeCheckpointError, match="Nothing in it was executed"):
        load_clip_pipeline(info("patho-clip-b"), ResolvedModel(tmp_path, "local", "local"), "cpu", torch.float32)


def test_template_set_is_averaged_per_label(patho_clip) -> None:
    """CLIP's prompt ensembling: the class embedding is the normalised mean of its captions' embeddings."""
    _, pipe = patho_clip
    templates = ["An H&E image of {}.", "a photomicrograph of {label}"]
    got = pipe(_images()[0], ["tumor", "stroma"], template=templates)
    captions = pipe.embed_texts([t.replace("{label}", x).replace("{}", x) for x in ["tumor", "stroma"] for t in templates])
    classes = torch.nn.functional.normalize(captions.view(2, 2, -1).mean(1), dim=-1)
    expected = pipe.logits(pipe.embed_images(_images()[0]), classes).softmax(-1)[0]
    assert list(got.values()) == pytest.approx(expected.tolist(), abs=1e-6)
    assert pipe(_images()[0], ["tumor", "stroma"]) == pytest.approx(pipe(_images()[0], ["tumor", "stroma"], "{}"))


def authors_zeroshot_weights(model, tokenizer, class_texts, templates, device):
    """Wenchuan-Zhang/Patho-R1@3494816:clip/val/zero_shot_evaluation.py:77-99 (``build_zeroshot_weights``),
    ported verbatim but for the logging: ``[D, C]``, one column per class."""
    zeroshot_weights = []
    with torch.no_grad():
        for names in class_texts:
            embeds = []
            for nm in names:
                texts = [t.replace("CLASSNAME", nm) for t in templates]
                tokens = tokenizer(texts).to(device)
                text_feats = model.encode_text(tokens)
                text_feats /= text_feats.norm(dim=-1, keepdim=True)
                embeds.append(text_feats)
            embeds = torch.cat(embeds, dim=0)
            cls_feat = embeds.mean(dim=0)
            cls_feat /= cls_feat.norm()
            zeroshot_weights.append(cls_feat)
    return torch.stack(zeroshot_weights, dim=1).to(device)


#: A prompt entry as the authors write them: several names per class, CLASSNAME in the templates.
SYNONYMS = {"tumor": ["tumor", "carcinoma", "malignant cells"], "stroma": ["stroma"], "fat": ["adipose", "fat cells"]}
CLASSNAME_TEMPLATES = ["an H&E image of CLASSNAME.", "CLASSNAME", "a histopathology slide showing CLASSNAME tissue"]


def test_classname_templates_and_synonyms_build_the_authors_class_weights(patho_clip) -> None:
    _, pipe = patho_clip
    expected = authors_zeroshot_weights(pipe.model, pipe.tokenizer, list(SYNONYMS.values()), CLASSNAME_TEMPLATES, "cpu")
    got = pipe.class_embeddings(list(SYNONYMS.values()), CLASSNAME_TEMPLATES)
    assert torch.allclose(got, expected.T, atol=1e-6)
    # one name per class: the same as the zoo's {} templates
    assert torch.allclose(pipe.class_embeddings([["a"], ["b"]], ["x CLASSNAME"]),
                          pipe.class_embeddings([["a"], ["b"]], ["x {}"]))  # fmt: skip


def test_synonym_labels_give_the_authors_logits(patho_clip) -> None:
    """``pipe(image, {class: names}, templates)``: softmax of logit_scale x image @ the authors' weights
    (zero_shot_evaluation.py:112-118); its argmax is their prediction."""
    _, pipe = patho_clip
    images = _images()
    got = pipe(images, SYNONYMS, template=CLASSNAME_TEMPLATES)
    weights = authors_zeroshot_weights(pipe.model, pipe.tokenizer, list(SYNONYMS.values()), CLASSNAME_TEMPLATES, "cpu")
    with torch.no_grad():
        feats = pipe.model.encode_image(torch.stack([pipe.preprocess(im) for im in images]))
        feats /= feats.norm(dim=-1, keepdim=True)
        logits = pipe.model.logit_scale.exp().item() * feats @ weights
    for row, expected in zip(got, logits.softmax(dim=-1)):
        assert list(row) == list(SYNONYMS) and list(row.values()) == pytest.approx(expected.tolist(), abs=1e-6)
    assert [max(row, key=row.get) for row in got] == [list(SYNONYMS)[k] for k in logits.argmax(dim=1).tolist()]
