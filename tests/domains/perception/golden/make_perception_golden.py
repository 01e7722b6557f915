"""Generate ``perception.json``: the perception rewards computed by the authors' own code.

Sources (snapshot commits; each function is cut out of its file with ``ast`` and executed
unchanged, with the file's own imports supplied, so the training stacks need not be installed):

- om-ai-lab/VLM-R1 @ 90052f478646e38bc67363862f699b7afca6b337:
  ``src/open-r1-multimodal/src/open_r1/vlm_modules/qwen_module.py`` (``Qwen2VLModule.iou_reward``,
  ``format_reward_rec``) and ``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` (``format_reward``,
  ``all_match_reward``, ``default_accuracy_reward`` with its helpers).
- Liuziyu77/Visual-RFT @ 94866331ff38c516581697882a00f947c8bfda8a: ``src/virft/src/open_r1/grpo.py``
  (``accuracy_reward_iou``, ``accuracy_reward_confidence`` and helpers).
- jefferyZhan/Griffon @ 9866875e7d18e705239f3e03115a55aef30ab635: ``Vision-R1/vision_r1/visionr1_qwen.py``
  (``dual_format_reward``, ``precision_reward``, ``recall_reward`` and helpers) with
  ``griffon/coor_utils.py`` (``box_iou``, ``generalized_box_iou``).
- yfzhang114/r1_reward @ 3693413abedd4a1efaa9484143acfaa5d78a8d2b:
  ``openrlhf/models/remote_rm/math_verifier_mllm.py`` (``verify_format``, ``extract_characters_regex``,
  ``verify_math`` with ``strict_math_verify.py``) and the reward line of ``get_reward``;
  ``openrlhf/models/loss.py`` (``PolicyLoss``, StableReinforce) with ``openrlhf/models/utils.py::masked_mean``.
- ding523/Curr_REFT @ f123433ec97c5b97772273ee9e9acb9610f8bc39:
  ``train_code/grpo/open-r1-multimodal/src/open_r1/Stage1_judge_math_resize.py``,
  ``Stage2_choice_math_resize.py`` and ``Stage3_open_math_resize.py`` (``iou_reward``, the stages'
  accuracy, and ``format_reward``).
- om-ai-lab/VLM-R1 (same commit), OVD: ``grpo_jsonl.py`` (``calculate_map``, ``map_reward``, ``od_reward``,
  ``odLength_reward``) on the repository's own vendored ``src/open-r1-multimodal/src/open_r1/utils/pycocotools``
  (``coco.py``, ``cocoeval.py``; their ``mask`` import is pycocotools').
- om-ai-lab/OVDEval @ 2ba0aa95bf71988207599d7b78cf0005ea6c9e19: ``eval.py`` (``calculate_iou``,
  ``nms_threaded``, ``cal_map``; ``cal_map`` prints its result, so its ``COCOeval`` is given a subclass
  that keeps ``stats``).
- GenuineWWD/SCS @ 7014027d1ad44af8a53a5f1993c0f03b7518b321:
  ``openrlhf/models/remote_rm/option_verifier_cut_response.py`` (``verify_format`` with the
  ``format_pattern`` set in its ``__main__``, ``verify_option``, ``consistency_reward``, ``extract_answer``,
  ``find_first_uppercase``) and the reward line of ``get_reward``.

Re-run (needs torch, torchvision, scipy, pycocotools, matplotlib and
``pip install "math-verify[antlr4_13_2]" Levenshtein pylatexenc`` for the authors' imports)::

    git clone https://github.com/om-ai-lab/VLM-R1 ...  # the repositories, at the commits above
    python tests/domains/perception/golden/make_perception_golden.py --vlm-r1 VLM-R1 --visual-rft Visual-RFT \\
        --griffon Griffon --r1-reward r1_reward --scs SCS --curr-reft Curr_REFT --ovdeval OVDEval

``--only ovd ovdeval`` recomputes those sections and keeps the others (needs only their repositories).

Inputs are fixed below and stored beside the outputs; rerunning rewrites an identical file.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import sys
import textwrap
import types
from pathlib import Path
from types import SimpleNamespace

OUT = Path(__file__).resolve().parent / "perception.json"


def load_functions(path: Path, names: list[str], namespace: dict, cls: str | None = None) -> dict:
    """Execute the named top-level (or ``cls`` member) functions of ``path`` in ``namespace``."""
    tree = ast.parse(path.read_text())
    body = tree.body
    if cls is not None:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            node.decorator_list = []
            source = textwrap.dedent(ast.get_source_segment(path.read_text(), node))
            source = re.sub(r"^@staticmethod\n", "", source)
            exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 (the authors' code, to get their numbers)
    missing = [n for n in names if n not in namespace]
    if missing:
        raise SystemExit(f"{path}: functions {missing} not found")
    return namespace


@contextlib.contextmanager
def math_verify_off(namespace: dict):
    """Make ``parse`` raise inside ``namespace``: the authors' ``try`` then falls through to the
    rules after it, which is what the zoo implements (it does not depend on math_verify)."""

    def unavailable(*args, **kwargs):
        raise RuntimeError("math_verify step disabled")

    saved, namespace["parse"] = namespace["parse"], unavailable
    try:
        yield
    finally:
        namespace["parse"] = saved


# --- VLM-R1 -----------------------------------------------------------------------------------
REC_CASES = [  # (completion, gt box original px, image (w, h), model input (w, h))
    ('<think>left dog</think><answer>{"bbox_2d": [10, 20, 110, 220]}</answer>', [10, 20, 110, 220], [640, 480], [644, 476]),
    ('<think>x</think><answer>{"bbox_2d": [50, 40, 300, 200]}</answer>', [100, 80, 600, 400], [1280, 960], [644, 476]),
    ('<think>x</think>\n<answer>[{"bbox_2d": [12, 30, 90, 160], "label": "cup"}]</answer>', [20, 35, 100, 150], [640, 480], [644, 476]),
    ('<think>x</think><answer>{"bbox_2d": [10.5, 20, 110, 220]}</answer>', [10, 20, 110, 220], [640, 480], [644, 476]),
    ('<answer>[0, 0, 5, 5]</answer>', [100, 100, 200, 200], [640, 480], [644, 476]),
    ('<think>no</think><answer>none</answer>', [100, 100, 200, 200], [640, 480], [644, 476]),
    ('<think>x</think><answer>{"bbox_2d": [5, 5, 5, 5]}</answer>', [5, 5, 5, 5], [640, 480], [640, 480]),
    ('{"bbox_2d": [10, 20, 110, 220]}', [10, 20, 110, 220], [640, 480], [644, 476]),
    ('<think>x</think><answer>{"bbox_2d":[300,200,1000,900]}</answer><answer>[1,1,2,2]</answer>', [280, 190, 1010, 880], [1920, 1080], [1932, 1092]),
    ('<think>x</think><answer>{"bbox_2d": [0, 0, 644, 476]}</answer>', [0, 0, 640, 480], [640, 480], [644, 476]),
]
FORMAT_CASES = [
    '<think>a</think><answer>{"bbox_2d": [1, 2, 3, 4]}</answer>',
    '<think>a</think>\n\n<answer>[{"bbox_2d": [1,2,3,4]}]</answer>',
    'preamble <think>a</think><answer>{"bbox_2d": [1, 2, 3, 4]}</answer> trailing',
    '<think>a</think><answer>[1, 2, 3, 4]</answer>',
    '<think>a</think><answer>{"bbox_2d": [1.5, 2, 3, 4]}</answer>',
    '<think>a\nb</think> <answer>B</answer>',
    '<think>a</think><answer>B</answer>\n',
    '<answer>B</answer>',
    '<think>a</think><answer>B</answer><answer>C</answer>',
    '',
]
TEXT_CASES = [  # (completion, reference) for all_match and default (fuzzy) accuracy
    ('<think>t</think><answer>A red car.</answer>', 'a red car'),
    ('<think>t</think><answer>a red\ncar</answer>', 'A red car'),
    ('<think>t</think><answer>a blue car</answer>', 'a red car'),
    ('<think>t</think><answer>The answer is B.</answer>', 'B'),
    ('<think>t</think><answer>I choose C, not A.</answer>', 'A.'),
    ('<think>t</think><answer>42</answer>', '42'),
    ('<think>t</think><answer>41</answer>', '42'),
    ('<think>t</think><answer>about 42 apples</answer>', '42 apples'),
    ('no tags here, Yes', 'yes'),
    ('<think>t</think><answer>There is a defect: the button overlaps.</answer>', 'the button overlaps'),
    ('<think>t</think><answer></answer>', 'cat'),
    ('<think>t</think><answer>Option D: the tallest tower; because D, is right</answer>', 'D'),
]


def vlm_r1_cases(root: Path) -> dict:
    src = root / "src" / "open-r1-multimodal" / "src" / "open_r1"
    sizes: dict[str, tuple[int, int]] = {}
    image = SimpleNamespace(open=lambda key: SimpleNamespace(size=sizes[key]))
    ns = load_functions(src / "vlm_modules" / "qwen_module.py", ["iou_reward", "format_reward_rec"],
                        {"Image": image}, cls="Qwen2VLModule")
    rec = []
    for i, (text, gt, (w, h), (iw, ih)) in enumerate(REC_CASES):
        sizes[str(i)] = (w, h)
        [score] = ns["iou_reward"]([[{"content": text}]], [f"<answer>{json.dumps(gt)}</answer>"],
                                   image_grid_thw=[[1, ih // 14, iw // 14]], image_path=[[str(i)]])
        rec.append([text, gt, [w, h], [iw, ih], score])
    rec_format = [[t, ns["format_reward_rec"]([[{"content": t}]])[0]] for t in FORMAT_CASES]

    import datetime as datetime_module
    import os

    from Levenshtein import ratio
    from math_verify import parse, verify

    ns2 = {"re": re, "os": os, "datetime": datetime_module.datetime, "ratio": ratio, "parse": parse, "verify": verify}
    load_functions(src / "grpo_jsonl.py", ["clean_text", "extract_choice", "numeric_reward", "all_match_reward",
                                           "default_accuracy_reward", "format_reward"], ns2)
    fmt = [[t, ns2["format_reward"]([[{"content": t}]])[0]] for t in FORMAT_CASES]
    text = [[c, ref, ns2["all_match_reward"](c, f"<answer> {ref} </answer>"),
             ns2["default_accuracy_reward"](c, f"<answer> {ref} </answer>")] for c, ref in TEXT_CASES]
    with math_verify_off(ns2):  # the same function with its first (math_verify) step failing
        for row, (c, ref) in zip(text, TEXT_CASES):
            row.append(ns2["default_accuracy_reward"](c, f"<answer> {ref} </answer>"))
    return {"rec_iou": rec, "rec_format": rec_format, "format": fmt, "text": text}


# --- Visual-RFT --------------------------------------------------------------------------------
RFT_GT = [[10, 10, 50, 50], [60, 60, 100, 120], [200, 30, 260, 90]]
RFT_CASES = [  # (completion, gt boxes)
    ("<think>x</think><answer>[{'Position': [10, 10, 50, 50], 'Confidence': 0.9}]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [12, 8, 52, 48], 'Confidence': 0.8}, {'Position': [62, 58, 98, 125], 'Confidence': 0.95}, {'Position': [200, 30, 260, 90], 'Confidence': 0.6}]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [12, 8, 52, 48], 'Confidence': 0.3}, {'Position': [300, 300, 350, 350], 'Confidence': 0.7}]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [10, 10, 50, 50], 'Confidence': 0.9}, {'Position': [10, 10, 50, 50], 'Confidence': 0.2}, {'Position': [11, 11, 50, 50], 'Confidence': 0.5}]</answer>", RFT_GT[:1]),
    ("<think>x</think><answer>[[{'Position': [10, 10, 50, 50], 'Confidence': 1}]]</answer>", RFT_GT[:1]),
    ("<think>x</think><answer>[{'Position': [10, 10, 50, 50], 'Confidence': 0.9}, {'Position': [60, 60, 10", RFT_GT),
    ("<think>x</think>\n<answer>\n[{'Position': [10, 10, 50, 50], 'Confidence': 0.9}]\n</answer>", RFT_GT),
    ("[{'Position': [60, 60, 100, 120], 'Confidence': 0.4}]", RFT_GT),
    ("<think>x</think><answer>[]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [10, 10, 50], 'Confidence': 0.9}]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [100, 100, 140, 140], 'Confidence': 1.5}]</answer>", RFT_GT),
    ("<think>x</think><answer>[{'Position': [10, 10, 50, 50], 'Confidence': 0.9}]</answer>", []),
    ("<think>x</think><answer>[{'Position': [20, 20, 50, 50], 'Confidence': 0.6}, {'Position': [10, 10, 45, 45], 'Confidence': 0.6}]</answer>", RFT_GT[:1]),
]


def visual_rft_cases(root: Path) -> list:
    import datetime as datetime_module
    import os

    from math_verify import parse, verify

    ns = {"re": re, "os": os, "json": json, "datetime": datetime_module.datetime, "parse": parse, "verify": verify}
    load_functions(root / "src" / "virft" / "src" / "open_r1" / "grpo.py",
                   ["extract_bbox", "calculate_iou", "sort_and_calculate_iou", "remove_duplicates",
                    "compute_reward_iou_v2", "compute_reward_confidence", "accuracy_reward_iou",
                    "accuracy_reward_confidence"], ns)
    out = []
    for text, gt in RFT_CASES:
        sol = "<answer>" + str([{"Position": b, "Confidence": 1} for b in gt]) + "</answer>"
        iou = ns["accuracy_reward_iou"]([[{"content": text}]], [sol])[0]
        conf = ns["accuracy_reward_confidence"]([[{"content": text}]], [sol])[0]
        with math_verify_off(ns):
            iou_off = ns["accuracy_reward_iou"]([[{"content": text}]], [sol])[0]
            conf_off = ns["accuracy_reward_confidence"]([[{"content": text}]], [sol])[0]
        out.append([text, gt, iou, conf, iou_off, conf_off])
    return out


# --- Vision-R1 ---------------------------------------------------------------------------------
VR1_GT = [["cat", [100, 100, 300, 260]], ["dog", [320, 80, 600, 400]], ["cat", [40, 300, 140, 420]]]
VR1_IDS = {"cat": 1, "dog": 2}
VR1_CASES = [  # (completion, solution, image (w, h), model input (w, h))
    ('```json\n[{"bbox_2d": [50, 50, 150, 130], "label": "cat"}, {"bbox_2d": [160, 40, 300, 200], "label": "dog"}, {"bbox_2d": [20, 150, 70, 210], "label": "cat"}]\n```', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": [52, 48, 150, 135], "label": "cat"}]', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": [52, 48, 150, 135], "label": "Dog"}, {"bbox_2d": [165, 40, 300, 190], "label": "cow"}]', VR1_GT, [640, 480], [320, 240]),
    ('```json\n[{"bbox_2d": [50, 50, 150, 130], "label": "cat"}, {"bbox_2d": [160, 40, 300, 200], "label": "dog"}, {"bbox_2d": [20, 150, 70, 210], "label": "cat"}, {"bbox_2d": [250, 200, 310, 230], "label": "cat"}]\n```', VR1_GT, [640, 480], [320, 240]),
    ('Here: {"bbox_2d": [50, 50, 150, 130], "label": "cat"} and {"bbox_2d": [160, 40, 300, 200], "label": "dog"}', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": [150, 50, 50, 130], "label": "cat"}]', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": [50, 50, 150], "label": "cat"}]', VR1_GT, [640, 480], [320, 240]),
    ('not json at all', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": ["50", 50, 150.7, 130], "label": "cat"}]', VR1_GT, [640, 480], [320, 240]),
    ('[{"bbox_2d": [100, 100, 300, 260], "label": "cat"}, {"bbox_2d": [320, 80, 600, 400], "label": "dog"}, {"bbox_2d": [40, 300, 140, 420], "label": "cat"}]', VR1_GT, [640, 480], [640, 480]),
    ('[{"bbox_2d": [104, 96, 296, 262], "label": "cat"}, {"bbox_2d": [330, 90, 590, 380], "label": "dog"}]', VR1_GT, [640, 480], [640, 480]),
]
VR1_EMPTY_CASES = ["None", "[]", '[{"bbox_2d": [1, 2, 3], "label": "x"}]']


def vision_r1_cases(root: Path) -> dict:
    from functools import partial

    import numpy
    import torch
    from scipy.optimize import linear_sum_assignment
    from torchvision.ops.boxes import box_area

    ns = {"torch": torch, "box_area": box_area}
    load_functions(root / "griffon" / "coor_utils.py", ["box_iou", "generalized_box_iou"], ns)
    ns.update({"re": re, "json": json, "partial": partial, "linear_sum_assignment": linear_sum_assignment,
               "mean": numpy.mean})
    load_functions(root / "Vision-R1" / "vision_r1" / "visionr1_qwen.py",
                   ["parse_json", "extract_bbox_label", "extract", "BoxPriorMatcher", "modify_list",
                    "dual_format_reward", "modify_tensor", "recall_reward", "precision_reward"], ns)
    rows = []
    for text, sol, (w, h), (iw, ih) in VR1_CASES:
        row = [text, sol, [w, h], [iw, ih]]
        for step in (None, 10, 2000):
            kw = {"solution": [json.dumps(sol)], "width": [w], "height": [h], "input_widths": [iw], "input_heights": [ih]}
            prec = ns["precision_reward"]([[{"content": text}]], step=step, num_instances=[len(sol)],
                                          target_id_maps=[json.dumps(VR1_IDS)], **kw)[0]
            rec = ns["recall_reward"]([[{"content": text}]], num_instances=[len(sol)], step=step,
                                      target_id_maps=[json.dumps(VR1_IDS)], **kw)[0]
            row += [float(prec), float(rec)]
        row.append(ns["dual_format_reward"]([[{"content": text}]], [len(sol)])[0])
        rows.append(row)
    empty = [[t, ns["dual_format_reward"]([[{"content": t}]], [0])[0],
              ns["precision_reward"]([[{"content": t}]], solution=["[]"], width=[640], height=[480], input_widths=[640],
                                     input_heights=[480], step=10, num_instances=[0],
                                     target_id_maps=[json.dumps(VR1_IDS)])[0]] for t in VR1_EMPTY_CASES]
    return {"ids": VR1_IDS, "cases": rows, "empty": empty}


class Done(Exception):
    """Raised by :class:`OneShot` to end an authors' ``while True`` queue worker after one item."""


