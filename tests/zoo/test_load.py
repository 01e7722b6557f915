"""zoo.load through the real resolution code: tiny models laid out in a temporary HF cache, Hub offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import zoo
from zoo.engines.vlm.sft import SFTExample, train_sft
from zoo.hub import CHECKPOINTS_DIR, ModelNotAvailableError, ResolvedModel
from zoo.load import WrongArchitectureError
from zoo.pipelines.vlm import VLMPipeline
from zoo.tiny import build_tiny_vlm

PATHO_QUESTION = "What feature is shown? /n A. necrosis /n B. fibrosis /n C. mitosis"
PATHO_ANSWER = "<think>dense pink stroma</think><answer>B. fibrosis</answer>"
COMMIT = "a1b2c3d4" * 5
PATHO_PIN = zoo.info("patho-r1-7b").revision  # a pinned entry resolves its pinned commit, not `main`


def taught_model_dir(tmp: Path, entry_name: str, arch: str, image: Image.Image, question: str, answer: str) -> Path:
    """A tiny random model of ``arch`` taught by SFT to give ``answer`` to ``question`` with the entry's prompt."""
    model, processor = build_tiny_vlm(arch)
    pipe = VLMPipeline(model, processor, zoo.info(entry_name), ResolvedModel(tmp, "local", "local"))
    _, resized = pipe.prepare(image)
    example = SFTExample(pipe.messages(resized, question), [resized], answer)
    for _ in range(6):  # 40 steps at a time until greedy decoding reproduces the answer
        train_sft(model, processor, lambda rng, n: [example] * n, steps=40, batch_size=2, lr=3e-3, warmup=5, freeze_vision=False)
        if pipe(image, question, max_new_tokens=60).text == answer:
            break
    out = tmp / f"{entry_name}-{arch}"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def screen() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (150, 200, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def patho_dir(tmp_path_factory, screen) -> Path:
    return taught_model_dir(tmp_path_factory.mktemp("patho"), "patho-r1-7b", "qwen2_5_vl", screen, PATHO_QUESTION, PATHO_ANSWER)


def test_patho_r1_loads_from_hf_cache_and_parses_think_answer_letter(hf_cache, install, patho_dir, screen):
    install(patho_dir, "WenchuanZhang/Patho-R1-7B", hf_cache, PATHO_PIN)
    pipe = zoo.load("patho-r1")
    assert pipe.entry.name == "patho-r1-7b"
    assert (pipe.source, pipe.revision) == ("cache", PATHO_PIN)
    messages = pipe.messages(screen, PATHO_QUESTION)
    assert messages[0] == {"role": "system", "content": zoo.info("patho-r1").spec.system}
    assert messages[1]["content"][0]["type"] == "image"
    pred = pipe(screen, PATHO_QUESTION, max_new_tokens=40)
    assert pred.parse_error is None, pred.text
    assert (pred.think, pred.answer, pred.letter) == ("dense pink stroma", "B. fibrosis", "B")


def test_batched_call_and_seeded_sampling_are_reproducible(hf_cache, install, patho_dir, screen):
    install(patho_dir, "WenchuanZhang/Patho-R1-7B", hf_cache, PATHO_PIN)
    pipe = zoo.load("PATHO_R1_7B")  # case and separator insensitive
    batch = pipe([screen, screen], PATHO_QUESTION, max_new_tokens=40)
    assert [p.letter for p in batch] == ["B", "B"]
    sampled = [pipe(screen, PATHO_QUESTION, seed=7, do_sample=True, temperature=1.5, max_new_tokens=12).text for _ in range(2)]
    assert sampled[0] == sampled[1]


def test_chain_of_draft_variant_is_selectable(hf_cache, install, patho_dir, screen):
    install(patho_dir, "WenchuanZhang/Patho-R1-7B", hf_cache, PATHO_PIN)
    pipe = zoo.load("patho-r1")
    system = pipe.messages(screen, "q", system="cod")[0]["content"]
    assert system.startswith("You are a pathology expert, your task is to think step by step, but only keep a minimum draft")


def test_gui_g1_box_comes_back_in_original_pixels(tmp_path, hf_cache, install, screen):
    model_box = [28, 14, 56, 42]  # what the model writes, in the frame it saw
    answer = '```json\n[{"bbox_2d": [28, 14, 56, 42], "label": "OK button"}]\n```'
    model_dir = taught_model_dir(tmp_path, "gui-g1-3b", "qwen2_5_vl", screen, "click OK", answer)
    install(model_dir, "Yuqi-Zhou/GUI-G1-3B-v1", hf_cache, COMMIT)
    pipe = zoo.load("gui-g1-3b")
    pred = pipe(screen, "click OK", max_new_tokens=40)
    assert pred.parse_error is None, pred.text
    seen_w, seen_h = pred.extra["model_frame_size"]
    assert (seen_w, seen_h) != screen.size  # the tiny processor really resized the screenshot
    expected = [model_box[0] * 200 / seen_w, model_box[1] * 150 / seen_h, model_box[2] * 200 / seen_w, model_box[3] * 150 / seen_h]
    assert pred.bbox == pytest.approx(expected)


def test_qwen3_vl_directory_uses_0_1000_frame(tmp_path, screen):
    answer = '[{"bbox_2d": [100, 200, 500, 800]}]'
    model_dir = taught_model_dir(tmp_path, "gui-g1-3b", "qwen3_vl", screen, "find it", answer)
    pipe = zoo.load(str(model_dir))  # no entry: generic pipeline, frame taken from the architecture
    assert (pipe.entry.architecture, pipe.entry.spec.coord_frame, pipe.source) == ("qwen3_vl", "norm1000", "local")
    # the generic template is the bare question, so passing GUI-G1's full user text gives the taught prompt
    pred = pipe(screen, zoo.info("gui-g1-3b").spec.user.replace("{question}", "find it"), max_new_tokens=40)
    assert pred.bbox == pytest.approx([100 * 200 / 1000, 200 * 150 / 1000, 500 * 200 / 1000, 800 * 150 / 1000])


def test_unparseable_answer_is_a_prediction_with_parse_error(hf_cache, install, patho_dir, screen):
    install(patho_dir, "Yuqi-Zhou/GUI-G1-3B-v1", hf_cache, COMMIT)  # a model that answers in Patho-R1 format
    pred = zoo.load("gui-g1-3b")(screen, PATHO_QUESTION, max_new_tokens=40)
    assert pred.bbox is None
    assert pred.parse_error and "box" in pred.parse_error


def test_unknown_name_suggests_close_names():
    with pytest.raises(KeyError, match="Did you mean: .*patho-r1"):
        zoo.load("patho-r2")


@pytest.mark.parametrize("name", zoo.list_models())
def test_every_registered_name_offline_loads_or_gives_an_actionable_error(hf_cache, name):
    entry = zoo.info(name)
    if (CHECKPOINTS_DIR / entry.name).is_dir():  # shipped in this repository: must load with no network
        assert zoo.load(name).source == "checkpoints"
        return
    opt_in = {}
    if entry.trust_remote_code:  # the opt-in is asked for by name first, then the download
        with pytest.raises(ValueError, match="trust_remote_code=True"):
            zoo.load(name)
        opt_in = {"trust_remote_code": True}
    with pytest.raises(ModelNotAvailableError) as err:
        zoo.load(name, **opt_in)
    message = str(err.value)
    if entry.repo_id is not None:
        assert f"hf download {entry.repo_id}" in message and "HF_HUB_OFFLINE" in message
        if entry.gated:
            assert "request access" in message and "hf auth login" in message
    else:
        assert "no public weights" in message and f"domains/{entry.domain}/README.md" in message


def test_gated_repository_explains_licence_and_login(hf_cache, monkeypatch):
    import httpx2
    from huggingface_hub.errors import GatedRepoError

    import zoo.hub

    def refuse(repo_id, **kwargs):
        if kwargs.get("local_files_only"):
            from huggingface_hub.errors import LocalEntryNotFoundError

            raise LocalEntryNotFoundError("not cached")
        request = httpx2.Request("GET", f"https://huggingface.co/api/models/{repo_id}")
        raise GatedRepoError("403 gated", response=httpx2.Response(403, request=request))

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(zoo.hub, "snapshot_download", refuse)
    with pytest.raises(ModelNotAvailableError, match="gated repository") as err:
        zoo.load("patho-r1-3b")
    assert "cc-by-nc-nd-4.0" in str(err.value) and "hf auth login" in str(err.value)


def test_directory_of_another_architecture_is_refused(tmp_path, hf_cache, install):
    model, processor = build_tiny_vlm("qwen3_vl")
    model.save_pretrained(tmp_path / "m")
    processor.save_pretrained(tmp_path / "m")
    install(tmp_path / "m", "Yuqi-Zhou/GUI-G1-3B-v1", hf_cache, COMMIT)
    with pytest.raises(WrongArchitectureError, match="'qwen3_vl' model, but gui-g1-3b is a Qwen2.5-VL"):
        zoo.load("gui-g1-3b")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(WrongArchitectureError, match="'llama' model"):
        zoo.load(str(tmp_path / "other"))


def test_revision_of_a_shipped_checkpoint_is_refused_with_the_reason():
    from zoo.hub import resolve

    with pytest.raises(ModelNotAvailableError, match="no Hub repository") as err:
        resolve(zoo.info("gui-grounding-tiny"), revision="abc123")
    assert "is missing" not in str(err.value)


def test_ui_s1_action_point_comes_back_in_original_pixels(tmp_path, hf_cache, install, screen):
    answer = '<think>\nopen it\n</think>\n<action>\n{"action": "click", "coordinate": [28, 56]}\n</action>'
    model_dir = taught_model_dir(tmp_path, "ui-s1-7b", "qwen2_5_vl", screen, "open the settings", answer)
    pin = zoo.info("ui-s1-7b").revision  # a pinned entry resolves its pinned commit, not `main`
    install(model_dir, "mPLUG/UI-S1-7B", hf_cache, pin)
    pipe = zoo.load("ui-s1")
    assert pipe.revision == pin
    pred = pipe(screen, "open the settings", max_new_tokens=60)
    assert pred.parse_error is None, pred.text
    seen_w, seen_h = pred.extra["model_frame_size"]
    expected = [28 * 200 / seen_w, 56 * 150 / seen_h]
    assert pred.think == "open it"
    assert pred.point == pytest.approx(expected)
    assert pred.action["action"] == "click" and pred.action["coordinate"] == pytest.approx(expected)


def test_every_model_name_is_read_one_way(tmp_path):
    """``zoo.hub.lookup``, behind zoo.load, recipes' model.name (TRL, verl) and the diffusion engine:
    a directory, then ``hf-hub:``, then the registry, then an unlisted ``owner/name`` Hub id."""
    from zoo.hub import lookup
    from zoo_common.registry import UnknownNameError

    assert lookup(str(tmp_path)).directory == tmp_path.resolve() and lookup(str(tmp_path)).label == tmp_path.name
    entry = lookup("patho-r1").entry
    assert entry is not None and entry.name == "patho-r1-7b"  # through its alias
    assert lookup("Qwen/Qwen2.5-VL-7B-Instruct").repo_id == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert lookup("hf-hub:WenchuanZhang/Patho-R1-7B").repo_id == "WenchuanZhang/Patho-R1-7B"
    with pytest.raises(ValueError, match="owner/name"):
        lookup("hf-hub:patho-r1")
    assert lookup("gui-grounding-tiny").files().path == CHECKPOINTS_DIR / "gui-grounding-tiny"
    with pytest.raises(UnknownNameError, match="Did you mean"):
        lookup("patho-r")
    with pytest.raises(ValueError, match="empty model name"):
        lookup(" ")
