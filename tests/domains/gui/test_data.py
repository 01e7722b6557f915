"""Loaders on small files written in each published format (field names and box conventions as
released: SeeClick ScreenSpot, OS-Copilot ScreenSpot-v2, likaixin2000 ScreenSpot-Pro, Yuqi-Zhou/GUI-G1
data/GUI-R1-3K.json, X-PLUG/MobileAgent UI-S1/datasets/*.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

import zoo
from domains.gui import data
from domains.gui.prompts import GUI_G1_USER
from domains.gui.rewards import UiS1Reward
from zoo.data import load_dataset
from zoo.engines.vlm.contract import with_contract


def _png(path: Path, size: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, "white").save(path)


def _json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def _screenspot_record(name: str, bbox, kind="text", source="ios"):
    return {"img_filename": name, "bbox": bbox, "instruction": f"open {name}", "data_type": kind, "data_source": source}


def test_screenspot_reads_xywh_boxes_and_platform_from_file_name(tmp_path):
    _png(tmp_path / "images" / "mobile_1.png", (1170, 2532))
    _png(tmp_path / "images" / "web_1.png", (1440, 900))
    _json(tmp_path / "screenspot_mobile.json", [_screenspot_record("mobile_1.png", [100, 200, 50, 40], "icon")])
    _json(tmp_path / "screenspot_web.json", [_screenspot_record("web_1.png", [10, 20, 30, 40], "text", "shop")])
    samples = data.load_screenspot(tmp_path)  # desktop file absent: skipped with a warning
    assert [s.meta["platform"] for s in samples] == ["mobile", "web"]
    mobile, web = samples
    assert mobile.target == {"bbox": [100.0, 200.0, 150.0, 240.0], "image_size": [1170, 2532]}
    assert mobile.meta["element_type"] == "icon" and mobile.meta["data_source"] == "ios"
    assert web.target["bbox"] == [10.0, 20.0, 40.0, 60.0]
    assert mobile.question == "open mobile_1.png" and mobile.meta["rate"] == 1.0
    assert data.load_screenspot(tmp_path, split="web")[0].id == web.id


def test_screenspot_v2_file_names_and_image_folder(tmp_path):
    _png(tmp_path / "screenspotv2_image" / "pc_1.png", (1920, 1080))
    _json(tmp_path / "screenspot_desktop_v2.json", [_screenspot_record("pc_1.png", [1, 2, 3, 4], "icon", "windows")])
    [sample] = load_dataset("screenspot-v2", path=tmp_path)
    assert sample.meta["platform"] == "desktop"
    assert sample.target == {"bbox": [1.0, 2.0, 4.0, 6.0], "image_size": [1920, 1080]}
    assert Path(sample.images[0]).parent.name == "screenspotv2_image"


def test_screenspot_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="screenspot_mobile.json"):
        data.load_screenspot(tmp_path)
    _json(tmp_path / "screenspot_web.json", [{"img_filename": "a.png", "instruction": "x", "data_type": "text"}])
    with pytest.raises(FileNotFoundError, match="image_dir"):
        data.load_screenspot(tmp_path)
    _png(tmp_path / "images" / "a.png", (10, 10))
    with pytest.raises(ValueError, match="missing field 'bbox'"):
        data.load_screenspot(tmp_path)
    with pytest.raises(ValueError, match="split"):
        data.load_screenspot(tmp_path, split="tv")


def test_screenspot_pro_reads_xyxy_boxes_and_img_size(tmp_path):
    record = {
        "img_filename": "vscode_macos/screenshot_2024-12-03.png",
        "bbox": [473, 183, 503, 219],
        "instruction": "Refresh the file explorer.",
        "instruction_cn": "刷新文件资源管理器。",
        "id": "vscode_macos_0",
        "application": "vscode",
        "platform": "macos",
        "img_size": [2560, 1664],
        "ui_type": "icon",
        "group": "Dev",
    }
    _json(tmp_path / "annotations" / "vscode_macos.json", [record])
    [sample] = load_dataset("screenspot-pro", path=tmp_path)  # images are not opened: img_size is given
    assert sample.id == "vscode_macos_0"
    assert sample.target == {"bbox": [473.0, 183.0, 503.0, 219.0], "image_size": [2560, 1664]}
    assert sample.meta["platform"] == "macos" and sample.meta["group"] == "Dev"
    assert sample.meta["element_type"] == "icon" and sample.meta["application"] == "vscode"
    assert sample.images[0] == str(tmp_path / "images" / "vscode_macos/screenshot_2024-12-03.png")
    [cn] = data.load_screenspot_pro(tmp_path / "annotations" / "vscode_macos.json", language="cn")
    assert cn.question == "刷新文件资源管理器。"


def test_gui_g1_json_record_and_prompt_template(tmp_path):
    # The one record of Yuqi-Zhou/GUI-G1@e581fe98 data/GUI-R1-3K.json (its keys: image, problem, solution, rate).
    record = {
        "image": "GUI-R1-3K-Train/1033.jpg",
        "problem": "click the UI element Enhance Client Relationships and Boost Sales",
        "solution": [1207.68, 1024.9199999999998, 1351.6799999999998, 1080.0],
        "rate": 1,
    }
    _json(tmp_path / "GUI-R1-3K.json", [record])
    _png(tmp_path / "GUI-R1-3K-Train" / "1033.jpg", (1920, 1080))
    [sample] = load_dataset("gui-g1-json", path=tmp_path / "GUI-R1-3K.json")
    assert sample.target == {"bbox": record["solution"], "image_size": [1920, 1080]}
    assert sample.meta["rate"] == 1.0 and sample.question == record["problem"]
    # the recipe's model.entry (gui-g1-3b) wraps it as grpo_rec.py:190-202 does: image first, QUESTION_TEMPLATE
    templated = with_contract(sample, zoo.info("gui-g1-3b").spec)
    assert templated.prompt == [{"role": "user", "content": GUI_G1_USER.replace("{question}", record["problem"])}]
    # grpo_rec.py:147-151 reads a .jsonl json_path line by line, the same records
    (tmp_path / "GUI-R1-3K.jsonl").write_text(json.dumps(record) + "\n")
    [line] = data.load_gui_g1_json(tmp_path / "GUI-R1-3K.jsonl", image_root=tmp_path)
    assert line.target == sample.target and line.question == sample.question and line.meta["rate"] == 1.0


# X-PLUG/MobileAgent@11cea575 UI-S1/datasets/android_control_train_example.jsonl, its first line (keys goal,
# is_successful, steps[].action_content / screenshot; the click's box inside action_content; a terminate step).
TRAIN_LINE = {
    "goal": "Open the Zoho Meet app , view the scheduled meetings .",
    "is_successful": True,
    "steps": [
        {"action_content": {"action": "open", "text": "Zoho Meeting"}, "screenshot": "/datasets/AndroidControl/images/0_0.png"},
        {"action_content": {"action": "wait", "time": 2}, "screenshot": "/datasets/AndroidControl/images/0_1.png"},
        {"action_content": {"action": "click", "coordinate": [540.0, 389.8351648351648], "bbox": [360, 327, 695, 466]},
         "screenshot": "/datasets/AndroidControl/images/0_2.png"},
        {"action_content": {"action": "terminate", "status": "success"}, "screenshot": "/datasets/AndroidControl/images/0_3.png"},
    ],
}  # fmt: skip
# ... and android_control_evaluation_std.jsonl's layout (episode_id; steps with step_instruction and check_options
# holding candidate-box lists, swipes as a direction).
EVAL_LINE = {
    "goal": "I'd like to add this item to my cart.",
    "is_successful": True,
    "episode_id": 8197,
    "steps": [
        {"action_content": {"action": "click", "coordinate": [542, 2226]}, "screenshot": "/datasets/AndroidControl/images/8197_0.png",
         "step_instruction": "click on the Add to cart button",
         "check_options": {"action": "click", "candidate_bbox": [[0, 262, 1084, 2339]], "coordinate": [542, 2226]}},
        {"action_content": {"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 600]},
         "screenshot": "/datasets/AndroidControl/images/8197_1.png", "step_instruction": "scroll up",
         "check_options": {"action": "swipe", "direction": "up"}},
    ],
}  # fmt: skip


def test_ui_s1_jsonl_builds_check_options_like_the_rl_dataset(tmp_path):
    path = tmp_path / "android_control.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (TRAIN_LINE, EVAL_LINE)) + "\n")
    for name in ("0_0.png", "0_1.png", "0_2.png", "0_3.png", "8197_0.png", "8197_1.png"):
        _png(tmp_path / "images" / name, (1080, 2400))
    samples = load_dataset("ui-s1-android-control", path=path, image_root=tmp_path / "images")
    assert [s.id for s in samples] == ["0-0", "0-1", "0-2", "0-3", "8197-0", "8197-1"]
    click, terminate, evaluated, swipe = samples[2:]
    # rl_dataset.py fix_line: candidate_bbox = action_content['bbox'] (a flat box), annotation GOOD.
    assert click.target["check_options"]["candidate_bbox"] == [360, 327, 695, 466]
    assert click.target["check_options"]["annotation"] == "GOOD"
    assert click.target["num_steps"] == 4 and click.target["image_size"] == [1080, 2400]
    assert click.meta["history"] == [step["action_content"] for step in TRAIN_LINE["steps"][:2]]
    assert terminate.target["action"] == {"action": "terminate", "status": "success"}
    assert terminate.target["check_options"] == {"action": "terminate", "status": "success", "annotation": "GOOD",
                                                 "candidate_bbox": []}  # fmt: skip
    assert evaluated.target["check_options"]["candidate_bbox"] == [[0, 262, 1084, 2339]]
    assert evaluated.meta["step_instruction"] == "click on the Add to cart button"
    assert evaluated.meta["episode_id"] == 8197 and evaluated.target["num_steps"] == 2
    assert swipe.target["check_options"] == {"action": "swipe", "direction": "up"}
    # SOP's check_options (eval_qwenvl.py fix_line): the action with the step-level bbox (none in either file),
    # so the evaluation file's candidate boxes and swipe direction are replaced too
    assert click.target["sop_check_options"] == {**TRAIN_LINE["steps"][2]["action_content"], "candidate_bbox": []}
    assert evaluated.target["sop_check_options"] == {"action": "click", "coordinate": [542, 2226], "candidate_bbox": []}
    assert swipe.target["sop_check_options"] == {**EVAL_LINE["steps"][1]["action_content"], "candidate_bbox": []}
    # The reward accepts the loader's targets: the ground-truth click, rescaled to the resized frame.
    response = '<think>\nopen it\n</think>\n<action>\n{"action": "click", "coordinate": [546, 391]}\n</action>'
    [result] = UiS1Reward()([response], [click])
    assert result.score == pytest.approx(1.0)


def test_ui_s1_jsonl_without_images(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(TRAIN_LINE) + "\n")
    with pytest.raises(FileNotFoundError, match="0_0.png"):
        data.load_ui_s1_jsonl(path)
    samples = data.load_ui_s1_jsonl(path, require_images=False, limit=1)
    assert len(samples) == 1 and samples[0].target["image_size"] is None


def test_bad_json_and_bad_boxes(tmp_path):
    (tmp_path / "screenspot_web.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        data.load_screenspot(tmp_path)
    _json(tmp_path / "annotations" / "a.json", [{"img_filename": "x.png", "bbox": [5, 5, 1, 1], "instruction": "i",
                                                  "platform": "p", "img_size": [9, 9], "ui_type": "text"}])  # fmt: skip
    with pytest.raises(ValueError, match="negative width"):
        data.load_screenspot_pro(tmp_path)


PRO = {"img_filename": "x.png", "bbox": [1, 1, 5, 5], "instruction": "i", "platform": "p", "img_size": [9, 9],
       "ui_type": "text"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bbox": [1, 1, float("nan"), 5]}, r"a\.json\[0\]: bbox \(xyxy\) must hold finite numbers"),
        ({"bbox": [1, 1, float("inf"), 5]}, "must hold finite numbers"),
        ({"bbox": [1, "one", 5, 5]}, "must hold numbers"),
        ({"img_size": [float("inf"), 9]}, "img_size must hold finite numbers"),
        ({"img_size": [0, 9]}, "img_size must be"),
        ({"img_filename": "/etc/hostname"}, "points outside the data folder"),
        ({"img_filename": "../../secret.png"}, "points outside the data folder"),
    ],
)
def test_non_finite_boxes_and_escaping_paths_are_named(tmp_path, change, message):
    (tmp_path / "annotations" / "a.json").parent.mkdir()
    (tmp_path / "annotations" / "a.json").write_text(json.dumps([{**PRO, **change}]))  # json writes NaN/Infinity
    with pytest.raises(ValueError, match=message):
        data.load_screenspot_pro(tmp_path)


def test_screenspot_and_gui_g1_refuse_paths_outside_the_data_folder(tmp_path):
    _png(tmp_path / "images" / "a.png", (20, 20))
    _json(tmp_path / "screenspot_web.json", [_screenspot_record("a.png", [1, 1, 2, 2]),
                                             _screenspot_record("/etc/hostname", [1, 1, 2, 2])])  # fmt: skip
    with pytest.raises(ValueError, match=r"screenspot_web\.json\[1\].*outside the data folder"):
        data.load_screenspot(tmp_path)
    _json(tmp_path / "g1.json", [{"image": "../g1.json", "problem": "p", "solution": [1, 1, 2, 2]}])
    with pytest.raises(ValueError, match="outside the data folder"):
        data.load_gui_g1_json(tmp_path / "g1.json")
    _json(tmp_path / "g1.json", [{"image": "images/a.png", "problem": "p", "solution": [1, 1, 2, 2], "rate": "NaN"}])
    with pytest.raises(ValueError, match="rate must hold finite numbers"):
        data.load_gui_g1_json(tmp_path / "g1.json")


def test_benchmark_files_are_refused_as_training_data():
    """ScreenSpot's three releases are test data only (the domain's eval_datasets); the trajectory loader is not
    listed, since it reads UI-S1's training file too, and the shipped recipes train on neither benchmark."""
    from domains.gui import DOMAIN
    from zoo.engines.checks import check_training_data
    from zoo.engines.reading import load_recipe
    from zoo.recipe import RecipeError, read_yaml

    assert set(DOMAIN.eval_datasets) == {"screenspot", "screenspot-v2", "screenspot-pro"}
    recipes = sorted((Path(data.__file__).parent / "recipes").glob("*.yaml"))
    assert recipes and not [p.name for p in recipes if read_yaml(p)["data"]["name"] in DOMAIN.eval_datasets]
    for name in DOMAIN.eval_datasets:
        with pytest.raises(RecipeError, match=f"dataset '{name}' is evaluation data"):
            check_training_data(load_recipe("domains/gui/recipes/gui-g1-tiny-cpu.yaml", [f"data.name={name}"]).data)