class OneShot:
    """A queue whose ``get`` hands out one item, then raises :class:`Done`."""

    def __init__(self, item):
        self.item = item

    def get(self):
        if self.item is None:
            raise Done
        item, self.item = self.item, None
        return item


# --- R1-Reward ---------------------------------------------------------------------------------
R1R_CASES = [  # (response, answer list, consistency judged by the external LLM)
    ("<think>Response 2 is more detailed.</think><answer>2</answer>", ["<answer>2</answer>"], 1),
    ("<think>Response 2 is more detailed.</think><answer>2</answer>", ["<answer>2</answer>"], -1),
    ("<think>Response 1 is better.</think><answer>1</answer>", ["<answer>2</answer>"], 1),
    ("<think>a</think> <answer>2</answer>", ["<answer>2</answer>"], 0),
    ("<think>a</think><answer>The answer is 2</answer>", ["<answer>2</answer>"], 1),
    ("<think>a <think> b</think><answer>1</answer>", ["<answer>1</answer>"], 1),
    ("<think>a</think><answer>1</answer>\n", ["<answer>1</answer>"], 0),
    ("<answer>1</answer>", ["<answer>1</answer>"], 1),
    ("<think>a</think><answer>Best answer: 1</answer>", ["<answer>1</answer>"], -1),
    ("<think>a</think><answer>1</answer> trailing", ["<answer>1</answer>"], 1),
]


