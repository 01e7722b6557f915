"""UI-S1's Semi-Online Performance (SOP) on AndroidControl-format episodes, as the authors' script computes it.

Reference: X-PLUG/MobileAgent@ade7315, ``UI-S1/evaluation/eval_qwenvl.py`` (the README's "Evaluate UI-S1-7B's
performance on SOP" script) and the matcher it imports, ``UI-S1/evaluation/qwenvl_utils.py``. Per episode
(``process_line``, eval_qwenvl.py:33-95): the model answers each step with *its own* earlier answers in the
dialogue; the walk stops at the first step whose answer is not an exact match; ``final_step_id`` is the
number of steps matched before it, ``task_success`` is ``final_step_id == num_steps``; and any exception on
the way (an answer without a parsable ``<action>`` JSON, an answer missing a field the matcher reads, an
expert action type the matcher has no rule for) sets ``final_step_id = 0`` for the whole episode
(eval_qwenvl.py:76-79). Over episodes (``main``, eval_qwenvl.py:130-137): ``Success Rate`` = 100 x the share
of successful episodes, ``Average Progress`` = the mean of ``final_step_id / num_steps``.

The step matcher is the evaluation script's, not the training reward's (``domains.gui.rewards``, from
``gui_traj.py``); they differ: the evaluation accepts any swipe (its direction check is commented out), a
click on an ``open`` step when it lands in a candidate box, and raises on ``terminate``/``answer`` truths.
Its ``check_options`` are built by the script's ``fix_line`` (eval_qwenvl.py:21-31), which reads a
*step-level* ``bbox``: the released files keep the box inside ``action_content`` (and the evaluation file's own
``check_options``, with their candidate-box lists, are overwritten), so every click is matched by its
distance to the expert's point alone (:func:`sop_check_options`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from rewards.base import RewardResult

SOURCE = "X-PLUG/MobileAgent@ade7315:UI-S1/evaluation/eval_qwenvl.py"
#: The matcher's outcome per step, as components of the scorer's result (1.0 / 0.0).
EXACT, TYPE, ERROR, UNRULED = "sop_exact", "sop_type", "sop_error", "sop_unruled_truth"


def sop_check_options(step: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``check_options`` ``fix_line`` (eval_qwenvl.py:21-31) gives one step of a UI-S1 ``.jsonl`` line.

    A step with a top-level ``candidate_bbox`` keeps the file's ``check_options`` (``None`` when it has none:
    upstream then fails on that step, eval_qwenvl.py:45); any other step gets a copy of its
    ``action_content`` with ``candidate_bbox`` = the step's top-level ``bbox``, else ``[]``.
    """
    if "candidate_bbox" in step:
        return copy.deepcopy(step["check_options"]) if "check_options" in step else None
    options = copy.deepcopy(dict(step["action_content"]))
    options["candidate_bbox"] = copy.deepcopy(step["bbox"]) if "bbox" in step else []
    return options


def _norm_coordinate(action: dict[str, Any], width: float, height: float) -> dict[str, Any]:
    """qwenvl_utils.py:93-100 ``norm_coordinate``: candidate boxes and points over the frame size."""
    if "candidate_bbox" in action:
        action["candidate_bbox"] = [[b[0] / width, b[1] / height, b[2] / width, b[3] / height]
                                    for b in action["candidate_bbox"]]  # fmt: skip
    if "coordinate" in action:
        action["coordinate"] = [action["coordinate"][0] / width, action["coordinate"][1] / height]
    if "coordinate2" in action:
        action["coordinate2"] = [action["coordinate2"][0] / width, action["coordinate2"][1] / height]
    return action


def evaluate_action(
    pred: Any, check_options: Mapping[str, Any], size: Sequence[float], resized: Sequence[float]
) -> tuple[bool, bool]:
    """``(type_match, extract_match)``: qwenvl_utils.py:102-153 ``evaluate_android_control_action``.

    The prediction is normalised by the frame the model saw (``resized``), the truth by the original
    ``size``; text matches by containment either way, clicks land in a x1.2 candidate box or within 0.04 of
    the expert's point (qwenvl_utils.py:28-36, the training reward's helpers). Raises where upstream raises
    (a missing field, a non-object answer, ``NotImplementedError`` for an expert action without a rule).
    """
    from domains.gui.rewards import _click_hits, _text_match

    pred = _norm_coordinate(copy.deepcopy(pred), resized[0], resized[1])
    gt = _norm_coordinate(copy.deepcopy(dict(check_options)), size[0], size[1])
    kind = gt["action"]
    if kind == "wait":
        same = pred["action"] == "wait"
        return same, same
    if kind == "system_button":
        if pred["action"] != "system_button":
            return False, False
        return True, gt["button"].lower().strip() == pred["button"].lower().strip()
    if kind in ("type", "open"):
        if pred["action"] == kind:
            return True, _text_match(pred["text"], gt["text"])
        if kind == "open" and pred["action"] == "click":
            boxes = gt.get("candidate_bbox", [])
            if not boxes:  # no icon on the screen: a click cannot open the app
                return False, False
            centre = [(boxes[0][0] + boxes[0][2]) / 2, (boxes[0][1] + boxes[0][3]) / 2]
            return True, _click_hits(pred["coordinate"], boxes, centre)
        return False, False
    if kind == "swipe":
        same = pred["action"] == "swipe"  # upstream's direction check is commented out (qwenvl_utils.py:138-144)
        return same, same
    if kind in ("long_press", "click"):
        if pred["action"] != kind:
            return False, False
        return True, _click_hits(pred["coordinate"], gt["candidate_bbox"], gt["coordinate"])
    raise NotImplementedError(f"the SOP matcher has no rule for a {kind!r} truth")


