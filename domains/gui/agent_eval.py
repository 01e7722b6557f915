"""Evaluation of a GUI agent on AndroidControl-format trajectories (UI-S1's jsonl layout): the authors' SOP
and the zoo's step-level metrics.

``SOP`` is UI-S1's Semi-Online Performance exactly as the authors' ``evaluation/eval_qwenvl.py`` computes it
(:mod:`domains.gui.sop`): greedy, each episode walked with the model's own answers as history until its
first step that is not an exact match under the script's matcher; ``Success Rate`` (percent of episodes
matched to the end) and ``Average Progress`` (mean share of steps matched before the first miss), an
unparsable answer zeroing its episode's progress.

The other blocks are this project's (``zoo_metrics`` names them in ``metrics.json``). Each episode is
walked again with :func:`~zoo.engines.vlm.semi_online_rollout.semi_online_rollout`, greedy, one copy,
``patch_threshold=-1``: every step is scored, and after a wrong step the expert's answer continues the
dialogue, so step ``t`` is always asked on the recorded screen ``t`` with a history that reached it (the
static, step-wise protocol of AndroidControl). Scores are the ``ui-s1`` training reward's matcher
(``domains.gui.rewards.check_action_match``, the file's candidate-box lists normalised):

* ``steps.type_match`` — the action type is right (AndroidControl's "type" accuracy);
* ``steps.exact_match`` — type and arguments right (its step accuracy / "SR");
* ``episodes.episode_success`` — every step of the episode exact;
* ``by_action_type`` and ``click_localisation`` (below).

Data names: ``android-control`` (high-level goal), ``android-control-low`` (goal + step
instruction), each ``--path FILE.jsonl`` with screenshots in ``images/`` beside it (or the
absolute paths the file names), and ``synthetic-episodes`` (generated, held-out seed).
``metrics.json``, ``predictions.jsonl`` and ``predictions.png`` (a strip of annotated
screenshots: expert point/box in green, predicted point in magenta) are written to ``out_dir``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zoo.data import Sample
from zoo.eval_results import write_results

if TYPE_CHECKING:
    from zoo.kinds import VLMSpec

logger = logging.getLogger(__name__)

AGENT_BENCHMARKS = ("android-control", "android-control-low", "synthetic-episodes")
SYNTHETIC_EPISODES_SEED = 4242  # held out: training recipes draw other seeds


def load_agent_data(data: str, path: str | None, limit: int | None) -> list[list[Sample]]:
    """Episodes (lists of step samples) for a ``--data`` name; ``limit`` counts episodes.

    Each step's question is the episode's goal (``android-control-low`` marks its steps to show their
    instruction too); the evaluated entry's contract writes the turns (:func:`evaluate_agent`'s ``spec``).
    """
    from domains.gui.data import load_synthetic_episodes, load_ui_s1_jsonl
    from zoo.engines.vlm.semi_online_rollout import group_episodes

    if data == "synthetic-episodes":
        if path is not None:
            raise ValueError("--data synthetic-episodes is generated; drop --path")
        return group_episodes(load_synthetic_episodes(n=limit or 50, seed=SYNTHETIC_EPISODES_SEED))
    if data not in AGENT_BENCHMARKS:
        raise ValueError(f"unknown GUI agent benchmark {data!r}; choose one of {', '.join(AGENT_BENCHMARKS)}")
    if path is None:
        raise ValueError(f"--data {data} needs --path pointing at an AndroidControl-format .jsonl (UI-S1 layout)")
    images = Path(path).parent / "images"
    samples = load_ui_s1_jsonl(path, image_root=images if images.is_dir() else None,
                               instruction_level="low" if data.endswith("-low") else "high")  # fmt: skip
    episodes = group_episodes(samples)
    return episodes if limit is None else episodes[:limit]


def agent_rows(records: Sequence[Any]) -> list[dict[str, Any]]:
    """One JSON-ready row per evaluated step (rollout records from the ``ui-s1`` reward), episode by episode."""
    rows = []
    for r in sorted(records, key=lambda r: (r.group, r.step)):
        target = r.sample.target
        rows.append({
            "id": r.sample.id, "episode_id": r.sample.meta.get("episode_id"), "step": r.step,
            "action_type": target["action"].get("action"), "truth": target["action"],
            "text": r.generation.text, "reward": r.reward,
            "type_match": bool(r.components.get("type_match", 0.0)), "exact_match": bool(r.match),
            "image_size": target.get("image_size"), "resized_size": target.get("resized_size"),
        })  # fmt: skip
    return rows


def summarise_agent(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The zoo's metrics: step type/exact accuracy (overall and by action type), episode success and, where
    there are clicks, how well they are located (:func:`click_localisation`)."""
    if not rows:
        raise ValueError("no evaluated steps")
    episodes: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        episodes[row["episode_id"]].append(row)
        by_type[str(row["action_type"])].append(row)

    def accuracy(group: Sequence[dict[str, Any]]) -> dict[str, float]:
        n = len(group)
        return {"type_match": sum(r["type_match"] for r in group) / n,
                "exact_match": sum(r["exact_match"] for r in group) / n, "n": n}  # fmt: skip

    solved = [all(r["exact_match"] for r in steps) for steps in episodes.values()]
    return {
        "steps": accuracy(rows),
        "episodes": {"n": len(episodes), "episode_success": sum(solved) / len(solved)},
        "by_action_type": {name: accuracy(group) for name, group in sorted(by_type.items())},
        **({"click_localisation": located} if (located := click_localisation(rows)) else {}),
    }