def r1_reward_cases(root: Path) -> list:
    import queue

    package = root / "openrlhf" / "models" / "remote_rm"
    for name in ("openrlhf", "openrlhf.models", "openrlhf.models.remote_rm"):
        sys.modules.setdefault(name, types.ModuleType(name))
    for name in ("math_normalize", "math_equal", "strict_math_verify"):
        module = types.ModuleType(f"openrlhf.models.remote_rm.{name}")
        sys.modules[module.__name__] = module
        setattr(sys.modules["openrlhf.models.remote_rm"], name, module)
        exec(compile((package / f"{name}.py").read_text(), f"{name}.py", "exec"), module.__dict__)  # noqa: S102
    from math_verify import parse, verify

    strict = sys.modules["openrlhf.models.remote_rm.strict_math_verify"]
    ns = {"re": re, "parse": parse, "verify": verify, "evaluate_math": strict.evaluate_math,
          "format_pattern": r"^<think>.*?</think><answer>.*?</answer>$"}
    load_functions(package / "math_verifier_mllm.py", ["verify_format", "extract_characters_regex", "verify_math"], ns)

    out = []
    for response, answers, consistency in R1R_CASES:
        results = queue.Queue()
        with contextlib.suppress(Done):  # the authors' worker loops forever; stop it after one item
            ns["verify_math"](OneShot((response, answers, "problem")), results)
        acc = float(results.get_nowait())
        fmt = float(ns["verify_format"](response))
        out.append([response, answers, consistency, fmt, acc, 0.5 * fmt + acc * (1 + 0.5 * consistency)])
    return out


