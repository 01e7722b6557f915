"""Benchmark metrics of the medical domain: U2-Bench (ultrasound), PathMMU (pathology MCQ), Patho-CLIP.

``zoo eval NAME --data X [--path FILE] [--option KEY=VALUE]`` calls :func:`run`. ``data`` is one of

* ``u2bench-<task>`` (optionally ``:<dataset id>``, e.g. ``u2bench-clinical_value_estimation:18``;
  by default each row's id is read from its ``dataset_name``): ``path`` is one TSV of the U2-Bench
  release, ``<task>`` its folder (:data:`domains.medical.data.U2_TASKS`: ``disease_diagnosis``,
  ``view_recognition_and_assessment``, ``lesion_localisation``, ``organ_detection``,
  ``keypoint_detection``, ``clinical_value_estimation``, ``report_generation``,
  ``caption_generation``) or the evalkit's short name (``cla``, ``seg``, ``measurement``,
  ``report``). A table that already has a ``response`` or ``prediction`` column (the evalkit's
  output) is scored as it is, no model needed;
* ``pathmmu`` (optionally ``:<Source>_<split>``, default ``PubMed_test_tiny``): ``path`` is
  PathMMU's ``data.json`` or its folder;
* ``clip-zero-shot``, ``clip-retrieval``: a CLIP entry's zero-shot accuracy and retrieval Recall@K as
  the Patho-CLIP authors compute them (:mod:`domains.medical.clip_eval`; options ``prompt``,
  ``images_dir``, ``recall_k``);
* ``synthetic-pathology-mcq``, ``synthetic-pathology-vqa``, ``synthetic-us-<task>``: generated
  offline (``path`` unused).

Metric rules follow the benchmarks' own code (dolphin-sound/u2-bench-evalkit@782350b
``vlmeval/eval_func/*.py``; PathMMU-Benchmark/PathMMU@f1ca4d3 ``eval/utils/eval_utils.py``):

* classification: ``parser_rate``, ``acc``, macro ``precision``/``recall``/``f1``. Ground truth
  is lower-cased with ``[``, ``]``, ``'`` removed; the response is lower-cased, not stripped. For an
  integer ground truth the response must parse with ``int()``, else the case is "failed": left
  out of every metric (and ``acc`` is over the cases left).
* localisation (``seg``): ``acc`` of the lower-cased response against the 3x3 position label of
  the ground-truth centre; non-string responses are failed and left out.
* measurement: ``MAE``, ``RMSE``, ``Std``, ``%_within_tolerance`` (0.1) on min-max scaled values,
  ``failed_items`` = responses ``float()`` cannot read (they are left out, not penalised).
* report and caption: ``Bleu-1..4`` and ``Rouge`` (ROUGE-L) x 100 as pycocoevalcap computes them.
  The evalkit's BERTScore needs ``bert-base-multilingual-cased`` downloaded and is not computed.
* PathMMU: accuracy of the option content chosen by PathMMU's parser (a random option, seeded
  42, when nothing can be parsed; ``random_guesses`` counts those). Questions PathMMU's own code
  leaves out are left out here too and counted in ``left_out``.

Where the evalkit would crash or return NaN the zoo decides and says so: a missing response
(empty cell) is a failed case; a non-finite measurement (``"nan"``) is failed; a row without
ground truth (classification, report) is left out; a metric over zero cases is ``None``. (A
``"null"`` measurement answer, which dataset 27's prompt asks for when IMT cannot be read, is
failed as on the evalkit's jsonl path; its xlsx path reads it as NaN and returns a NaN MAE.)

What is scored of a model's output (``response_source``, recorded in ``metrics.json``):

* ``raw``: the whole generated text, as PathMMU's ``eval/main.py`` passes the raw response to
  ``get_multi_choice_prediction``. The default, and the headline, for ``pathmmu``, so its numbers
  compare with the benchmark's leaderboard protocol. For a model whose outputs are Predictions
  (a think/answer parser, as Patho-R1's) both readings are reported (:func:`pathmmu_readings`).
* ``answer``: the parsed ``<answer>`` span when the model wrote one, else the text (a stricter
  reading for think/answer models). The default for the U2-Bench and synthetic tasks, and an option
  for PathMMU (``response_source="answer"`` makes it the headline).

An evaluation in which no case can be scored (every ground truth missing, no image found) is an
error, not a table of ``None``.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from domains.medical import clip_eval
from domains.medical import data as mdata
from domains.medical.metrics import macro_prf, measurement_range, regression_metrics
from domains.medical.rewards import target_position
from domains.medical.u2_prompts import PromptSource
from rewards.caption import coco_bleu, coco_rouge_l
from rewards.choice import MultipleChoice
from rewards.text import normalize_text
from zoo.outputs import Prediction

logger = logging.getLogger(__name__)

Row = dict[str, Any]
ResponseSource = Literal["raw", "answer"]
RESPONSE_SOURCES = ("raw", "answer")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _ratio(num: float, den: int) -> float | None:
    return num / den if den else None


def classification_metrics(truths: Sequence[Any], responses: Sequence[Any]) -> tuple[dict[str, Any], list[Row]]:
    """U2-Bench ``cla`` metrics (``cla_eval.model_eval``) and one row per case."""
    y_true, y_pred, rows, failed = [], [], [], 0
    for truth, response in zip(truths, responses, strict=True):
        if _missing(truth):  # zoo: the evalkit would score a NaN label as a class of its own
            rows.append({"truth": None, "response": response, "skipped": "no ground truth"})
            continue
        is_int = isinstance(truth, numbers.Integral) and not isinstance(truth, bool)
        if is_int:
            try:
                pred: Any = int(response)
            except (TypeError, ValueError):
                pred = None
            truth_v: Any = int(truth)
        elif isinstance(truth, str):
            truth_v = truth.replace("[", "").replace("]", "").replace("'", "").lower()
            pred = response.lower() if isinstance(response, str) else None
        else:
            truth_v, pred = truth, None if _missing(response) else response
        if pred is None:
            failed += 1
            rows.append({"truth": truth_v, "response": response, "failed": True})
            continue
        y_true.append(truth_v)
        y_pred.append(pred)
        rows.append({"truth": truth_v, "response": response, "correct": truth_v == pred})
    n, considered = len(y_true), len(y_true) + failed
    metrics = {"parser_rate": _ratio(n, considered), "acc": _ratio(sum(t == p for t, p in zip(y_true, y_pred)), n)}
    metrics.update(macro_prf(y_true, y_pred) if n else {"precision": None, "recall": None, "f1": None})
    return {**metrics, "n": considered, "failed_items": failed}, rows


def localization_metrics(truths: Sequence[str], responses: Sequence[Any]) -> tuple[dict[str, Any], list[Row]]:
    """U2-Bench ``seg`` accuracy (``seg_eval_v1.1.new_seg_eval``) and one row per case."""
    rows, failed, hits = [], 0, 0
    for truth, response in zip(truths, responses, strict=True):
        if not isinstance(response, str):
            failed += 1
            rows.append({"truth": truth, "response": response, "failed": True})
            continue
        hits += response.lower() == truth
        rows.append({"truth": truth, "response": response, "correct": response.lower() == truth})
    return {"acc": _ratio(hits, len(rows) - failed), "n": len(rows), "failed_items": failed}, rows


def measurement_metrics(
    truths: Sequence[float | None], responses: Sequence[Any], value_range: tuple[float, float]
) -> tuple[dict[str, Any], list[Row]]:
    """U2-Bench measurement metrics (``measure_eval_v1.2.meaeval``) and one row per case."""
    y_true, y_pred, rows, failed = [], [], [], 0
    for truth, response in zip(truths, responses, strict=True):
        if truth is None:
            rows.append({"truth": None, "response": response, "skipped": "no ground truth"})
            continue
        try:
            value = float(response)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            failed += 1
            rows.append({"truth": truth, "response": response, "failed": True})
            continue
        y_true.append(float(truth))
        y_pred.append(value)
        rows.append({"truth": truth, "response": response, "prediction": value})
    metrics = regression_metrics(y_true, y_pred, value_range).to_dict()
    return {**metrics, "failed_items": failed, "range": list(value_range)}, rows


def report_metrics(
    ids: Sequence[Any], references: Sequence[str], responses: Sequence[Any]
) -> tuple[dict[str, Any], list[Row]]:
    """U2-Bench report metrics (``report_eval.report_eval``): BLEU-1..4 and ROUGE-L, x 100.

    Cases are keyed by id as the evalkit's dicts are (a repeated id keeps its last row). A case without
    a reference is left out (zoo: the evalkit's tokenizer would fail on the empty cell).
    """
    cases = list(zip(ids, references, responses, strict=True))
    skipped = [{"id": i, "response": h, "skipped": "no ground truth"} for i, r, h in cases if _missing(r)]
    refs = {i: [str(r)] for i, r, _ in cases if not _missing(r)}
    hyps = {i: ["" if _missing(h) else str(h)] for i, r, h in cases if not _missing(r)}
    if not refs:
        return {"n": 0}, skipped
    bleu, _ = coco_bleu(refs, hyps)
    rouge, per_case = coco_rouge_l(refs, hyps)
    metrics: dict[str, Any] = {f"Bleu-{k + 1}": 100 * v for k, v in enumerate(bleu)}
    metrics.update({"Rouge": 100 * rouge, "BERTScore": None, "n": len(refs)})
    rows = [{"id": i, "reference": refs[i][0], "response": hyps[i][0], "rouge_l": s} for i, s in zip(refs, per_case)]
    return metrics, rows + skipped


def pathmmu_choice(response: str, index2ans: Mapping[str, str], rng: random.Random) -> tuple[str, bool]:
    """PathMMU's ``get_multi_choice_prediction``: (chosen letter, whether it was a random guess)
    (PathMMU-Benchmark/PathMMU@f1ca4d3:eval/utils/eval_utils.py:9-58)."""
    for char in ",.!?;:'":
        response = response.strip(char)
    response = f" {response} "
    choices = list(index2ans)
    candidates = [c for c in choices if f"({c})" in response]
    bracketed, by_index = bool(candidates), True
    if not candidates:
        candidates = [c for c in choices if f" {c} " in response]
    if not candidates and len(response.split()) > 5:
        candidates = [c for c, text in index2ans.items() if text.lower() in response.lower()]
        by_index = not candidates
    if not candidates:
        return rng.choice(choices), True
    if len(candidates) == 1:
        return candidates[0], False
    if by_index:
        positions = [response.rfind(f"({c})" if bracketed else f" {c} ") for c in candidates]
    else:
        positions = [response.lower().rfind(index2ans[c].lower()) for c in candidates]
    return candidates[positions.index(max(positions))], False


def pathmmu_metrics(
    samples: Sequence[Any], responses: Sequence[str], seed: int = 42
) -> tuple[dict[str, Any], list[Row]]:
    """PathMMU accuracy: the chosen option's text equals the answer's text, case-insensitive, a response
    equal to the answer's text counting as that answer (eval/main.py:28-30, eval_utils.py:132-162). The
    random fallback draws from a generator seeded 42, as PathMMU seeds its module (eval_utils.py:6)."""
    rng, rows, correct, guesses = random.Random(seed), [], 0, 0
    for sample, response in zip(samples, responses, strict=True):
        index2ans, truth = sample.meta["index2ans"], sample.target["answer_text"]
        letter, guessed = pathmmu_choice(response, index2ans, rng)
        chosen = truth if response == truth else index2ans[letter]
        correct += chosen.lower() == truth.lower()
        guesses += guessed
        rows.append({"No": sample.meta["No"], "response": response, "pred_ans": chosen, "gt_content": truth,
                     "correct": chosen.lower() == truth.lower(), "random_guess": guessed})
    return {"acc": _ratio(correct, len(rows)), "n": len(rows), "random_guesses": guesses}, rows


def pathmmu_readings(
    samples: Sequence[Any], outputs: Sequence[Any], headline: ResponseSource = "raw"
) -> tuple[dict[str, Any], list[Row]]:
    """PathMMU accuracy of a model's outputs in the ``headline`` reading and, for Predictions, in the other.

    PathMMU's own reading is the raw text (eval/main.py:28). For a think/answer model it often decides
    by chance: a bare ``<answer>D</answer>`` has neither ``(D)`` nor `` D `` in it, and one or two words
    are too few for the option-text match, so the seeded random option is taken. The ``answer`` reading
    parses the ``<answer>`` span instead (the text when there is none). Both are reported, each with its
    own accuracy and ``random_guesses``; the metrics' ``acc`` is the headline's.
    """
    metrics, rows = pathmmu_metrics(samples, [_response(o, headline) for o in outputs])
    if not any(isinstance(o, Prediction) for o in outputs):
        return metrics, rows
    other: ResponseSource = "answer" if headline == "raw" else "raw"
    other_metrics, other_rows = pathmmu_metrics(samples, [_response(o, other) for o in outputs])
    readings = {source: {"acc": m["acc"], "random_guesses": m["random_guesses"]}
                for source, m in ((headline, metrics), (other, other_metrics))}  # fmt: skip
    for row, alt in zip(rows, other_rows):
        row[other] = {key: alt[key] for key in ("response", "pred_ans", "correct", "random_guess")}
    spans = sum(getattr(o, "answer", None) is not None for o in outputs)
    return {**metrics, "headline": headline, "readings": readings, "answer_spans": spans}, rows


def mcq_metrics(samples: Sequence[Any], responses: Sequence[str]) -> tuple[dict[str, Any], list[Row]]:
    """Accuracy of the option (letter or option text) each response picks; parse failures are wrong."""
    results = MultipleChoice()(list(responses), list(samples))
    rows = [{"id": s.id, "response": r, "truth": s.target["answer"], "correct": bool(res.score), "error": res.error}
            for s, r, res in zip(samples, responses, results)]
    return {"acc": _ratio(sum(r["correct"] for r in rows), len(rows)), "n": len(rows)}, rows


# --- dispatch: `zoo eval` ----------------------------------------------------------------------

U2_PREFIX = "u2bench-"
SYNTHETIC = {
    "synthetic-pathology-mcq": ("synthetic_pathology", {"task": "mcq"}),
    "synthetic-pathology-vqa": ("synthetic_pathology", {"task": "vqa"}),
    **{f"synthetic-us-{t}": ("synthetic_ultrasound", {"task": t}) for t in mdata.US_TASKS},
}


def _response(prediction: Any, source: ResponseSource) -> Any:
    """What a benchmark scores: a string as is; of a Prediction, its raw text (``raw``) or its parsed
    ``<answer>`` falling back to the text (``answer``)."""
    if prediction is None or isinstance(prediction, (str, numbers.Number)):
        return prediction
    answer = getattr(prediction, "answer", None)
    return answer if source == "answer" and answer is not None else prediction.text


def generate(pipe: Callable[..., Any], samples: Sequence[Any], batch_size: int = 8, **generation: Any) -> list[Any]:
    """Outputs of a zoo pipeline on ``samples``: VLMs answer the question (``generation`` goes to
    ``model.generate``, e.g. ``max_new_tokens``) with Predictions; CLIP picks the most probable option."""
    from zoo.pipelines.clip import ClipPipeline

    out: list[Any] = []
    for start in tqdm(range(0, len(samples), batch_size), desc="generating", unit="batch", disable=None):
        batch = samples[start : start + batch_size]
        images = [s.images[0] for s in batch]
        if isinstance(pipe, ClipPipeline):
            for sample, image in zip(batch, images):
                options = sample.target.get("options")
                if not options:
                    raise ValueError(f"a CLIP model answers multiple-choice samples only; {sample.id} has no options")
                probs = pipe(image, list(options.values()))
                best = max(probs, key=probs.get)
                out.append("(" + next(k for k, v in options.items() if v == best) + ")")
        else:
            out.extend(pipe(images, [s.question for s in batch], **generation))
    return out


def _given(predictions: Any, ids: Sequence[str]) -> list[Any]:
    """The given predictions in sample order: looked up by sample id in a mapping, else one per sample in order."""
    if isinstance(predictions, Mapping):
        missing = [i for i in ids if i not in predictions]
        if missing:
            raise ValueError(f"no prediction for sample id(s) {missing[:5]} ({len(missing)} in all)")
        return [predictions[i] for i in ids]
    if len(predictions) != len(ids):
        raise ValueError(f"{len(predictions)} predictions for {len(ids)} samples; give one per sample, in order")
    return list(predictions)


def _outputs(source: Any, samples: Sequence[Any], batch_size: int, generation: Mapping[str, Any]) -> list[Any]:
    """What the model wrote for each sample: generated by a pipeline, or the predictions given."""
    if callable(source):
        return generate(source, samples, batch_size, **generation)
    return _given(source, [s.id for s in samples])


def _responses(
    source: Any, samples: Sequence[Any], batch_size: int, generation: Mapping[str, Any],
    response_source: ResponseSource = "answer",
) -> list[Any]:  # fmt: skip
    return [_response(o, response_source) for o in _outputs(source, samples, batch_size, generation)]


def _table_responses(frame: Any, rule: str, path: str) -> list[Any]:
    """A table's own answers: ``response`` (the evalkit's jsonl) or ``prediction`` (VLMEvalKit's xlsx);
    for ``cla`` the evalkit takes ``response`` when it is set and ``prediction`` otherwise
    (vlmeval/eval_func/cla_eval.py:69)."""
    key = "response" if "response" in frame.columns else "prediction"
    if key not in frame.columns:
        raise ValueError(f"{path} has no 'response' or 'prediction' column; pass a model to generate them")
    if rule == "cla" and "response" in frame.columns and "prediction" in frame.columns:
        return [r if isinstance(r, str) and r else p for r, p in zip(frame["response"], frame["prediction"])]
    return list(frame[key])


def _u2bench(source: Any, task: str, dataset: str | None, path: str, limit: int | None, batch_size: int,
             generation: Mapping[str, Any], response_source: ResponseSource, asked: Mapping[str, Any],
             ) -> tuple[dict[str, Any], list[Row]]:  # fmt: skip
    """U2-Bench's metrics of one table; ``asked`` (``evalkit``, ``prompts``, ``prompt_file``) picks the prompts
    a model is asked (:class:`~domains.medical.u2_prompts.U2Prompts`), which the metrics record."""
    folder, spec = mdata.u2_task(task)
    frame = mdata.read_table(path)
    frame = frame.head(limit) if limit else frame
    truths = list(frame[mdata.truth_column(frame, folder)])
    if source is None:
        responses, prompts = _table_responses(frame, spec.rule, path), {"source": "none: the table's own responses"}
    elif not callable(source):  # answers given: nothing is asked
        ids = [str(row.get("index", i)) for i, row in enumerate(frame.to_dict("records"))]
        responses = [_response(o, response_source) for o in _given(source, ids)]
        prompts = {"source": "none: responses given by the caller"}
    else:
        samples = mdata.load_u2bench_tsv(path, folder, dataset, limit=limit, **asked)
        responses = _responses(source, samples, batch_size, generation, response_source)
        prompts = samples[0].meta["prompts"] if samples else {}
    metrics, rows = _u2_scores(spec.rule, frame, path, dataset, truths, responses)
    return {**metrics, "prompts": prompts}, rows


def _u2_scores(rule: str, frame: Any, path: str, dataset: str | None, truths: list[Any], responses: list[Any],
               ) -> tuple[dict[str, Any], list[Row]]:  # fmt: skip
    """The evalkit's metrics of one scoring rule (module docstring) for a table's truths and responses."""
    if rule == "cla":
        return classification_metrics(truths, responses)
    if rule == "seg":
        return localization_metrics([mdata.u2bench_position(c) for c in truths], responses)
    if rule == "measurement":
        ids = mdata.row_datasets(frame, path, dataset)
        if len(set(ids)) > 1:
            raise ValueError(f"{path}: rows of datasets {sorted(set(ids))}; the evalkit scales each dataset's "
                             "measurements by its own range: score one dataset per table")  # fmt: skip
        values = [mdata.u2bench_measurement(c, d) for c, d in zip(truths, ids)]
        return measurement_metrics(values, responses, measurement_range(ids[0] if ids else dataset or ""))
    ids = list(frame["id"] if "id" in frame.columns else frame["index"] if "index" in frame.columns else frame.index)
    return report_metrics(ids, truths, responses)


def _synthetic(source: Any, name: str, limit: int | None, batch_size: int, generation: Mapping[str, Any],
               response_source: ResponseSource):  # fmt: skip
    loader, kwargs = SYNTHETIC[name]
    samples = getattr(mdata, loader)(n=limit or 32, **kwargs)
    responses = _responses(source, samples, batch_size, generation, response_source)
    task = kwargs["task"]
    if task == "mcq":
        return mcq_metrics(samples, responses)
    if task == "vqa":
        hits = [normalize_text(str(r)) == normalize_text(s.target["answer"]) for s, r in zip(samples, responses)]
        rows = [{"id": s.id, "response": r, "correct": h} for s, r, h in zip(samples, responses, hits)]
        return {"acc": _ratio(sum(hits), len(hits)), "n": len(hits)}, rows
    targets = [s.target for s in samples]
    if task == "classification":
        return classification_metrics([t["label"] for t in targets], responses)
    if task == "localization":
        return localization_metrics([target_position(t) for t in targets], responses)
    if task == "measurement":
        return measurement_metrics([t["value"] for t in targets], responses, tuple(targets[0]["range"]))
    return report_metrics([s.id for s in samples], [t["report"] for t in targets], responses)


def _jsonable(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def evaluate(
    pipe_or_predictions: Any,
    data: str,
    path: str | None = None,
    out_dir: str | Path | None = None,
    limit: int | None = None,
    batch_size: int = 8,
    response_source: ResponseSource | None = None,
    evalkit: str | None = None,
    prompts: PromptSource = "evalkit",
    prompt_file: str | None = None,
    **generation: Any,
) -> dict[str, Any]:
    """Score a pipeline, a list/mapping of predictions, or (``None``) a file's own predictions.

    U2-Bench asks the evalkit's prompts (:mod:`domains.medical.u2_prompts`): ``evalkit`` is the user's checkout of
    dolphin-sound/u2-bench-evalkit whose ``cla_prompt.json``/``mea_prompt.json`` classification and measurement ask
    (``prompt_file`` names one such JSON directly); ``prompts="row"`` asks the release's ``prompt`` cells instead.
    The metrics' ``prompts`` says which were asked.

    ``pipe_or_predictions`` is a zoo pipeline (called on each sample), a list of responses in
    sample order, a mapping sample id -> response (PathMMU's ``No``, U2-Bench's ``index``), or
    ``None`` for a U2-Bench table with its own ``response``/``prediction`` column. Responses may
    be strings or :class:`~zoo.outputs.Prediction` objects. ``response_source`` says what of a
    Prediction is scored (module docstring): ``raw`` text or the ``answer`` span; ``None`` takes the
    benchmark's default (``raw`` for PathMMU, as its authors' ``main.py``; ``answer`` elsewhere).

    CLIP benchmarks read their options from ``generation`` (``zoo eval``'s ``--option``): ``prompt``
    (zero-shot), ``images_dir`` and ``recall_k`` (retrieval).

    Returns the metrics (``response_source`` included for answers of a VLM); with ``out_dir`` also
    writes ``<out_dir>/metrics.json`` holding the metrics and one record per case (truth, response,
    correctness or failure).
    """
    name, _, arg = data.partition(":")
    source = response_source or ("raw" if name == "pathmmu" else "answer")
    if source not in RESPONSE_SOURCES:
        raise ValueError(f"response_source={response_source!r}; use one of {RESPONSE_SOURCES}")
    if name in clip_eval.BENCHMARKS:
        if response_source is not None:
            raise ValueError(f"{name} scores CLIP embeddings; response_source applies to a VLM's answers")
        metrics, rows = clip_eval.evaluate(name, pipe_or_predictions, path, limit, generation)
    elif name.startswith(U2_PREFIX):
        if not path:
            raise ValueError(f"{data} needs path= a U2-Bench TSV")
        task = name[len(U2_PREFIX) :]
        asked = {"evalkit": evalkit, "prompts": prompts, "prompt_file": prompt_file}
        metrics, rows = _u2bench(pipe_or_predictions, task, arg or None, path, limit, batch_size, generation, source,
                                 asked)  # fmt: skip
        metrics = {"task": mdata.u2_task(task)[0], **metrics}
    elif name == "pathmmu":
        if not path:
            raise ValueError("pathmmu needs path= PathMMU's data.json (or its folder)")
        if pipe_or_predictions is None:
            raise ValueError("pathmmu has no predictions in its data file; pass a model or a list of responses")
        samples, left_out = mdata.pathmmu_samples(path, arg or "PubMed_test_tiny", limit=limit)
        outputs = _outputs(pipe_or_predictions, samples, batch_size, generation)
        metrics, rows = pathmmu_readings(samples, outputs, source)
        metrics["left_out"] = left_out
    elif name in SYNTHETIC:
        if path:
            raise ValueError(f"--data {data} is generated; drop --path")
        if pipe_or_predictions is None:
            raise ValueError(f"{name} is generated here; pass a model or a list of responses")
        metrics, rows = _synthetic(pipe_or_predictions, name, limit, batch_size, generation, source)
    else:
        known = [U2_PREFIX + t for t in (*mdata.U2_TASKS, *mdata.U2_ALIASES)] + ["pathmmu", *SYNTHETIC]
        raise ValueError(f"unknown medical benchmark {data!r}; use one of {[*known, *clip_eval.BENCHMARKS]}")
    if all(row.get("skipped") for row in rows):  # also true of no rows: an evaluation of nothing is no result
        reason = f" ({rows[0]['skipped']})" if rows else ""
        raise ValueError(
            f"{data}: no case could be scored out of {len(rows)}{reason}; check the file, --limit and its "
            "ground-truth column"
        )
    result = {"data": data, **metrics}
    if name not in clip_eval.BENCHMARKS:
        result["response_source"] = source
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        record = {"data": data, "path": str(path) if path else None, "metrics": result, "samples": rows}
        (out / "metrics.json").write_text(json.dumps(record, indent=2, default=_jsonable))
        logger.info("wrote %s", out / "metrics.json")
    return result


def run(
    pipe: Any,
    data: str,
    path: str | None = None,
    out_dir: str | Path | None = None,
    limit: int | None = None,
    **generation: Any,
) -> dict[str, Any]:
    """Entry point of ``zoo eval``: :func:`evaluate` with the CLI's arguments."""
    return evaluate(pipe, data=data, path=path, out_dir=out_dir, limit=limit, **generation)