def click_localisation(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Does the agent find what it clicks, or guess? Over click steps whose truth has a point and whose answer
    parses to one (original pixels): the median distance from the truth; the same distance with each prediction
    set against the *next* click step's truth (a click that ignores its screen does about as well on both); and
    the Pearson correlation of predicted and true x and of y (0: the screen does not move the click; ``None``
    when either is constant). Exact match alone cannot tell a near miss from a guess, and RL can only sharpen
    the first. ``None`` under three such steps."""
    from math import hypot
    from statistics import StatisticsError, correlation, median

    pairs = [(point, row["truth"]["coordinate"]) for row in rows
             if row["action_type"] == "click" and row["truth"].get("coordinate") and (point := _predicted_point(row))]  # fmt: skip
    n = len(pairs)
    if n < 3:
        return None

    def corr(axis: int) -> float | None:
        try:
            return correlation([p[axis] for p, _ in pairs], [t[axis] for _, t in pairs])
        except StatisticsError:
            return None

    def median_distance(points: Sequence[Sequence[float]], targets: Sequence[Sequence[float]]) -> float:
        return median(hypot(p[0] - t[0], p[1] - t[1]) for p, t in zip(points, targets))

    points, targets = [p for p, _ in pairs], [t for _, t in pairs]
    return {"n": n, "median_distance": median_distance(points, targets),
            "median_distance_to_next_target": median_distance(points, targets[1:] + targets[:1]),
            "correlation": {"x": corr(0), "y": corr(1)}}  # fmt: skip


def _predicted_point(row: dict[str, Any]) -> list[float] | None:
    """The predicted click in original pixels (the model answers in its resized frame)."""
    from domains.gui.prompts import parse_ui_s1

    point = parse_ui_s1(row["text"]).get("point")
    if point is None or not row.get("resized_size"):
        return point
    (w, h), (rw, rh) = row["image_size"], row["resized_size"]
    return [point[0] * w / rw, point[1] * h / rh]


def draw_strip(episodes: Sequence[Sequence[Sample]], rows: Sequence[dict[str, Any]], path: Path, n: int = 12) -> Path:
    """The first ``n`` evaluated steps, annotated (truth green, prediction magenta), tiled in one PNG."""
    from zoo.images import load_image
    from zoo.visualize import draw_prediction, grid

    samples = {s.id: s for episode in episodes for s in episode}
    tiles = []
    for row in rows[:n]:
        truth = row["truth"]
        mark = "OK" if row["exact_match"] else ("TYPE" if row["type_match"] else "MISS")
        tiles.append(draw_prediction(
            load_image(samples[row["id"]].images[0]), point=_predicted_point(row), truth=truth.get("bbox"),
            label=f"{mark} ep {row['episode_id']} #{row['step']} {truth.get('action')}",
        ))  # fmt: skip
    grid(tiles, columns=min(6, len(tiles)), cell=240).save(path)
    return path


def _walk(model: Any, processor: Any, episodes: Sequence[Sequence[Sample]], max_new_tokens: int, score: Any,
          patch_threshold: int, match_component: str, spec: VLMSpec | None) -> list[Any]:  # fmt: skip
    """Greedy one-copy walk of every episode, each step asked as ``spec`` asks it (the recipes' training loops
    apply the same, :func:`~zoo.engines.vlm.contract.with_turn_contract`); a patched turn is written as the model
    was taught to answer: with location tokens when its tokenizer holds them (:mod:`domains.gui.location_tokens`),
    else UI-S1's JSON."""
    from domains.gui import location_tokens
    from domains.gui.prompts import ui_s1_action_response, ui_s1_location_response
    from zoo.engines.vlm.contract import with_turn_contract
    from zoo.engines.vlm.multiturn_policy import VLMPolicy
    from zoo.engines.vlm.semi_online_rollout import semi_online_rollout

    policy = VLMPolicy(model, processor, max_new_tokens=max_new_tokens, do_sample=False)
    framed = [[policy.in_model_frame(with_turn_contract(s, spec)) for s in episode] for episode in episodes]
    expert = ui_s1_location_response if location_tokens.in_vocabulary(processor.tokenizer) else ui_s1_action_response
    return semi_online_rollout(framed, policy, score, expert, rollout_n=1, patch_threshold=patch_threshold,
                               match_component=match_component, image_first=spec is not None and spec.image_first)  # fmt: skip


def evaluate_agent(model: Any, processor: Any, episodes: Sequence[Sequence[Sample]], max_new_tokens: int = 128,
                   spec: VLMSpec | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
    """The zoo's step-wise evaluation of a transformers VLM (expert patches after every wrong step, the
    ``ui-s1`` reward's matcher), the turns written by ``spec``'s contract (``None``: the goal as every turn's
    text, the screenshot after it); returns ``(rows, metrics)``."""
    from domains.gui.rewards import UiS1Reward

    records = _walk(model, processor, episodes, max_new_tokens, UiS1Reward(box_lists=True), -1, "extract_match", spec)
    rows = agent_rows(records)
    return rows, summarise_agent(rows)


def evaluate_sop(model: Any, processor: Any, episodes: Sequence[Sequence[Sample]], max_new_tokens: int = 128,
                 spec: VLMSpec | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """UI-S1's SOP as the authors compute it (:mod:`domains.gui.sop`): each episode walked with the model's
    own answers until its first miss (``patch_threshold=0``), the turns written by ``spec`` as in
    :func:`evaluate_agent`; returns ``(metrics, per-episode rows)``."""
    from domains.gui.sop import EXACT, SopScore, summarise_sop

    return summarise_sop(_walk(model, processor, episodes, max_new_tokens, SopScore(), 0, EXACT, spec))


#: What ``metrics.json`` says of the blocks that are not the authors' SOP.
ZOO_METRICS = ("steps, episodes, by_action_type, click_localisation: this project's metrics, every step asked after "
               "expert patches and scored by the ui-s1 training reward's matcher; the authors' metric is SOP")


def run(pipe: Any, data: str, path: str | None, out_dir: str | Path, limit: int | None = None) -> dict[str, Any]:
    """``zoo eval NAME --data android-control|android-control-low|synthetic-episodes``: metrics + strip.

    Writes ``metrics.json`` (``SOP``, the authors' metric, then the zoo's blocks), ``predictions.jsonl`` (the
    zoo's per-step rows), ``sop_episodes.jsonl`` (the SOP walk's per-episode result, the fields the authors'
    script writes) and ``predictions.png``. Each step is asked as the evaluated entry's contract asks it, as
    its recipes train (:func:`~zoo.engines.vlm.contract.with_turn_contract`): UI-S1's turns for ``ui-s1-7b``,
    the goal as each turn's text for the CPU-scale ``gui-agent-tiny``.
    """
    import json

    spec = pipe.entry.spec
    episodes = load_agent_data(data, path, limit)
    if not episodes:
        raise ValueError(f"--data {data} yielded no episodes (check --path and --limit)")
    sop, sop_rows = evaluate_sop(pipe.model, pipe.processor, episodes, spec.max_new_tokens, spec)
    rows, summary = evaluate_agent(pipe.model, pipe.processor, episodes, spec.max_new_tokens, spec)
    metrics = {"model": getattr(pipe.entry, "name", None), "data": data, "SOP": sop, **summary,
               "zoo_metrics": ZOO_METRICS}  # fmt: skip
    out_dir = write_results(out_dir, metrics, rows)
    (out_dir / "sop_episodes.jsonl").write_text("".join(json.dumps(row) + "\n" for row in sop_rows))
    draw_strip(episodes, rows, out_dir / "predictions.png")
    logger.info("%s on %s: SOP success rate %.1f%%, average progress %.3f; zoo step exact %.3f -> %s",
                metrics["model"], data, sop["Success Rate"], sop["Average Progress"], summary["steps"]["exact_match"],
                out_dir)  # fmt: skip
    return metrics