def stable_reinforce_cases(root: Path) -> list:
    """``PolicyLoss(clip_eps)(log_probs, old_log_probs, advantages, action_mask)`` on seeded tensors."""
    import numpy as np
    import torch
    from torch import nn

    ns = {"torch": torch, "np": np, "nn": nn, "Optional": __import__("typing").Optional}
    load_functions(root / "openrlhf" / "models" / "utils.py", ["masked_mean"], ns)
    load_functions(root / "openrlhf" / "models" / "loss.py", ["PolicyLoss"], ns)
    out = []
    for seed, clip_eps, spread in ((0, 0.2, 0.1), (1, 0.2, 3.0), (2, 0.1, 12.0), (3, 0.28, 0.5)):
        g = torch.Generator().manual_seed(seed)
        logp = -torch.rand(3, 5, generator=g) * 4
        old = logp + torch.randn(3, 5, generator=g) * spread  # spread 12: ratios far beyond 1e3 both ways
        adv = torch.randn(3, 1, generator=g)
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.float32)
        loss = ns["PolicyLoss"](clip_eps)(logp, old, adv, mask)
        out.append({"clip_eps": clip_eps, "logp": logp.tolist(), "old_logp": old.tolist(), "advantages": adv.tolist(),
                    "mask": mask.tolist(), "loss": loss.item()})
    return out


