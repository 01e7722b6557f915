"""Every handed file is held to what it may legitimately be before it is read, and a malformed one is one sentence.

review-reliability 10.3 (deflated records in ``training_state.pt`` / ``replay_buffer.npz``), 10.9 (``zoo run
--observation`` FIFO, ``/dev/zero``, ``'{}'``, ``1e308``), 8.4 (``--plan`` on an 8 GiB ``config.json`` or 20,000
layers), 3.15 / 6.1 (an 8 GiB or empty prompt file), 10.10 (``hidden: [60000, 60000]`` beside 256-wide weights),
10.5 (malformed markers and policy state). The hostile files are built here, in ``tmp_path``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import zoo
from tests.zoo.opened_files import watch
from zoo.cli import main
from zoo.hub import CHECKPOINTS_DIR
from zoo.model_files import FileTooLargeError, ModelFileError
from zoo.records import RecordError
from zoo.runs import COMPLETE_MARKER, CorruptCheckpointError, UnsafeStateError, latest_checkpoint, mark_complete
from zoo.runs import read_state, restoring

HUGE = 8 << 30


def _sparse(file: Path, size: int = HUGE) -> Path:
    with open(file, "wb") as handle:
        handle.truncate(size)  # takes no disk
    return file


def _add_deflated_zeros(archive_path: Path, name: str, size: int) -> None:
    """Append a member of ``size`` zero bytes, deflated (a zip bomb of the kind a handed checkpoint can carry)."""
    with zipfile.ZipFile(archive_path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, bytes(size))


def _one_line(err: BaseException, names: Path | str) -> str:
    message = str(err)
    assert str(names) in message and "\n" not in message, message
    return message


# --- 10.3: compressed state ----------------------------------------------------------------------------------------
def test_a_state_file_whose_records_inflate_is_refused_before_torch_reads_it(tmp_path, monkeypatch):
    state = tmp_path / "training_state.pt"
    torch.save({"step": 3, "w": torch.arange(4.0)}, state)
    assert torch.equal(read_state(state)["w"], torch.arange(4.0))  # a file torch.save wrote reads as before
    _add_deflated_zeros(state, "training_state/data/99", 8 << 20)  # 8 MiB in ~8 KB
    assert state.stat().st_size < 1 << 20
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load reached"))
    with pytest.raises(CorruptCheckpointError) as refused:
        read_state(state)
    message = _one_line(refused.value, state)
    assert f"{8 << 20:,}" in message and "training_state/data/99" in message


@pytest.fixture
def buffer_file(tmp_path):
    """A fresh stable-baselines3 replay buffer factory and a file :func:`save_replay_buffer` wrote from a filled one."""
    from gymnasium import spaces
    from stable_baselines3.common.buffers import ReplayBuffer

    from zoo.engines.policy.state import save_replay_buffer

    def fresh() -> ReplayBuffer:
        box = spaces.Box(-1.0, 1.0, (3,), np.float32)
        return ReplayBuffer(8, box, spaces.Box(-1.0, 1.0, (2,), np.float32), device="cpu")

    filled = fresh()
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, nxt = rng.random((1, 3), np.float32), rng.random((1, 3), np.float32)
        filled.add(obs, nxt, rng.random((1, 2), np.float32), np.ones(1), np.zeros(1), [{}])
    path = tmp_path / "replay_buffer.npz"
    save_replay_buffer(filled, path)
    return fresh, filled, path


def _rewrite_npz(path: Path, compression: int = zipfile.ZIP_STORED, **arrays: np.ndarray) -> None:
    """``path`` with ``arrays`` replacing (or adding) its members as ``np.savez`` writes them, ``compression`` aside."""
    with np.load(path, allow_pickle=False) as data:
        members = {name: data[name] for name in data.files}
    members.update(arrays)
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, array in members.items():
            raw = io.BytesIO()
            np.lib.format.write_array(raw, np.asanyarray(array), allow_pickle=array.dtype.hasobject)
            archive.writestr(f"{name}.npy", raw.getvalue())


def test_a_replay_buffer_reads_back_whole(buffer_file):
    from zoo.engines.policy.state import restore_replay_buffer

    fresh, filled, path = buffer_file
    restored = fresh()
    restore_replay_buffer(restored, path)
    assert restored.pos == filled.pos == 5 and not restored.full
    assert np.array_equal(restored.observations, filled.observations)
    assert np.array_equal(restored.actions, filled.actions)


HOSTILE_BUFFERS = {  # what replaces a member -> what the refusal says
    "inflating observations": ({"observations": np.zeros((200_000, 1, 3), np.float32)}, "would inflate"),
    "wrong shape": ({"observations": np.zeros((5, 1, 4), np.float32)}, "shape (5, 1, 4)"),
    "wrong dtype": ({"actions": np.zeros((5, 1, 2), np.float64)}, "float64"),
    "pos beyond the buffer": ({"pos": np.int64(10**12)}, "pos 1000000000000"),
    "negative pos": ({"pos": np.int64(-3)}, "pos -3"),
}


@pytest.mark.parametrize("case", HOSTILE_BUFFERS)
def test_a_replay_buffer_that_does_not_fit_the_runs_buffer_is_refused_before_it_is_inflated(case, buffer_file,
                                                                                             monkeypatch):  # fmt: skip
    from zoo.engines.policy.state import restore_replay_buffer

    fresh, _, path = buffer_file
    arrays, said = HOSTILE_BUFFERS[case]
    _rewrite_npz(path, zipfile.ZIP_DEFLATED, **arrays)
    if case == "inflating observations":
        assert path.stat().st_size < 200_000 * 12 // 20  # deflated: the file is a small part of what it inflates to
        monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("np.load reached"))
    with pytest.raises(CorruptCheckpointError) as refused:
        restore_replay_buffer(fresh(), path)
    assert said in _one_line(refused.value, path)


def test_a_replay_buffer_holding_objects_is_refused_as_unsafe(buffer_file):
    from zoo.engines.policy.state import restore_replay_buffer

    fresh, _, path = buffer_file
    _rewrite_npz(path, observations=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UnsafeStateError, match="pickled Python objects"):
        restore_replay_buffer(fresh(), path)


# --- 10.5: malformed markers and state -------------------------------------------------------------------------------
MARKERS = {
    "a list": "[1, 2]",
    "sizes a string": json.dumps({"step": 2, "files": ["w.bin"], "sizes": "x"}),
    "step infinite": '{"step": Infinity, "files": ["w.bin"]}',
    "step a word": json.dumps({"step": "abc", "files": ["w.bin"]}),
    "a file outside": json.dumps({"step": 2, "files": ["w.bin", "/etc/passwd"]}),
    "not JSON": "{",
}


@pytest.mark.parametrize("case", MARKERS)
def test_a_malformed_marker_is_one_sentence_naming_it(case, tmp_path):
    folder = tmp_path / "checkpoint-2"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"w")
    (folder / COMPLETE_MARKER).write_text(MARKERS[case])
    with pytest.raises(ValueError) as refused:  # RecordError or ModelFileError: the CLI prints it as one line
        latest_checkpoint(tmp_path, remove_incomplete=True)
    _one_line(refused.value, folder / COMPLETE_MARKER)
    assert folder.is_dir()  # not taken for a half-written checkpoint and deleted


def test_a_marker_this_zoo_writes_reads_back(tmp_path):
    folder = tmp_path / "checkpoint-4"
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"weights")
    mark_complete(folder, 4)
    assert latest_checkpoint(tmp_path) == folder


SCALARS = {"num_timesteps": 40, "n_updates": 3, "episode_num": 2, "progress_remaining": 0.5,
           "logger": {"train/loss": 0.25, "train/n_updates": 3},
           "ep_info_buffer": [{"r": -3.0, "l": 20, "t": 0.1}], "ep_success_buffer": [True, 0.0],
           "action_space_rng": {"bit_generator": "PCG64"}}  # fmt: skip
BAD_SCALARS = {
    "num_timesteps": ({"num_timesteps": "many"}, "num_timesteps: expected int"),
    "n_updates missing": ({"n_updates": None}, "missing field(s) ['n_updates']"),
    "episode without r": ({"ep_info_buffer": [{"l": 20, "t": 0.1}]}, "ep_info_buffer[0]"),
    "logger list": ({"logger": {"train/loss": [1, 2]}}, "logger.train/loss"),
    "negative counter": ({"episode_num": -1}, "episode_num"),
}


def test_algorithm_scalars_this_zoo_writes_read_back(tmp_path):
    from zoo.engines.policy.state import read_scalars

    (tmp_path / "algorithm.json").write_text(json.dumps(SCALARS))
    scalars = read_scalars(tmp_path / "algorithm.json")
    assert scalars.logger == SCALARS["logger"] and isinstance(scalars.logger["train/n_updates"], int)
    assert scalars.ep_success_buffer == (True, 0.0)


@pytest.mark.parametrize("case", BAD_SCALARS)
def test_malformed_algorithm_scalars_name_the_file_and_field(case, tmp_path):
    from zoo.engines.policy.state import read_scalars

    change, said = BAD_SCALARS[case]
    data = {k: v for k, v in {**SCALARS, **change}.items() if v is not None}
    file = tmp_path / "algorithm.json"
    file.write_text(json.dumps(data))
    with pytest.raises(RecordError) as refused:
        read_scalars(file)
    assert said in _one_line(refused.value, file)


def test_state_of_another_shape_is_one_error_naming_the_file(tmp_path):
    state = tmp_path / "training_state.pt"
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))])
    with pytest.raises(CorruptCheckpointError) as refused, restoring(state):
        optimizer.load_state_dict([1, 2])  # "optimizer": [1, 2] in a hand-edited file
    assert "TypeError" in _one_line(refused.value, state)


# --- 10.9: zoo run POLICY --observation ------------------------------------------------------------------------------
def test_observation_files_are_read_only_as_small_regular_files(tmp_path):
    from zoo.pipelines.policy import MAX_OBSERVATION_BYTES, read_observation

    for name in ("obs.json", "obs.npy"):
        os.mkfifo(tmp_path / name)  # opening it would block until someone writes
        with watch(tmp_path / name) as opened, pytest.raises(ModelFileError, match="not a regular file"):
            read_observation(str(tmp_path / name))
        assert opened == []
    (tmp_path / "z.json").symlink_to("/dev/zero")
    with pytest.raises(ModelFileError, match="not a regular file"):
        read_observation(str(tmp_path / "z.json"))
    big = _sparse(tmp_path / "big.npy")
    with pytest.raises(FileTooLargeError, match=f"at most {MAX_OBSERVATION_BYTES:,}"):
        read_observation(str(big))
    lying = tmp_path / "lying.npy"  # a header claiming 10^9 numbers over 8 bytes of data
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)})
    lying.write_bytes(header.getvalue() + bytes(8))
    with pytest.raises(ValueError, match="claims"):
        read_observation(str(lying))
    good = tmp_path / "good.npy"
    np.save(good, np.arange(3.0))
    assert read_observation(str(good)).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(("given", "said"), [
    ("{}", "is not numbers; fetch-push-bc-tiny takes 28 numbers"),
    ('[[1, 2], [3]]', "is not numbers"),
    (json.dumps([1e308] * 28), "overflow"),
    (json.dumps([0.1] * 27), "shape (1, 27)"),
])  # fmt: skip
def test_zoo_run_names_what_the_policy_takes(given, said, capsys):
    assert main(["run", "fetch-push-bc-tiny", "--observation", given]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and said in err, err


# --- 10.10: a policy folder asking for a huge network ----------------------------------------------------------------
def test_a_policy_config_that_does_not_fit_its_weights_is_refused_on_the_meta_device(tmp_path, monkeypatch):
    from zoo.pipelines import policy_architectures

    folder = tmp_path / "bigpol"
    shutil.copytree(CHECKPOINTS_DIR / "fetch-push-bc-tiny", folder)
    config = json.loads((folder / "policy_config.json").read_text())
    (folder / "policy_config.json").write_text(json.dumps({**config, "hidden": [60000, 60000]}))
    built_on: list[str] = []
    mlp = policy_architectures.ARCHITECTURES["mlp"]

    def recording(cfg):
        built_on.append(torch.get_default_device().type)
        return mlp(cfg)

    monkeypatch.setitem(policy_architectures.ARCHITECTURES, "mlp", recording)
    with pytest.raises(ValueError) as refused:
        zoo.load(str(folder), device="cpu")
    assert "(60000, 28)" in _one_line(refused.value, folder / "model.safetensors")
    assert built_on == ["meta"]  # never built with storage
    (folder / "policy_config.json").write_text(json.dumps(config))
    assert zoo.load(str(folder), device="cpu") is not None and built_on == ["meta", "meta", "cpu"]


# --- 8.4: --plan on hostile model folders ----------------------------------------------------------------------------
def _config_copy(tmp_path: Path, name: str = "gui-grounding-tiny") -> Path:
    folder = tmp_path / f"plan-{name}"
    folder.mkdir()
    shutil.copy(CHECKPOINTS_DIR / name / "config.json", folder / "config.json")
    return folder


def test_plan_sizes_a_real_config_and_refuses_a_sparse_one_unread(tmp_path):
    from zoo import model_size

    assert model_size.vlm(_config_copy(tmp_path), None).params > 0
    folder = tmp_path / "sparse"
    folder.mkdir()
    huge = _sparse(folder / "config.json")
    with watch(huge) as opened, pytest.raises(FileTooLargeError):
        model_size.vlm(folder, None)
    assert opened == []


@pytest.mark.parametrize(("change", "said"), [
    ({"num_hidden_layers": 20_000}, "num_hidden_layers = 20000 asks for more than 1,024 layers"),
    ({"hidden_size": 10**9}, "hidden_size"),
    ({"vision_config": {"depth": 5000}}, "vision_config: depth"),
    ({"vocab_size": 10**8}, "tokens"),
])  # fmt: skip
def test_plan_refuses_sizes_beyond_any_released_model_before_building(change, said, tmp_path):
    from zoo import model_size

    folder = _config_copy(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    for key, value in change.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(model_size.ModelSizeError) as refused:
        model_size.vlm(folder, None)
    assert said in _one_line(refused.value, folder / "config.json")


def test_every_known_architecture_is_within_the_bounds():
    from zoo.model_size import KNOWN, check_config_bounds

    for name, (_, values) in KNOWN.items():
        for component, (_, _, config) in values.get("components", {"model": (None, None, values)}).items():
            check_config_bounds(config, f"{name} {component}")  # raises on a false refusal


def test_plan_of_a_pipeline_refuses_a_huge_index_and_a_class_that_is_no_model(tmp_path):
    from zoo import model_size

    pipeline = tmp_path / "pipe"
    shutil.copytree(CHECKPOINTS_DIR / "flow-grpo-tiny-colour", pipeline, ignore=shutil.ignore_patterns("*.safetensors"))
    assert set(model_size.pipeline(pipeline, None)) >= {"transformer", "vae"}
    index = json.loads((pipeline / "model_index.json").read_text())
    odd = tmp_path / "odd"
    shutil.copytree(pipeline, odd)
    (odd / "model_index.json").write_text(json.dumps({**index, "text_encoder": ["transformers", "AutoModel"]}))
    with pytest.raises(model_size.ModelSizeError, match="transformers.AutoModel is not a transformers model class"):
        model_size.pipeline(odd, None)
    sparse = tmp_path / "sparse-pipe"
    sparse.mkdir()
    _sparse(sparse / "model_index.json")
    with pytest.raises(FileTooLargeError, match="model_index.json"):
        model_size.pipeline(sparse, None)


# --- 3.15 / 6.1: prompt files ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("reader", ["ocr", "geneval", "prompt-list"])
def test_prompt_files_are_size_checked_and_an_empty_one_is_named(reader, tmp_path):
    from domains.image.evaluate import load_ocr_prompts
    from domains.image.geneval import load_metadata
    from domains.image.prompt_list import MAX_PROMPT_FILE_BYTES, load_prompt_list

    read = {"ocr": load_ocr_prompts, "geneval": load_metadata, "prompt-list": load_prompt_list}[reader]
    huge = _sparse(tmp_path / "big.txt")
    with watch(huge) as opened, pytest.raises(FileTooLargeError, match=f"at most {MAX_PROMPT_FILE_BYTES:,}"):
        read(huge)
    assert opened == []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="holds no prompts") as refused:
        read(empty)
    _one_line(refused.value, empty)


def test_ocr_prompts_read_text_and_jsonl(tmp_path):
    from domains.image.evaluate import load_ocr_prompts

    (tmp_path / "p.txt").write_text('a sign that says "OPEN"\n\n  a mug  \n')
    assert load_ocr_prompts(tmp_path / "p.txt") == ['a sign that says "OPEN"', "a mug"]
    (tmp_path / "p.jsonl").write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    assert load_ocr_prompts(tmp_path / "p.jsonl", limit=1) == ["a"]
    (tmp_path / "bad.jsonl").write_text('{"prompt": "a"}\n[1]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: a jsonl prompt row is an object"):
        load_ocr_prompts(tmp_path / "bad.jsonl")


def test_a_hand_edited_sft_state_is_one_sentence_naming_it(tmp_path):
    """vlm-sft's resume (and vlm-semi-online's, the same ``restoring`` block) names the state file it cannot load."""
    from zoo.train import run

    recipe = str(Path(__file__).resolve().parents[2] / "domains/gui/recipes/gui-g1-tiny-sft-control.yaml")
    settings = ["training.steps=1", "training.save_steps=1", "training.warmup_steps=0", "training.max_minutes=null",
                "training.batch_size=4"]  # fmt: skip
    out = run(recipe, settings, output_dir=str(tmp_path / "run"))
    state_file = out / "checkpoint-1" / "sft_state.pt"
    state = torch.load(state_file, weights_only=True)
    del state["cpu_seconds"]
    torch.save(state, state_file)
    with pytest.raises(CorruptCheckpointError, match="sft_state.pt does not hold the state this run writes"):
        run(recipe, [*settings[1:], "training.steps=2"], output_dir=str(tmp_path / "run"), resume=True)