def _sop_check_options_of(target: Mapping[str, Any]) -> dict[str, Any] | None:
    if "sop_check_options" not in target:
        raise ValueError("the sample has no target['sop_check_options']; load episodes with "
                         "domains.gui.data.load_ui_s1_jsonl or gui-synthetic-episodes")  # fmt: skip
    return target["sop_check_options"]


class SopScore:
    """Scores each answer as ``process_line`` does one step, for a walk that stops at the first miss.

    Components: ``sop_exact`` (the walk goes on), ``sop_type``, ``sop_error`` (upstream raised: the episode's
    progress becomes 0) and ``sop_unruled_truth`` (the raise came from an expert action the matcher has no
    rule for). The score is ``sop_exact``.
    """

    def __call__(self, texts: Sequence[str], samples: Sequence[Any]) -> list[RewardResult]:
        from domains.gui.rewards import _ui_s1_sizes, parse_ui_s1_response

        out = []
        for text, sample in zip(texts, samples):
            check = _sop_check_options_of(sample.target)
            size, resized = _ui_s1_sizes(sample.target)  # the screenshot's and the model's frame (the zoo's inputs)
            parts = {EXACT: 0.0, TYPE: 0.0, ERROR: 0.0, UNRULED: 0.0}
            try:
                if check is None:
                    raise KeyError("check_options")
                _, action = parse_ui_s1_response(text)  # JsonFormat.parse_response: first <action>, json.loads
                type_match, exact = evaluate_action(action, check, size, resized)
                parts.update({EXACT: float(exact), TYPE: float(type_match)})
            except Exception as err:  # noqa: BLE001 - every failure counts, as upstream's bare ``except Exception``
                parts.update({ERROR: 1.0, UNRULED: float(isinstance(err, NotImplementedError))})
            out.append(RewardResult(parts[EXACT], parts))
        return out


def sop_episode(outcomes: Sequence[Mapping[str, float]], num_steps: int) -> tuple[bool, int]:
    """``(task_success, final_step_id)`` of one episode from its walked steps' components, in order.

    ``process_line`` (eval_qwenvl.py:42-79): count exact steps until the first that is not; an error
    anywhere sets the step count to 0.
    """
    step_id = 0
    for outcome in outcomes:
        if outcome[ERROR]:
            return False, 0
        if not outcome[EXACT]:
            break
        step_id += 1
    return step_id == num_steps, step_id


def summarise_sop(records: Sequence[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(metrics, per-episode rows)`` from an own-history walk that stopped each episode at its first miss.

    Metrics under the script's names (eval_qwenvl.py:130-137): ``Success Rate`` (percent) and
    ``Average Progress``; with ``episodes``, ``episodes_zeroed`` (an exception set the progress to 0) and
    ``episodes_zeroed_by_unruled_truth`` (of those, the expert's action had no rule in the matcher).
    Rows carry the script's per-episode fields (``num_steps``, ``task_success``, ``final_step_id``).
    """
    walked: dict[int, list[Any]] = {}
    for record in records:
        walked.setdefault(record.group, []).append(record)
    rows = []
    for steps in walked.values():
        steps = sorted(steps, key=lambda r: r.step)
        num_steps = int(steps[0].sample.target["num_steps"])
        success, final = sop_episode([r.components for r in steps], num_steps)
        rows.append({"episode_id": steps[0].sample.meta.get("episode_id"), "goal": steps[0].sample.meta.get("goal"),
                     "num_steps": num_steps, "task_success": success, "final_step_id": final,
                     "zeroed": any(r.components[ERROR] for r in steps),
                     "unruled_truth": any(r.components[UNRULED] for r in steps)})  # fmt: skip
    if not rows:
        raise ValueError("no evaluated episodes")
    metrics = {
        "Success Rate": sum(r["task_success"] for r in rows) / len(rows) * 100,
        "Average Progress": sum(r["final_step_id"] / r["num_steps"] for r in rows) / len(rows),
        "episodes": len(rows),
        "episodes_zeroed": sum(r["zeroed"] for r in rows),
        "episodes_zeroed_by_unruled_truth": sum(r["unruled_truth"] for r in rows),
        "source": f"{SOURCE}:33-137",
    }
    return metrics, rows