SCS_CASES = [  # (response, answer, resampled continuations)
    ("<think>count</think><answer>B</answer>", "B", ["<answer>B</answer>", "<answer>B</answer>", "B", "<answer>B</answer>"]),
    ("<think>count</think><answer>B</answer>", "B", ["<answer>B</answer>", "<answer>C</answer>", "A is it", "<answer>B</answer>"]),
    ("<think>count</think> so <answer>(C) three</answer>", "C", ["<answer>C</answer>", "<answer>D</answer>"]),
    ("<think>x</think><answer>b</answer>", "B", ["<answer>b</answer>", "none", "<answer>B</answer>"]),
    ("<answer>B</answer>", "B", ["<answer>B</answer>"]),
    ("  <think>x</think><answer>A</answer>\n", "A", ["<answer>A</answer>", "<answer>A</answer>", "<answer>A</answer>"]),
    ("<think>x</think><answer>A</answer><answer>B</answer>", "", ["<answer>A</answer>", "<answer>B</answer>"]),
]


def scs_cases(root: Path) -> list:
    ns = {"re": re, "format_pattern": r"^<think>(?:(?!</think>).)*</think>.*<answer>(?:(?!</answer>).)*</answer>\Z"}
    load_functions(root / "openrlhf" / "models" / "remote_rm" / "option_verifier_cut_response.py",
                   ["verify_format", "extract_answer", "find_first_uppercase", "consistency_reward", "verify_option"], ns)
    import queue

    out = []
    for response, answer, resampled in SCS_CASES:
        results = queue.Queue()
        with contextlib.suppress(Done):
            ns["verify_option"](OneShot((response, answer)), results)
        acc = float(results.get_nowait())
        fmt = float(ns["verify_format"](response))
        consistency = ns["consistency_reward"](dict(enumerate(resampled)))
        out.append([response, answer, resampled, fmt, acc, consistency, 0.5 * fmt + acc + consistency])
    return out


