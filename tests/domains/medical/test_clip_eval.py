"""Patho-CLIP zero-shot accuracy and retrieval Recall@K against the authors' own evaluation code.

Reference: Wenchuan-Zhang/Patho-R1@3494816, ``clip/val/zero_shot_evaluation.py`` (``build_zeroshot_weights``,
``evaluate_dataset``, the ImageFolder + prompt JSON loading of ``main``) and ``clip/val/retrieval_evaluation.py``
(``load_and_validate_data``, ``encode_*_in_batches``, ``compute_retrieval_metrics``), ported below.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

from domains.medical.evaluate import evaluate
from tests.pipelines.test_clip import (
    CLASSNAME_TEMPLATES,
    _save_hub_layout,
    _tiny_clip,
    authors_zeroshot_weights,
)
from zoo.cli import main

SYNONYMS = {"adipose": ["adipose tissue", "fat"], "stroma": ["stroma"], "tumor": ["tumor", "carcinoma"]}
COLOURS = {"adipose": ["white", "ivory", "linen"], "stroma": ["pink", "hotpink"], "tumor": ["purple", "indigo", "navy"]}


# --- the authors' code (3494816), ported ------------------------------------------------------


def authors_evaluate_dataset(model, loader, zeroshot_weights):  # zero_shot_evaluation.py:101-129
    preds_all, labels_all = [], []
    with torch.no_grad():
        for imgs, labels in loader:
            img_feats = model.encode_image(imgs)
            img_feats /= img_feats.norm(dim=-1, keepdim=True)
            scale = model.logit_scale.exp().item() if hasattr(model, "logit_scale") else 100.0
            logits = scale * img_feats @ zeroshot_weights
            preds_all.append(logits.argmax(dim=1))
            labels_all.append(labels)
    preds_all, labels_all = torch.cat(preds_all), torch.cat(labels_all)
    acc = float((preds_all.numpy() == labels_all.numpy()).mean())  # sklearn's accuracy_score
    return acc, preds_all.numpy(), labels_all.numpy()


def authors_zero_shot(model, preprocess, tokenizer, data_dir: Path, prompt_file: Path):  # main, lines 218-243
    dataset = ImageFolder(str(data_dir), transform=preprocess)
    loader = DataLoader(dataset, batch_size=64, shuffle=False, num_workers=0)
    idx_to_class = {v: k for k, v in dataset.class_to_idx.items()}
    prompt_data = json.loads(prompt_file.read_text())["0"]
    classnames_dict, templates = prompt_data["classnames"], prompt_data["templates"]
    class_texts = [classnames_dict[idx_to_class[i]] for i in range(len(dataset.classes))]
    weights = authors_zeroshot_weights(model, tokenizer, class_texts, templates, "cpu")
    return authors_evaluate_dataset(model, loader, weights)


def authors_load_and_validate_data(captions_json: Path, images_dir: Path):  # retrieval_evaluation.py:122-183
    data = json.loads(captions_json.read_text(encoding="utf-8"))
    uuids, captions = [], []
    for _key, entry in sorted(data.items(), key=lambda x: int(x[0])):
        if "uuid" not in entry or "caption" not in entry:
            continue
        uuids.append(entry["uuid"])
        captions.append(entry["caption"])
    stem_to_path = {}
    for p in images_dir.iterdir():
        if p.is_file() and p.suffix.lower() in {".jpg", ".jpeg", ".png", ".bmp", ".tiff", ".webp"}:
            stem_to_path[p.stem] = p
    valid_uuids, valid_captions = [], []
    for uid, cap in zip(uuids, captions):
        if uid in stem_to_path:
            try:
                with Image.open(stem_to_path[uid]) as img:
                    img.verify()
                valid_uuids.append(uid)
                valid_captions.append(cap)
            except Exception:  # noqa: BLE001, S110 - the authors count it as missing
                pass
    return valid_uuids, valid_captions, stem_to_path


def authors_features(model, preprocess, tokenizer, uuids, captions, stem_to_path):  # lines 186-241
    with torch.no_grad():
        text = model.encode_text(tokenizer(captions))
        text = text / text.norm(dim=-1, keepdim=True)
        imgs = torch.stack([preprocess(Image.open(stem_to_path[u]).convert("RGB")) for u in uuids])
        image = model.encode_image(imgs)
        image = image / image.norm(dim=-1, keepdim=True)
    return text, image


def authors_compute_retrieval_metrics(text_feats, image_feats, k_values, gpu_branch: bool):  # lines 244-287
    """Verbatim but for the device: ``gpu_branch`` stands for ``device.type == 'cuda' and N < 10000``, and
    the tensors stay on the CPU."""
    n = text_feats.size(0)
    recall_counters = {k: 0 for k in k_values}
    max_k = max(k_values)
    if gpu_branch:
        sim_matrix = image_feats @ text_feats.T
        for i in range(n):
            topk_indices = sim_matrix[i].topk(max_k, largest=True).indices
            for k in k_values:
                if i in topk_indices[:k]:
                    recall_counters[k] += 1
    else:
        batch_size = min(100, n // 10 + 1)
        for start in range(0, n, batch_size):
            end = min(start + batch_size, n)
            sim_batch = text_feats[start:end] @ image_feats.T
            for i, global_i in enumerate(range(start, end)):
                topk_indices = sim_batch[i].topk(max_k, largest=True).indices
                for k in k_values:
                    if global_i in topk_indices[:k]:
                        recall_counters[k] += 1
    return {k: (count / n) * 100 for k, count in recall_counters.items()}


# --- the cases --------------------------------------------------------------------------------


def _image_folder(root: Path) -> Path:
    for label, colours in COLOURS.items():
        (root / label).mkdir(parents=True)
        for colour in colours:
            Image.new("RGB", (40, 30), colour).save(root / label / f"{colour}.png")
    (root / "stroma" / "notes.txt").write_text("not an image: ImageFolder skips it")
    return root


def _prompt_file(path: Path) -> Path:
    path.write_text(json.dumps({"0": {"classnames": SYNONYMS, "templates": CLASSNAME_TEMPLATES}}))
    return path


def test_zero_shot_matches_the_authors_evaluation(tiny_clip_pipe, tmp_path: Path) -> None:
    folder, prompt = _image_folder(tmp_path / "images"), _prompt_file(tmp_path / "prompt.json")
    got = evaluate(tiny_clip_pipe, "clip-zero-shot", str(folder), out_dir=tmp_path / "out", prompt=str(prompt))
    pipe = tiny_clip_pipe
    acc, preds, labels = authors_zero_shot(pipe.model, pipe.preprocess, pipe.tokenizer, folder, prompt)
    assert got["acc"] == pytest.approx(acc) and got["n"] == len(labels) == 8 and got["classes"] == 3
    rows = json.loads((tmp_path / "out" / "metrics.json").read_text())["samples"]
    classes = sorted(COLOURS)
    assert [r["prediction"] for r in rows] == [classes[k] for k in preds]
    assert [r["truth"] for r in rows] == [classes[k] for k in labels]
    assert "response_source" not in got


def test_zero_shot_refuses_a_prompt_file_missing_a_class(tiny_clip_pipe, tmp_path: Path) -> None:
    folder = _image_folder(tmp_path / "images")
    prompt = tmp_path / "prompt.json"
    prompt.write_text(json.dumps({"0": {"classnames": {"tumor": ["tumor"]}, "templates": ["CLASSNAME"]}}))
    with pytest.raises(ValueError, match=r"names no class for the folder\(s\) \['adipose', 'stroma'\]"):
        evaluate(tiny_clip_pipe, "clip-zero-shot", str(folder), prompt=str(prompt))
    with pytest.raises(ValueError, match="needs --option prompt="):
        evaluate(tiny_clip_pipe, "clip-zero-shot", str(folder))
    prompt.write_text(json.dumps({"0": {"classnames": ["tumor"], "templates": ["CLASSNAME"]}}))
    with pytest.raises(ValueError, match="lists of strings for each class"):
        evaluate(tiny_clip_pipe, "clip-zero-shot", str(folder), prompt=str(prompt))


def _captions(root: Path, n: int = 22) -> Path:
    """``n`` noise images with captions, plus an entry without a caption, one whose image is missing and one
    whose image is corrupt: what the authors' loader drops."""
    root.mkdir()
    rng = np.random.default_rng(0)
    entries = {}
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(root / f"img{i}.png")
        entries[str(i)] = {"uuid": f"img{i}", "caption": f"a slide of pattern number {i} with feature {i % 5}"}
    entries[str(n)] = {"uuid": "img0"}
    entries[str(n + 1)] = {"uuid": "absent", "caption": "no image for this one"}
    (root / "broken.png").write_bytes(b"\x89PNG not really")
    entries[str(n + 2)] = {"uuid": "broken", "caption": "a corrupt image"}
    entries = dict(sorted(entries.items(), key=lambda item: -int(item[0])))  # file order is not the order read
    (root / "captions.json").write_text(json.dumps(entries))
    return root / "captions.json"


