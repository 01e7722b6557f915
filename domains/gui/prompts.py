"""The authors' prompts and output parsers for GUI grounding and GUI agents.

Strings are facts copied from the authors' released code (cited per constant); parsers return
coordinates in the *model's* frame, and the pipeline maps them to original pixels.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from domains.gui.location_tokens import decode, encode_action
from rewards.parsing import ParseError, extract_tag, parse_json_value, parse_qwen_box

if TYPE_CHECKING:
    from zoo.data import Sample

# GUI-G1 (Yuqi-Zhou/GUI-G1, src/open-r1-multimodal/src/open_r1/grpo_rec.py): no system prompt,
# user turn = [image, text]; "Fast Thinking Template", no <think> tags.
GUI_G1_USER = "Grounding instruction is: {question}. Report the bbox coordinates in JSON format."

# UI-S1 (X-PLUG/MobileAgent, UI-S1/x/data/agent/json.py: MOBILE_USE, OUTPUT_FORMAT).
UI_S1_SYSTEM_TEMPLATE = (
    "You are a GUI agent. You are given a task and your action history, with screenshots. "
    "You need to perform the next action to complete the task. \n## Output Format\n\n{output_format}\n\n"
    "## Action Space\n\n{action_space}\n\n## Note\n\n"
    "- Planing the task and explain your reasoning step-by-step in `think` part.\n"
    "- Write your action in the `action` part according to the action space.\n"
)
UI_S1_OUTPUT_FORMAT = "```\n<think> ... </think>\n\n<action> ... </action>\n```"

# UI-S1's ten mobile actions (UI-S1/x/data/agent/space/std_space.py), as data.
UI_S1_ACTIONS: list[tuple[str, list[str], str]] = [
    ("key", ["text"], "Perform a key event on the mobile device using adb's `keyevent` syntax."),
    ("click", ["coordinate"], "Click the point on the screen with specified (x, y) coordinates."),
    (
        "long_press",
        ["coordinate", "time"],
        "Press the point on the screen with specified (x, y) coordinates for a specified number of seconds.",
    ),
    (
        "swipe",
        ["coordinate", "coordinate2"],
        "Swipe from starting point with specified (x, y) coordinates to endpoint with specified (x2, y2) coordinates.",
    ),
    ("type", ["text"], "Input the specified text into the activated input box."),
    ("answer", ["text"], "Output the specified answer."),
    ("system_button", ["button"], "Press the specified system button: Back, Home, Menu, or Enter."),
    ("open", ["text"], "Open an application on the device specified by text."),
    ("wait", ["time"], "Wait for a specified number of seconds for changes to occur."),
    ("terminate", ["status"], "Terminate the current task and report its completion status: success or failure."),
]
UI_S1_ARGUMENTS: list[tuple[str, list[str] | None, str]] = [
    ("coordinate", None, "(x, y): The x and y pixels coordinates from the left and top edges."),
    ("coordinate2", None, "(x, y): The x and y pixels coordinates from the left and top edges for the endpoint of a swipe."),
    ("text", None, "Text input required by actions like `key`, `type`, `answer`, and `open`."),
    ("time", None, "The time in seconds required by actions like `long_press` and `wait`."),
    ("button", ["Back", "Home", "Menu", "Enter"], "System buttons available for pressing: Back, Home, Menu, or Enter."),
    ("status", ["success", "failure"], "The completion status of a terminated task."),
]


def ui_s1_action_space(with_thought_examples: bool = False) -> str:
    """The action-space section of UI-S1's system prompt.

    The authors' code builds it with ``generate_prompt(space, actions_only)``, which lands
    ``actions_only=None`` in the ``add_thought`` slot, so the released prompt's two examples carry
    no ``<think>`` block; ``with_thought_examples=False`` reproduces that.
    """
    lines = ["You can perform the following actions:"]
    lines += [f"- {name}: {desc}" for name, _, desc in UI_S1_ACTIONS]
    lines.append("\nThe arguments you can use are:")
    for name, enum, desc in UI_S1_ARGUMENTS:
        values = f" Possible values: {', '.join(enum)}." if enum else ""
        lines.append(f"- {name}: {desc}{values}")
    lines.append("\nFormat your output as a JSON object with the selected action and its arguments at the same level.")
    lines.append("\nExample outputs:")
    for name, args, _ in UI_S1_ACTIONS[:2]:
        example = json.dumps({"action": name, **{a: "<value>" for a in args}}, ensure_ascii=False)
        think = "<think>\n...\n</think>\n" if with_thought_examples else ""
        lines.append(f"{think}<action>\n{example}\n</action>")
    return "\n".join(lines)


UI_S1_SYSTEM = UI_S1_SYSTEM_TEMPLATE.format(output_format=UI_S1_OUTPUT_FORMAT, action_space=ui_s1_action_space())
# First user turn: two text parts then the screenshot; Qwen's chat template joins parts with nothing between.
UI_S1_USER = (
    "User Instruction: {question}\nOutput Format: " + UI_S1_OUTPUT_FORMAT + "If the query asks a question, "
    "please answer the question through the answer action before terminating the process.\n"
)
# Later turns carry the output format alone (X-PLUG/MobileAgent@11cea575:UI-S1/x/data/agent/json.py:133-189,
# JsonFormat.gen_next_round): the ui-s1-7b entry's "next-turn" template (zoo.engines.vlm.contract.NEXT_TURN).
UI_S1_NEXT_TURN = "Output Format: " + UI_S1_OUTPUT_FORMAT
# AndroidControl-Low: the step's low-level instruction after the turn's text, the entry's "step-instruction"
# template ({question} is the instruction). This project's layout: UI-S1's released prompt has no low-level variant.
UI_S1_STEP_INSTRUCTION = "\nStep Instruction: {question}"


def qwen_bbox_json(sample: Sample) -> str:
    """The answer :func:`parse_gui_g1` reads, for SFT: ``[{"bbox_2d": [x1, y1, x2, y2]}]`` in integer pixels
    (Qwen2.5-VL's native grounding JSON; the ``gui-g1-tiny-sft`` warm start teaches it)."""
    return json.dumps([{"bbox_2d": [round(v) for v in sample.target["bbox"]]}])


#: Keys of a ground-truth action that are annotations, not arguments (UI-S1 ``apply_response`` drops them).
_UI_S1_NOT_ARGUMENTS = ("bbox", "candidate_bbox", "annotation", "thought")


def ui_s1_action_response(sample: Sample) -> str:
    """The expert's turn as UI-S1 writes it: ``<think>\\n{thought}\\n</think>\\n<action>\\n{json}\\n</action>``.

    Upstream ``JsonFormat.format_response`` after ``deal_with_coordinate``: coordinates scaled from
    the original screenshot to the frame the model sees (``target["resized_size"]``, else UI-S1's
    smart-resize limits) and rounded with Python's ``round``; annotation keys dropped; JSON with
    ``ensure_ascii=False``. This is what the patch module puts in the dialogue after a wrong step,
    and the answer an SFT warm start teaches (answer format ``ui-s1-action``).
    """
    return ui_s1_turn(sample, lambda action: json.dumps(action, ensure_ascii=False))


def ui_s1_location_response(sample: Sample) -> str:
    """The expert's turn in UI-S1's layout with location tokens (answer format ``ui-s1-location-tokens``).

    :func:`ui_s1_action_response`'s turn (coordinates scaled to the model's frame, the thought in
    ``<think>``) with each coordinate pair written as two tokens (:mod:`domains.gui.location_tokens`).
    """
    return ui_s1_turn(sample, encode_action)


def ui_s1_turn(sample: Sample, write_action: Callable[[dict[str, Any]], str]) -> str:
    """The expert's turn in UI-S1's layout, its action (coordinates in the model's frame) written by ``write_action``."""
    from domains.gui.rewards import UI_S1_MAX_PIXELS, UI_S1_MIN_PIXELS
    from zoo_common.coords import resized_size_for

    target = sample.target
    size = target.get("image_size")
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"sample {sample.id!r}: ui-s1-action needs target['image_size'] = [w, h], got {size!r}")
    resized = target.get("resized_size") or resized_size_for(size, 28, UI_S1_MIN_PIXELS, UI_S1_MAX_PIXELS)
    action = {k: v for k, v in target["action"].items() if k not in _UI_S1_NOT_ARGUMENTS}
    for key in ("coordinate", "coordinate2"):
        if key in action:
            x, y = action[key]
            action[key] = [round(x * resized[0] / size[0]), round(y * resized[1] / size[1])]
    thought = sample.meta.get("thought")
    think = f"<think>\n{thought}\n</think>\n" if thought is not None else ""
    return f"{think}<action>\n{write_action(action)}\n</action>"