CURR_JUDGE_CASES = [  # (completion, solution, task)
    ("<think>t</think><answer>Yes</answer>", "<answer>yes</answer>", "detection"),
    ("<think>t</think><answer>No, it is not.</answer>", "<answer>yes</answer>", "classify"),
    ("<think>t</think><answer>That is not correct</answer>", "<answer>no</answer>", "classify"),
    ("<think>t</think><answer>True", "<answer>true</answer>", "classify"),
    ("<think>t</think><answer>maybe</answer>", "<answer>no</answer>", "classify"),
    ("no tags, just yes", "<answer>yes</answer>", "classify"),
    ("<think>t</think><answer>yesterday</answer>", "<answer>no</answer>", "classify"),
    ("<think>x = 3</think><answer>3</answer>", "<answer>3</answer>", "math"),
    ("<think>t</think><answer>INCORRECT</answer>", "<answer>false</answer>", "math"),
]
CURR_CHOICE_CASES = [  # (completion, solution, task)
    ("<think>t</think><answer>B</answer>", "<answer>B</answer>", "classify"),
    ("<think>t</think><answer>The answer is (C).</answer>", "<answer>C</answer>", "classify"),
    ("<think>t</think><answer>A and C</answer>", "<answer>A,C</answer>", "classify"),
    ("<think>t</think><answer>C, A</answer>", "<answer>A,C</answer>", "classify"),
    ("<think>t</think><answer>b</answer>", "<answer>B</answer>", "classify"),
    ("<think>t</think><answer>Bird</answer>", "<answer>B</answer>", "classify"),
    ("B is my pick", "<answer>B</answer>", "classify"),
    ("<think>t</think><answer>F</answer>", "<answer>F</answer>", "classify"),
    ("<think>t</think><answer>D. 12</answer>", "<answer>D</answer>", "math"),
]
CURR_FORMAT_CASES = [
    ("<think>t</think><answer>yes</answer>", "classify"),
    ("<think>t</think>\n<answer>[{\"bbox_2d\": [1, 2, 3, 4]}]</answer>", "detection"),
    ("<think>t</think><answer>yes</answer>", "detection"),
    ("<think>t</think><answer>yes</answer> ", "classify"),
]


CURR_OPEN_CASES = [  # (completion, solution, task) for stage 3
    ('<think>x</think><answer>{"bbox": [10, 10, 50, 50]}</answer>', '<answer>{"bbox": [12, 12, 52, 52]}</answer>', "detection"),
    ("<answer>[0,0,5,5] then {[10, 10, 50, 50]}</answer>", "<answer>[10,10,50,50]</answer>", "detection"),
    ("<answer>[10.7, 10.2, 50.9, 50.5]</answer>", "<answer>[10, 10, 50, 50]</answer>", "detection"),
    ("<answer>no object here</answer>", "<answer>[10, 10, 50, 50]</answer>", "detection"),
    ("<answer>[0, 0, 10, 10]</answer>", "<answer>[0, 0, 10, 20]</answer>", "detection"),
    ('<answer>{"bbox": [10, 10, 50, 50]}', "<answer>[10, 10, 50, 50]</answer>", "detection"),
    ("<answer>[10, 10, 50, 50]</answer>", "[10, 10, 50, 50]", "detection"),
    ("<answer>[10, 10, 50, 50] [0, 0, 0, 0]</answer>", "<answer>[10, 10, 50, 50]</answer>", "detection"),
    ("<answer>[-5, 10, 50, 50]</answer>", "<answer>[0, 10, 50, 50]</answer>", "detection"),
    ("<answer>cat, dog</answer>", "<answer>cat, dog, bird</answer>", "classify"),
    ("<answer>['cat', 'dog']</answer>", "<answer>cat dog</answer>", "classify"),
    ("<answer>cat，dog、bird</answer>", "<answer>bird cat</answer>", "classify"),
    ("<answer>[cat, dog]</answer>", "<answer>cat dog</answer>", "classify"),
    ("<answer>cat, dog", "<answer>cat dog</answer>", "classify"),
    ("<answer>Cat</answer>", "<answer>cat</answer>", "classify"),
    ("<answer>cat</answer>", "cat", "classify"),
    ("<answer></answer>", "<answer></answer>", "classify"),
    ("<think>t</think><answer>\\frac{1}{2}</answer>", "<answer>0.5</answer>", "math"),
    ("<answer>The answer is C</answer>", "<answer>C</answer>", "math"),
    ("<answer>42 apples</answer>", "<answer>42</answer>", "math"),
    ("no tag 7", "<answer>8</answer>", "math"),
    ("<answer>x</answer>", "<answer>y</answer>", "math"),
    ("<answer>A, C</answer>", "<answer>C, A</answer>", "math"),
    ("<answer>17</answer>", "<answer>71</answer>", "math"),
    ("<answer>some text</answer>", "<answer>some text</answer>", "ocr"),
]