@pytest.mark.parametrize("ks", [None, [1, 2, 3]])
def test_retrieval_recall_matches_the_authors_both_directions(tiny_clip_pipe, tmp_path: Path, ks) -> None:
    captions = _captions(tmp_path / "pairs")
    options = {} if ks is None else {"recall_k": ks}
    got = evaluate(tiny_clip_pipe, "clip-retrieval", str(captions), **options)
    pipe = tiny_clip_pipe
    uuids, texts, stems = authors_load_and_validate_data(captions, captions.parent)
    text, image = authors_features(pipe.model, pipe.preprocess, pipe.tokenizer, uuids, texts, stems)
    k_values = ks or [1, 5, 10, 20]
    i2t = authors_compute_retrieval_metrics(text, image, k_values, gpu_branch=True)
    t2i = authors_compute_retrieval_metrics(text, image, k_values, gpu_branch=False)
    assert got["n"] == len(uuids) == 22 and got["left_out"] == 2
    assert got["image_to_text"] == {f"R@{k}": v for k, v in i2t.items()}
    assert got["text_to_image"] == {f"R@{k}": v for k, v in t2i.items()}
    assert got["image_to_text"] != got["text_to_image"]  # the two directions the authors' script may report


def test_retrieval_needs_k_pairs(tiny_clip_pipe, tmp_path: Path) -> None:
    captions = _captions(tmp_path / "pairs", n=4)
    with pytest.raises(ValueError, match=r"Recall@20 needs at least 20 image-caption pairs, found 4"):
        evaluate(tiny_clip_pipe, "clip-retrieval", str(captions.parent))
    with pytest.raises(ValueError, match=r"clip-retrieval takes the options \['images_dir', 'recall_k'\]"):
        evaluate(tiny_clip_pipe, "clip-retrieval", str(captions), prompt="x.json")
    with pytest.raises(ValueError, match="scores a CLIP model's embeddings"):
        evaluate(["(A)"], "clip-retrieval", str(captions))


def test_zoo_eval_runs_both_clip_evaluations(tmp_path: Path, hf_cache: Path, install, capsys) -> None:
    """`zoo eval patho-clip-b --data clip-zero-shot|clip-retrieval` on a tiny model installed as the Hub would."""
    install(_save_hub_layout(_tiny_clip(), tmp_path / "model"), "WenchuanZhang/Patho-CLIP-B", hf_cache)
    folder, prompt = _image_folder(tmp_path / "images"), _prompt_file(tmp_path / "prompt.json")
    captions = _captions(tmp_path / "pairs")
    runs = {"clip-zero-shot": ["--path", str(folder), "--option", f"prompt={prompt}"],
            "clip-retrieval": ["--path", str(captions), "--option", "recall_k=[1, 5]"]}  # fmt: skip
    for data, args in runs.items():
        code = main(["eval", "patho-clip-b", "--data", data, *args, "--device", "cpu", "--out", str(tmp_path / data)])
        assert code == 0, capsys.readouterr().err
        metrics = json.loads((tmp_path / data / "metrics.json").read_text())["metrics"]
        assert metrics["n"] == (8 if data == "clip-zero-shot" else 22)
    assert set(metrics["image_to_text"]) == {"R@1", "R@5"}