def parse_gui_g1(text: str, question: str = "") -> dict[str, Any]:
    """``{"bbox": [x1, y1, x2, y2]}`` from Qwen-native grounding JSON, as GUI-G1 reads it."""
    try:
        return {"bbox": parse_qwen_box(text)}
    except ParseError as err:
        return {"parse_error": str(err)}


def parse_ui_s1(text: str, question: str = "") -> dict[str, Any]:
    """``think``, ``action`` (dict) and, for pointing actions, ``point`` from a UI-S1 response.

    UI-S1 reads ``<think>`` and ``<action>`` tags and ``json.loads`` the action; a response
    without a valid action is a parse failure. Location tokens (:mod:`domains.gui.location_tokens`)
    are read as their pixels.
    """
    text = decode(text)
    out: dict[str, Any] = {"think": extract_tag(text, "think", required=False)}
    try:
        action = parse_json_value(extract_tag(text, "action"))
    except ParseError as err:
        return {**out, "parse_error": str(err)}
    if not isinstance(action, dict) or "action" not in action:
        return {**out, "parse_error": f"action must be a JSON object with an 'action' key, got {action!r}"}
    out["action"] = action
    coordinate = action.get("coordinate")
    if isinstance(coordinate, (list, tuple)) and len(coordinate) == 2:
        out["point"] = [float(c) for c in coordinate]
    return out