def curr_reft_cases(root: Path) -> dict:
    import datetime as datetime_module
    import io
    import os

    from math_verify import parse, verify

    src = root / "train_code" / "grpo" / "open-r1-multimodal" / "src" / "open_r1"
    base = {"re": re, "os": os, "datetime": datetime_module.datetime, "parse": parse, "verify": verify}
    judge = load_functions(src / "Stage1_judge_math_resize.py", ["iou_reward", "format_reward"], dict(base))
    choice = load_functions(src / "Stage2_choice_math_resize.py", ["iou_reward"], dict(base))
    opened = load_functions(src / "Stage3_open_math_resize.py", ["iou_reward"], {**base, "ast": ast})

    def run(fn, text, sol, task):
        with contextlib.redirect_stdout(io.StringIO()):  # the authors' functions print every sample
            return fn([[{"content": text}]], [sol], task=[task], problem=["q"])[0]

    return {
        "judge": [[t, s, k, run(judge["iou_reward"], t, s, k)] for t, s, k in CURR_JUDGE_CASES],
        "choice": [[t, s, k, run(choice["iou_reward"], t, s, k)] for t, s, k in CURR_CHOICE_CASES],
        "open": [[t, s, k, run(opened["iou_reward"], t, s, k)] for t, s, k in CURR_OPEN_CASES],
        "format": [[t, k, judge["format_reward"]([[{"content": t}]], task=[k])[0]] for t, k in CURR_FORMAT_CASES],
    }


# --- VLM-R1 OVD and OVDEval ---------------------------------------------------------------------
OVD_GT = [{"bbox_2d": [10, 10, 50, 50], "label": "cat"}, {"bbox_2d": [60, 60, 100, 120], "label": "dog"},
          {"bbox_2d": [120, 20, 180, 80], "label": "cat"}]


def _fenced(objects) -> str:
    return "```json\n" + json.dumps(objects) + "\n```"


OVD_CASES = [  # (completion, ground-truth objects; [] is the answer "None")
    (f"<think>x</think><answer>{_fenced(OVD_GT)}</answer>", OVD_GT),
    (f"<think>x</think><answer>{_fenced(OVD_GT[:1])}</answer>", OVD_GT),
    (f"<think>x</think><answer>{_fenced([{'bbox_2d': [12, 14, 52, 55], 'label': 'cat'}, {'bbox_2d': [60, 60, 100, 120], 'label': 'dog'}])}</answer>", OVD_GT[:2]),
    (f"<think>x</think><answer>{_fenced([*OVD_GT, {'bbox_2d': [200, 200, 240, 240], 'label': 'cat'}, {'bbox_2d': [10, 10, 50, 50], 'label': 'cat'}])}</answer>", OVD_GT),
    (f"<answer>{_fenced([{'bbox_2d': [10, 10, 50, 50], 'label': 'bird'}])}</answer>", OVD_GT),
    ("<think>x</think><answer>" + json.dumps(OVD_GT) + "</answer>", OVD_GT),
    ("<think>x</think><answer>None</answer>", []),
    ("<think>x</think><answer>there is nothing to detect</answer>", []),
    (f"<think>x</think><answer>{_fenced(OVD_GT[:1])}</answer>", []),
    (_fenced(OVD_GT), OVD_GT),
    (f"<answer>{_fenced(OVD_GT[:1])}</answer> then <answer>{_fenced(OVD_GT)}</answer>", OVD_GT),
    ("<answer>```json\n[{\"bbox_2d\": [10, 10, 50, 50], \"label\": \"cat\"},]\n```</answer>", OVD_GT),
    (f"<answer>{_fenced([{'bbox_2d': [10, 10, 50], 'label': 'cat'}, [1, 2], {'bbox_2d': [60, 60, 100, 120], 'label': 'dog'}])}</answer>", OVD_GT),
    (f"<answer>{_fenced([{'bbox_2d': [10, 10, 50, 50], 'label': 'cat'}] * 4)}</answer>", OVD_GT[:1]),
]


def ovd_cases(root: Path) -> list:
    """``[completion, gt, od_ap, od_ap50, odLength]`` from VLM-R1's own functions and pycocotools copy."""
    vendored = root / "src" / "open-r1-multimodal" / "src" / "open_r1" / "utils" / "pycocotools"
    from pycocotools import mask as mask_utils

    modules = {}
    for name in ("coco", "cocoeval"):
        module = types.ModuleType(f"vlm_r1_pycocotools_{name}")
        source = (vendored / f"{name}.py").read_text().replace("from pycocotools import mask as maskUtils", "")
        module.__dict__["maskUtils"] = mask_utils
        exec(compile(source, str(vendored / f"{name}.py"), "exec"), module.__dict__)  # noqa: S102
        modules[name] = module
    ns = {"re": re, "json": json, "COCO": modules["coco"].COCO, "COCOeval": modules["cocoeval"].COCOeval}
    load_functions(root / "src" / "open-r1-multimodal" / "src" / "open_r1" / "grpo_jsonl.py",
                   ["calculate_map", "map_reward", "od_reward", "odLength_reward"], ns)
    out = []
    for text, gt in OVD_CASES:
        sol = "<answer>None</answer>" if not gt else f"<answer>{_fenced(gt)}</answer>"
        with contextlib.redirect_stdout(__import__("io").StringIO()):
            scores = [ns["od_reward"](text, sol), ns["od_reward"](text, sol, score_type=1), ns["odLength_reward"](text, sol)]
        out.append([text, gt, *[float(v) for v in scores]])
    return out


