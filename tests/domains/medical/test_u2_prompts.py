"""U2-Bench's localisation and report prompts against its evalkit's own code.

The references below are ``build_prompt``'s text-building lines of dolphin-sound/u2-bench-evalkit@4ab2465
(``vlmeval/dataset/image_seg.py:212-250``, ``vlmeval/dataset/image_report.py:69-97``), ported unchanged except that
``self.dataset_name`` and ``line`` are arguments and the image handling is left out.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from domains.medical.u2_prompts import U2Prompts, report_prompt, seg_prompt


def evalkit_seg_prompt(line, dataset_name):  # image_seg.py:212-250
    anatomy = line['anatomy_location']
    hint = line['hint'] if ('hint' in line and not pd.isna(line['hint'])) else None

    prompt = ''
    if hint is not None:
        prompt += f'{hint}.\n'

    if dataset_name in ['04', '17', '23', '32', '64']:
        prompt += f"You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
        prompt += "Your task is to identify the primary location of any visible lesion(s) relative to the boundaries of the displayed image. Consider the lesion's center location or most prominent area when deciding. Choose the single option from the list below that best describes this location, even if the fit is approximate.\n"
        prompt += "Choose the single most appropriate location from the following list: upper left, upper center, upper right, middle left, center, middle right, lower left, lower center, lower right, not visible.\n"
        prompt += "Output format: only one or two word(s) representing the chosen location. No additional text or formatting is allowed."
    elif dataset_name == '48':
        keypoint_str = line['keypoints']
        if isinstance(keypoint_str, float):
            kp = "heart valve location"
        else:
            try:
                kp_dict = json.loads(keypoint_str)
                kp = list(kp_dict.keys())[0]
            except (json.JSONDecodeError, TypeError):
                kp = "heart valve location"

        prompt += "You are a radiologist analyzing an ultrasound image of the heart.\n"
        prompt += f"Your task is to determine the {kp}.\n"
        prompt += "Choose the single most appropriate location from the following list: upper left, upper center, upper right, middle left, center, middle right, lower left, lower center, lower right, not visible.\n"
        prompt += "Output format: only one or two word(s) representing the chosen location. No additional text or formatting is allowed."
    else:
        seg_channel_name = line['seg_channel_name']
        prompt += f"You are a radiologist analyzing an ultrasound image about {anatomy}.\n"
        prompt += f"Your task is to determine the primary location, relative to the image boundaries, for each visible structure listed in {seg_channel_name}.\n"
        prompt += "*   Consider the structure's center or most prominent area when deciding its location.\n"
        prompt += "*   Choose the single option from the list below that best describes the location, even if the fit is approximate.\n"
        prompt += "Location Options: upper left, upper center, upper right, middle left, center, middle right, lower left, lower center, lower right, not visible.\n"
        prompt += "Output format: only one or two word(s) representing the chosen location. No additional text or formatting is allowed."
    return prompt


def evalkit_report_prompt(line, dataset_name):  # image_report.py:69-97
    hint = line['hint'] if ('hint' in line and not pd.isna(line['hint'])) else None

    anatomy = line['anatomy_location']

    prompt = ''
    if hint is not None:
        prompt += f'Hint: {hint}\n'

    prompt += f"You are a radiologist analyzing an ultrasound image focused on the {anatomy}."
    if dataset_name == '39':
        prompt += f"Your task is generate a concise and informative radiological report based strictly on the visual findings within the provided image. Your report should describe the primary organ's appearance (size, shape, borders/capsule), its parenchymal echotexture (e.g., homogeneous, heterogeneous, echogenicity relative to reference structures), and identify any visible abnormalities (e.g., masses, cysts, fluid collections, calcifications, ductal dilation). Comment on relevant adjacent structures if visualized. Use standard radiological terminology."
        prompt += "Output format: Strings, that is your report."
        prompt += "Example: The liver morphology is full with a smooth capsule. The parenchymal echotexture is fine and diffusely increased. Visualization of the portal venous system is suboptimal. Intrahepatic and extrahepatic bile ducts are not dilated. The main portal vein diameter is within normal limits. The gallbladder is normal in size and shape. The wall is smooth and not thickened. No obvious abnormal echoes are seen within the lumen. The pancreas is normal in size and shape with homogeneous parenchymal echotexture. The pancreatic duct is not dilated. No definite space-occupying lesion is seen within the pancreas. The spleen is normal in size and shape with homogeneous parenchymal echotexture. No obvious space-occupying lesion is seen within the spleen."
    else:
        prompt += f"Your task is to generate a concise and informative caption that accurately describes the key anatomical structures and any significant findings visible in the provided ultrasound image."
        prompt += "Output format: A single string constituting the image caption. Output only the generated caption text itself. Do not include any introductory phrases (like \"Caption:\"), labels, explanations, or additional formatting."
        prompt += "Examples:"
        if dataset_name == '10':
            prompt += "Example1: Fetal phantom ultrasound image showing standard diagnostic plane for abdominal circumference (AC) measurement\n"
            prompt += "Example2: Fetal phantom ultrasound image showing standard diagnostic plane for biparietal diameter (BPD) measurement\n"
            prompt += "Example3: Fetal phantom ultrasound image showing standard diagnostic plane for femur length (FL) measurement\n"
        elif dataset_name == '11':
            prompt += "Example1: Thyroid nodule in the right lobe. TI-RADS level 3, Benign.\n"
            prompt += "Example2: Thyroid nodule in the left lobe. TI-RADS level 3, Benign.\n"
            prompt += "Example3: Thyroid nodule in the right lobe. TI-RADS level 4, Benign.\n"
        elif dataset_name == '44':
            prompt += "Example1: no single B-lines, B-lines are fused together into the picture of a white lung\n"
            prompt += "Example2: liver on the right side\n"
            prompt += "Example3: white lung? "
    return prompt


ROWS = [
    {"anatomy_location": "breast", "keypoints": float("nan"), "seg_channel_name": "['kidney']"},
    {"anatomy_location": "heart", "keypoints": '{"mitral valve": [0.2, 0.3]}', "seg_channel_name": float("nan")},
    {"anatomy_location": "liver", "keypoints": "not json", "seg_channel_name": "['liver', 'cyst']",
     "hint": "Look left"},
]  # fmt: skip


@pytest.mark.parametrize("dataset", ["04", "17", "23", "32", "64", "48", "09", "53"])
@pytest.mark.parametrize("row", ROWS)
def test_seg_prompts_are_the_evalkits(row: dict, dataset: str) -> None:
    assert seg_prompt(row, dataset) == evalkit_seg_prompt(pd.Series(row), dataset)


@pytest.mark.parametrize("dataset", ["39", "10", "11", "44", "65"])
@pytest.mark.parametrize("row", ROWS)
def test_report_and_caption_prompts_are_the_evalkits(row: dict, dataset: str) -> None:
    assert report_prompt(row, dataset) == evalkit_report_prompt(pd.Series(row), dataset)


def test_a_dataset_with_several_prompt_entries_names_them(tmp_path) -> None:
    """cla_prompt.json keys dataset 74's two questions '74is_normal', '74is_visible' (the evalkit's keys)."""
    file = tmp_path / "cla_prompt.json"
    file.write_text(json.dumps({"74is_normal": "Normal?", "74is_visible": "Visible?", "23": "Benign?"}))
    asked = U2Prompts.choose("cla", prompt_file=file)
    with pytest.raises(ValueError, match="74is_normal, 74is_visible; pick one with --data u2bench-<task>:<entry>"):
        asked.question({}, "cla", "74")
    assert asked.question({}, "cla", "74is_visible") == "Visible?"
    with pytest.raises(ValueError, match="prompts='mine'"):
        U2Prompts.choose("cla", source="mine")
    assert U2Prompts.choose("seg").record("seg")["code"].endswith("vlmeval/dataset/image_seg.py, as transcribed here")