OVDEVAL_GT = {  # two images in OVDEval's annotation format (Evaluation.md): COCO json + text / neg_text
    "categories": [{"supercategory": "object", "id": 0, "name": "wooden chair"},
                   {"supercategory": "object", "id": 1, "name": "metal chair"}],
    "images": [{"file_name": "a.jpg", "id": 0, "height": 120, "width": 200, "text": ["wooden chair"], "neg_text": ["metal chair"]},
               {"file_name": "b.jpg", "id": 1, "height": 90, "width": 160, "text": ["metal chair", "wooden chair"], "neg_text": []}],
    "annotations": [{"id": 0, "bbox": [10, 10, 40, 50], "category_id": 0, "image_id": 0, "iscrowd": 0, "area": 2000},
                    {"id": 1, "bbox": [100, 20, 60, 60], "category_id": 0, "image_id": 0, "iscrowd": 0, "area": 3600},
                    {"id": 2, "bbox": [5, 5, 30, 30], "category_id": 1, "image_id": 1, "iscrowd": 0, "area": 900},
                    {"id": 3, "bbox": [80, 40, 50, 40], "category_id": 0, "image_id": 1, "iscrowd": 0, "area": 2000}],
}
OVDEVAL_RESULTS = [  # COCO results: duplicates, a wrong-label box over a true one, a miss, a false positive
    {"image_id": 0, "category_id": 0, "bbox": [11, 10, 40, 50], "score": 0.9},
    {"image_id": 0, "category_id": 0, "bbox": [10, 12, 40, 48], "score": 0.6},
    {"image_id": 0, "category_id": 1, "bbox": [100, 20, 60, 58], "score": 0.95},
    {"image_id": 0, "category_id": 0, "bbox": [100, 22, 60, 60], "score": 0.5},
    {"image_id": 1, "category_id": 1, "bbox": [5, 5, 31, 30], "score": 1.0},
    {"image_id": 1, "category_id": 0, "bbox": [140, 70, 10, 10], "score": 1.0},
    {"image_id": 1, "category_id": 0, "bbox": [82, 41, 48, 40], "score": 0.7},
]


def ovdeval_cases(root: Path, tmp: Path) -> dict:
    """OVDEval's NMS (its ``nms_threaded``) and ``cal_map``'s stats on the two-image file above."""
    import collections
    import io

    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    recorded = []

    class Recording(COCOeval):
        def summarize(self):
            super().summarize()
            recorded.append([float(v) for v in self.stats])

    ns = load_functions(root / "eval.py", ["calculate_iou", "nms_threaded", "cal_map"],
                        {"np": np, "COCO": COCO, "COCOeval": Recording})
    gt_path = tmp / "ovdeval_gt.json"
    gt_path.write_text(json.dumps(OVDEVAL_GT))
    gts, preds = collections.defaultdict(list), collections.defaultdict(list)
    for ann in OVDEVAL_GT["annotations"]:
        gts[ann["image_id"]].append(ann)
    for det in OVDEVAL_RESULTS:
        preds[det["image_id"]].append(det)
    kept = [d for img, dets in preds.items() for d in ns["nms_threaded"](gts[img], dets, 0.5, 16)]
    with contextlib.redirect_stdout(io.StringIO()):
        ns["cal_map"](str(gt_path), kept)
    return {"gt": OVDEVAL_GT, "results": OVDEVAL_RESULTS, "after_nms": kept, "stats": recorded[0]}


SECTIONS = {  # name -> (repository flag, function)
    "vlm_r1": ("vlm_r1", vlm_r1_cases), "visual_rft": ("visual_rft", visual_rft_cases),
    "vision_r1": ("griffon", vision_r1_cases), "r1_reward": ("r1_reward", r1_reward_cases),
    "stable_reinforce": ("r1_reward", stable_reinforce_cases), "scs": ("scs", scs_cases),
    "curr_reft": ("curr_reft", curr_reft_cases), "ovd": ("vlm_r1", ovd_cases),
}


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--vlm-r1", "--visual-rft", "--griffon", "--r1-reward", "--scs", "--curr-reft", "--ovdeval"):
        parser.add_argument(flag, type=Path)
    parser.add_argument("--only", nargs="+", choices=[*SECTIONS, "ovdeval"], help="recompute these sections only")
    args = parser.parse_args()
    wanted = args.only or [*SECTIONS, "ovdeval"]
    golden = json.loads(OUT.read_text()) if args.only else {}
    for name in wanted:
        flag = "ovdeval" if name == "ovdeval" else SECTIONS[name][0]
        root = getattr(args, flag)
        if root is None:
            raise SystemExit(f"section {name} needs --{flag.replace('_', '-')} (a checkout of the repository)")
        if name == "ovdeval":
            with tempfile.TemporaryDirectory() as tmp:
                golden[name] = ovdeval_cases(root, Path(tmp))
        else:
            golden[name] = SECTIONS[name][1](root)
    OUT.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
