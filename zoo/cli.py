"""The ``zoo`` command: list, info, run, domains, engines, train, eval, card, push.

Heavy imports (torch, transformers, TRL) happen inside the command that needs them, so
``zoo list`` and ``zoo --help`` answer at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from zoo.registry import info, list_models
from zoo.runs import is_main_process
from zoo_common.registry import UnknownNameError

logger = logging.getLogger("zoo")


def _entry_row(name: str) -> dict[str, str]:
    e = info(name)
    return {
        "name": e.name,
        "kind": e.kind,
        "domain": e.domain,
        "task": e.task,
        "base model": e.base_model,
        "licence": e.license,
        "gated": "yes" if e.gated else "no",
        "weights": e.repo_id or ("checkpoints/" + e.name if e.released else "not released"),
    }


def markdown_table(domain: str | None = None) -> str:
    """``zoo list --markdown``: the models table of the docs site (same columns, ``docs/hooks/registry_pages.py``),
    its availability counting this machine's Hugging Face cache."""
    from zoo.availability import availability

    keys = ["name", "kind", "availability", "weights", "licence", "task"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for name in list_models(domain=domain):
        row = {**_entry_row(name), "availability": availability(info(name))}
        lines.append("| " + " | ".join(f"`{row[k]}`" if k in ("name", "weights") else row[k] for k in keys) + " |")
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    if args.markdown:
        print(markdown_table(args.domain))
        return 0
    from zoo.availability import availability

    rows = [{**_entry_row(n), "availability": availability(info(n))} for n in list_models(domain=args.domain)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no models in domain {args.domain!r}")
        return 0
    keys = ["name", "kind", "domain", "availability", "licence", "gated", "weights", "task"]
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    if not args.wide:
        keys = _narrowed(keys, widths, shutil.get_terminal_size().columns)
    print("  ".join(k.upper().ljust(widths[k]) for k in keys).rstrip())
    for r in rows:
        cells = [_fit(r[k], widths[k]).ljust(widths[k]) for k in keys]
        print("  ".join(cells).rstrip())
    return 0


def _narrowed(keys: list[str], widths: dict[str, int], columns: int) -> list[str]:
    """The columns of ``zoo list`` that fit ``columns`` characters: the task, then the weights, then the licence are
    narrowed (``widths`` in place) down to their minimums; then the gated flag, then the weights, are left out (the
    availability column says "gated" and "needs download"; ``--wide`` shows them), and the task takes the room back."""
    over, whole_task = sum(widths[k] for k in keys) + 2 * (len(keys) - 1) - columns, widths["task"]
    for key, least in (("task", 12), ("weights", 12), ("licence", 7)):
        cut = max(0, min(over, widths[key] - least))
        widths[key] -= cut
        over -= cut
    for key in ("gated", "weights"):
        if over > 0:
            keys = [k for k in keys if k != key]
            over -= widths[key] + 2
    widths["task"] += max(0, min(-over, whole_task - widths["task"]))  # what leaving columns out gave back
    return keys


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def cmd_info(args: argparse.Namespace) -> int:
    if args.name.endswith((".yaml", ".yml")) or Path(args.name).is_file():
        return _recipe_info(args)
    try:
        e = info(args.name)
    except UnknownNameError as err:
        raise UnknownNameError(f"{err}; `zoo list` shows every model") from None
    data = asdict(e)
    data["kind"] = e.kind
    if "parser" in data["spec"]:
        data["spec"]["parser"] = getattr(e.spec.parser, "__name__", None)
    data["aliases"] = list(e.aliases)
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return 0
    print(f"{e.name}  ({e.domain}: {e.task})")
    for key in ("repo_id", "architecture", "base_model", "gated", "paper", "aliases"):
        print(f"  {key:<13} {data[key]}")
    print(f"  {'revision':<13} {e.revision or '-'}" + ("" if e.revision else f"  ({e.revision_note or 'not pinned'})"))
    if e.code_license and e.code_license != e.license:
        print(f"  {'licence':<13} weights {e.license}; code {e.code_license}")
    else:
        print(f"  {'licence':<13} {e.license}")
    if e.license_source:
        print(f"  {'  source':<13} {e.license_source}")
    print(f"  {'kind':<13} {e.kind}")
    if e.rl_methods:
        print(f"  {'rl':<13} {', '.join(e.rl_methods)}")
    if e.kind == "vlm":
        spec = e.spec
        print(f"  {'pixels':<13} min {spec.min_pixels}, max {spec.max_pixels}; coordinates: {spec.coord_frame}")
        print(f"  {'parser':<13} {getattr(spec.parser, '__name__', None)}")
        if spec.system:
            print(f"  {'system':<13} {spec.system[:200]}{'...' if len(spec.system) > 200 else ''}")
        if spec.variants:
            print(f"  {'variants':<13} {', '.join(spec.variants)} (select with --system NAME)")
        if spec.templates:
            print(f"  {'templates':<13} {', '.join(spec.templates)} (select with --template NAME)")
        print(f"  {'user':<13} {spec.user[:200]!r}")
    else:
        settings = {k: v for k, v in asdict(e.spec).items() if v not in (None, (), {})}
        print(f"  {'spec':<13} {settings}")
    if e.notes:
        print(f"  {'notes':<13} {e.notes}")
    _print_reproductions(e.name)
    return 0


def _print_reproductions(entry: str) -> None:
    """The shipped recipes that claim ``entry``'s authors' run, each with its differences first."""
    from zoo import provenance
    from zoo.engines.batches import authors_run_rows
    from zoo.engines.reading import load_recipe

    for path in provenance.reproducing_recipes(entry):
        recipe = load_recipe(path)
        lines = provenance.describe(recipe.provenance, entry, cited_rows=False)
        lines += [row.render() for row in authors_run_rows(recipe)]
        print(f"  {'recipe':<13} {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
        print("\n".join(f"  {'':<13} {line}" for line in lines))


def _recipe_info(args: argparse.Namespace) -> int:
    """``zoo info RECIPE.yaml``: what it reproduces and where each setting comes from, differences first."""
    from zoo import provenance
    from zoo.engines.batches import authors_run_rows
    from zoo.engines.reading import load_recipe

    recipe = load_recipe(args.name)
    if args.json:
        print(json.dumps({"recipe": args.name, "name": recipe.name, "engine": recipe.engine,
                          "reproduces": recipe.reproduces or None, "authors_run": recipe.to_dict().get("authors_run"),
                          "provenance": [{"field": row.field, "source": row.source, "kind": row.kind}
                                         for row in provenance.rows(recipe.provenance)]}, indent=2))  # fmt: skip
        return 0
    print(f"{recipe.name}  ({recipe.engine}): {recipe.description}")
    lines = provenance.describe(recipe.provenance, recipe.reproduces)
    lines += [row.render() for row in authors_run_rows(recipe)]
    print("\n".join(f"  {line}" for line in lines) if lines else
          "  claims no authors' run (no `reproduces`); its settings are the zoo's")  # fmt: skip
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from zoo.hub import lookup
    from zoo.load import load

    entry = lookup(args.name).entry  # a registry name: its kind is known before any weight loads
    if entry is not None:
        _check_run_args(args, entry.spec, entry.name)
    pipe = load(args.name, revision=args.revision, device=args.device, dtype=args.dtype,
                trust_remote_code=args.trust_remote_code)  # fmt: skip
    kind = pipe.entry.spec.kind
    if entry is None:  # a folder: its kind is its config's
        _check_run_args(args, pipe.entry.spec, pipe.entry.name)
    if kind == "diffusion":
        return _run_diffusion(pipe, args)
    if kind == "policy":
        return _run_policy(pipe, args)
    if kind == "clip":
        return _run_clip(pipe, args)
    generation = {"max_new_tokens": args.max_new_tokens} if args.max_new_tokens else {}
    if args.temperature:
        generation.update(do_sample=True, temperature=args.temperature)
    pred = pipe(args.image, args.prompt, system=args.system, template=args.template, seed=args.seed, **generation)
    result = _loaded(pipe, **pred.to_dict())
    if args.draw:
        from zoo.images import load_image
        from zoo.visualize import draw_prediction

        picture = draw_prediction(load_image(args.image), bbox=pred.bbox, point=pred.point, label=args.prompt)
        Path(args.draw).parent.mkdir(parents=True, exist_ok=True)
        picture.save(args.draw)
        result["drawn"] = str(args.draw)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(_heading(pipe))
        for key, value in result.items():
            if key not in ("model", "revision", "source"):
                print(f"  {key}: {value}")
    return 0


def _loaded(pipe: Any, /, **fields: Any) -> dict[str, Any]:
    """A `zoo run` result: the model, the revision and source it was loaded from, then ``fields``."""
    return {"model": pipe.entry.name, "revision": pipe.revision, "source": pipe.source, **fields}


def _heading(pipe: Any) -> str:
    return f"{pipe.entry.name} @ {pipe.revision} ({pipe.source})"


#: `zoo run` flags each kind of model reads; given to another kind, a flag would be silently ignored.
_RUN_FLAGS = {"image": ("vlm", "clip"), "system": ("vlm",), "template": ("vlm",), "temperature": ("vlm",),
              "max_new_tokens": ("vlm",), "draw": ("vlm",), "out": ("diffusion",), "observation": ("policy",), "prompt": ("vlm", "clip", "diffusion")}


#: Largest ``zoo run --seed`` (zoo: the range torch's and numpy's generators both take; beyond it torch failed with
#: "Overflow when unpacking long long").
SEED_MAX = 2**32 - 1


def seed_number(text: str) -> int:
    """``--seed``: a whole number from 0 to :data:`SEED_MAX` (argparse names the flag when this refuses)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{value} is out of range: pass a whole number from 0 to {SEED_MAX}")
    return value


def _check_run_args(args: argparse.Namespace, spec: Any, name: str) -> None:
    """What ``zoo run`` of a model of ``spec`` needs and refuses, checked before the model loads: flags its kind does
    not read, a text-to-image model's prompt (not blank), and for a VLM an image and a question (not blank, where its
    template carries one: the model would answer a template around nothing)."""
    _refuse_unused(args, spec.kind)
    if spec.kind == "diffusion" and (args.prompt is None or not args.prompt.strip()):
        raise SystemExit(f"zoo run: {name} draws a text prompt; pass --prompt TEXT (not empty)")
    if spec.kind != "vlm":
        return
    if args.prompt is None or (not args.prompt.strip() and spec.asks_a_question(args.template)):
        raise SystemExit(f"zoo run: {name} answers a question about an image; pass --prompt TEXT (not empty)")
    if not args.image:
        raise SystemExit(f"zoo run: {name} answers questions about an image; pass --image PATH")


def _refuse_unused(args: argparse.Namespace, kind: str) -> None:
    unused = [f"--{name.replace('_', '-')}" for name, kinds in _RUN_FLAGS.items()
              if getattr(args, name, None) is not None and kind not in kinds]  # fmt: skip
    if unused:
        raise ValueError(f"{', '.join(unused)}: not read by a {kind} model ({args.name}); leave "
                         f"{'it' if len(unused) == 1 else 'them'} out")


def _run_clip(pipe: Any, args: argparse.Namespace) -> int:
    """Zero-shot probabilities of the comma-separated class names in ``--prompt`` for ``--image``."""
    labels = [label.strip() for label in (args.prompt or "").split(",") if label.strip()]
    if not args.image or len(labels) < 2:
        raise SystemExit(f"zoo run: {pipe.entry.name} scores an image against class names; pass --image PATH and "
                         "--prompt 'name one, name two, ...' (two or more)")
    probabilities = pipe(args.image, labels)
    if args.json:
        print(json.dumps(_loaded(pipe, probabilities=probabilities), indent=2))
    else:
        print(_heading(pipe))
        for label, probability in sorted(probabilities.items(), key=lambda item: -item[1]):
            print(f"  {probability:.3f}  {label}")
    return 0


def _run_policy(pipe: Any, args: argparse.Namespace) -> int:
    """The action chunk a control policy takes for one ``--observation`` (a JSON list, or a .json/.npy file)."""
    import numpy as np

    if args.observation is None:
        dim = pipe.entry.spec.observation_dim or pipe.config.observation_dim
        raise SystemExit(f"zoo run: {pipe.entry.name} is a control policy (an observation of {dim} numbers in, an "
                         "action out); pass --observation '[...]' or --observation FILE.json|FILE.npy")
    from zoo.pipelines.policy import read_observation

    actions = pipe(read_observation(args.observation)).actions[0]
    result = _loaded(pipe, actions=actions.tolist())
    print(json.dumps(result, indent=2) if args.json else f"{pipe.entry.name}: actions {np.round(actions, 4).tolist()}")
    return 0


def _run_diffusion(pipe: Any, args: argparse.Namespace) -> int:
    """Generate one image for ``--prompt`` with the entry's sampling settings and save it to ``--out``."""
    path = Path(args.out or f"{pipe.entry.name}.png")
    if path.is_dir():
        raise ValueError(f"--out {path} is a folder; --out names the image file to write (e.g. {path / 'image.png'})")
    out = pipe(args.prompt, seed=args.seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    out.images[0].save(path)
    result = _loaded(pipe, prompt=args.prompt, image=str(path), settings=out.settings)
    print(json.dumps(result, indent=2) if args.json else f"{pipe.entry.name}: wrote {path} ({out.settings})")
    return 0


TRAIN_DESCRIPTION = "Run a training recipe on its engine (see `zoo engines`): on this machine, or exported to a cluster."


def train_parser() -> argparse.ArgumentParser:
    """``zoo train``'s own parser (every flag, as ``zoo train --help`` and the docs' CLI page print it). It lives with
    the trainer (zoo/train.py) and is built only when asked for, so that `zoo list` does not pay for it."""
    from zoo import train

    parser = argparse.ArgumentParser(prog="zoo train", description=TRAIN_DESCRIPTION)
    train.add_arguments(parser)
    return parser


def cmd_train(args: argparse.Namespace) -> int:
    from zoo import train

    out = train.run(**vars(train_parser().parse_args(args.argv)))
    if out is not None and is_main_process():
        curves = sorted(out.glob("*_curve.png"))
        print(f"run written to {out}" + (f"; its curve: {curves[0]}" if curves else ""))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from zoo.benchmarks import BENCHMARKS, benchmark_name
    from zoo.hub import lookup
    from zoo.load import load

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit {args.limit}: evaluate at least one sample (leave --limit out for all of them)")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise ValueError(f"--out {args.out} is a file; --out names the folder the results are written into")
    # what can be refused without the weights is refused before they load: the benchmark's name, the files
    # --path names, and (for a registered model, or with --entry) the domain that evaluates it and its --option keys
    BENCHMARKS.get(benchmark_name(args.data))
    if args.path and not Path(args.path).expanduser().exists():
        raise ValueError(f"--path {args.path}: no such file or folder (the benchmark's files on this machine)")
    known = info(args.entry) if args.entry else lookup(args.name).entry
    if known is not None:
        _evaluation(args, known.domain)
    pipe = load(args.name, revision=args.revision, device=args.device, entry=args.entry,
                trust_remote_code=args.trust_remote_code)  # fmt: skip
    evaluate, options = _evaluation(args, pipe.entry.domain)
    out_dir = Path(args.out or f"outputs/eval/{pipe.entry.name}-{args.data}")
    try:
        metrics = evaluate(pipe, data=args.data, path=args.path, out_dir=out_dir, limit=args.limit, **options)
    except ValueError as err:  # a file the loader could not read: say which (decode errors do not)
        if args.path and args.path not in str(err):
            raise ValueError(f"--data {args.data} --path {args.path}: {err}") from err
        raise
    print(json.dumps(metrics, indent=2, default=str))
    print(f"details in {out_dir}")
    return 0


def _evaluation(args: argparse.Namespace, model_domain: str | None) -> tuple[Any, dict[str, Any]]:
    """The evaluation function that runs ``--data`` for a model of ``model_domain``, and its ``--option`` values."""
    from zoo.benchmarks import evaluating_domain
    from zoo.domains import DOMAINS
    from zoo.import_strings import resolve

    domain = evaluating_domain(args.data, model_domain if model_domain in DOMAINS else None)
    evaluate = resolve(domain.evaluate, what=f"the evaluation of domain {domain.name!r}")
    return evaluate, _eval_options(evaluate, args.options)


def _eval_options(evaluate: Any, pairs: Sequence[str]) -> dict[str, Any]:
    """``--option key=value`` pairs (values read as YAML scalars) that the domain's evaluation accepts."""
    import inspect

    import yaml

    params = inspect.signature(evaluate).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: write KEY=VALUE, e.g. --option response_source=answer")
        if not takes_any and key not in params:
            raise ValueError(f"--option {key}: this domain's evaluation takes no such option")
        options[key] = yaml.safe_load(value)
    return options


def cmd_domains(args: argparse.Namespace) -> int:
    from zoo.domains import discover

    found = discover()
    width = max((len(d.name) for d in found), default=0)
    for domain in found:
        print(f"{domain.name:<{width}}  {domain.summary}")
        print(f"{'':<{width}}  datasets: {', '.join(domain.datasets) or '-'}; recipes: "
              f"{', '.join(p.stem for p in domain.recipe_files()) or '-'}")  # fmt: skip
    return 0


def cmd_engines(args: argparse.Namespace) -> int:
    from zoo.engines import ENGINES

    width = max((len(name) for name in ENGINES.list()), default=0)
    for name in ENGINES.list():
        engine = ENGINES.get(name)
        aliases = f" (also {', '.join(engine.aliases)})" if engine.aliases else ""
        print(f"{name:<{width}}  {engine.summary}{aliases}")
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from zoo.cards import write_card

    if not args.all and not args.name:
        raise ValueError("name a model, or pass --all")
    for name in list_models() if args.all else [args.name]:
        print(f"model card written to {write_card(name, out_dir=Path(args.out))}")
    return 0


def _trust_remote_code_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="allow Python code shipped with the model (read it first); required when it has some")  # fmt: skip


def cmd_push(args: argparse.Namespace) -> int:
    from zoo.push import plan_push, push

    plan = plan_push(args.name, args.repo_id, private=args.private, source=args.source)
    if args.dry_run:
        print(plan.describe())
        return 0
    record = push(plan)
    print(f"pushed {plan.name} to {record['repo_url']} at revision {record['revision']}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        import gradio  # noqa: F401  (the optional extra; imported here so `import zoo` never pays for it)
    except ImportError:
        raise ImportError("zoo demo needs the demo extra: pip install 'rl-model-zoo[demo]'") from None
    from zoo.demo.server import launch

    launch(args.name, host=args.host, port=args.port, share=args.share, device=args.device,
           trust_remote_code=args.trust_remote_code)  # fmt: skip
    return 0


def build_parser() -> argparse.ArgumentParser:
    from zoo import benchmarks  # the domains' descriptors only: cheap

    parser = argparse.ArgumentParser(
        prog="zoo",
        description="A zoo of RL-tuned multimodal models: list them, run them, fine-tune and evaluate them.",
        epilog="Offline? Set HF_HUB_OFFLINE=1; models must then be in the Hugging Face cache or checkpoints/.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show debug logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="list registered models", description="List registered models.")
    p.add_argument("--domain", help="only this domain (gui, medical, ...)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--markdown", action="store_true", help="the README's markdown table")
    p.add_argument("--wide", action="store_true", help="every column whole, whatever the terminal's width")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("info", help="show one model's entry, or where a recipe's settings come from",
                       description="Show a model's catalog entry (and the recipes that reproduce its authors' run), "
                       "or a recipe's provenance: each setting's source, the zoo's differences first.")
    p.add_argument("name", help="model name or alias (e.g. patho-r1), or a recipe file (e.g. domains/gui/recipes/gui-g1-3b.yaml)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "run",
        help="answer one question about one image, draw an image from a prompt, or act on an observation",
        description="Load a model (checkpoints/, HF cache, or download) and answer one question about one image; "
        "a text-to-image model instead draws --prompt into --out, and a control policy prints the actions it "
        "takes for --observation.",
    )
    p.add_argument("name", help="model name/alias or a local model directory")
    p.add_argument("--image", help="path of the image (models that read images)")
    p.add_argument("--prompt", help="the question or instruction, the text-to-image prompt, or a CLIP model's "
                   "comma-separated class names")
    p.add_argument("--observation", metavar="JSON|FILE",
                   help="control policies: one observation, a JSON list of numbers or a .json/.npy file")
    p.add_argument("--out", metavar="PNG", help="text-to-image models: where to save the image (default: NAME.png)")
    p.add_argument("--system", help="a named prompt variant of the model (e.g. cod) or your own system prompt")
    p.add_argument("--template", help="a named user template of the model for another kind of question "
                   "(zoo info NAME lists them; e.g. Curr-ReFT's judge)")
    p.add_argument("--revision", help="Hub branch, tag or commit (default: the entry's pinned revision)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ... (default: auto)")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16 (default: auto)")
    p.add_argument("--max-new-tokens", type=int, help="generation budget (default: the authors')")
    p.add_argument("--temperature", type=float, help="sample at this temperature (default: greedy)")
    p.add_argument("--seed", type=seed_number, default=0, help=f"seed for sampling, 0 to {SEED_MAX} (default: 0)")
    p.add_argument("--draw", metavar="PNG", help="save the image with the predicted box/point drawn on it")
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    _trust_remote_code_flag(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("domains", help="list the domains and what they contribute", description="List the domains.")
    p.set_defaults(func=cmd_domains)

    p = sub.add_parser("engines", help="list the training engines", description="List the engines recipes run on.")
    p.set_defaults(func=cmd_engines)

    p = sub.add_parser("train", help="fine-tune with a recipe on its engine; see `zoo train --help`", add_help=False)
    p.add_argument("argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("eval", help="evaluate a model on a benchmark", description="Evaluate a model on a benchmark.")
    p.add_argument("name", help="model name/alias or a local model directory")
    p.add_argument("--data", required=True, help=benchmarks.help_text())
    p.add_argument("--path", help="benchmark files (annotation file or folder); synthetic data needs none")
    p.add_argument("--entry", help="for a local directory: the registered model whose prompt and parser it uses")
    p.add_argument("--limit", type=int, help="evaluate only the first N samples")
    p.add_argument("--option", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="a domain evaluation option, repeatable: --option response_source=answer (PathMMU: the "
                   "<answer> span as the headline instead of the raw response), --option max_new_tokens=512, "
                   "--option prompt=PROMPT.json (clip-zero-shot), --option recall_k=[1,5] / images_dir=DIR "
                   "(clip-retrieval)")
    p.add_argument("--out", help="output folder (default: outputs/eval/NAME-DATA)")
    p.add_argument("--revision", help="Hub branch, tag or commit")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda ...")
    _trust_remote_code_flag(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("card", help="write a model's Hugging Face card", description="Generate a model card.")
    p.add_argument("name", nargs="?", help="model name")
    p.add_argument("--all", action="store_true", help="write the card of every registered model")
    p.add_argument("--out", default="model_cards", help="folder for <name>/README.md (default: model_cards)")
    p.set_defaults(func=cmd_card)

    p = sub.add_parser("push", help="publish a model to the Hugging Face Hub", description="Upload safetensors "
                       "weights, config/processor/tokenizer files, the rendered card, training.json and the example "
                       "input the card's usage downloads (examples/FILE).")
    p.add_argument("name", help="model name (its card is published)")
    p.add_argument("--repo-id", required=True, help="target repository, e.g. my-org/gui-grounding-tiny")
    p.add_argument("--private", action="store_true", help="create the repository private")
    p.add_argument("--dry-run", action="store_true", help="print the files and the card that would be uploaded")
    p.add_argument("--source", help="model folder to publish (default: checkpoints/NAME)")
    p.set_defaults(func=cmd_push)

    p = sub.add_parser("demo", help="try a model in the browser (needs the demo extra)",
                       description="Serve a page for one model, built from its kind: ask a VLM about an image, draw "
                       "a prompt, run a policy's episodes, classify with CLIP; every page also scores an output with "
                       "a registered reward. A gated, unreleased or uncached model gets a page saying what to do.",
                       epilog="e.g. zoo demo gui-grounding-tiny, then open http://127.0.0.1:7860")  # fmt: skip
    p.add_argument("name", help="model name/alias or a local model directory")
    p.add_argument("--port", type=int, help="port to serve on (default: 7860, or the next free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--share", action="store_true", help="also open a public gradio.live link (needs network)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda ... (default: auto)")
    _trust_remote_code_flag(p)
    p.set_defaults(func=cmd_demo)
    return parser


def _handled_interrupt() -> None:
    """Say to CPython that the Ctrl-C was handled. A KeyboardInterrupt that leaves code a C extension ran through
    ``PyRun_*`` sets the interpreter's ``_Py_UnhandledKeyboardInterrupt``, and CPython (3.11) then ends the process
    by SIGINT at exit (status -2) even though :func:`main` caught it and printed the resume hint; measured: 2 of 9
    interrupted diffusion runs. Cleared here, a handled Ctrl-C exits 130; a build that does not export the flag is
    left as it is."""
    import ctypes

    try:
        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ValueError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    from zoo.job import die_with_launcher, insistent_interrupts

    die_with_launcher()  # a rank of a torchrun job stops when its launcher is killed, never trains on as an orphan
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command == "train":  # everything after `train` belongs to the trainer's own parser
        args.argv = unknown + args.argv
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    level = logging.DEBUG if args.verbose else logging.INFO
    # one log per job: the other ranks of a multi-process run say only what goes wrong
    logging.basicConfig(level=level if is_main_process() else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        # a Ctrl-C lost in a finalizer would leave the run training: repeated until it stops the command
        with insistent_interrupts() if args.command == "train" else contextlib.nullcontext():
            return args.func(args)
    except KeyboardInterrupt:
        _handled_interrupt()
        if is_main_process():
            print(f"interrupted{_resume_hint(args)}", file=sys.stderr)
        return 130
    except UnknownNameError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (RuntimeError, ValueError, OSError, ImportError) as err:
        # errors of this project carry the next step in their message; a traceback would bury it
        logger.debug("details", exc_info=True)
        print(f"error: {err}", file=sys.stderr)
        return 1


def _resume_hint(args: argparse.Namespace) -> str:
    """For an interrupted ``zoo train``: the command that continues it (its last complete checkpoint)."""
    if args.command != "train":
        return ""
    import shlex

    argv = [*args.argv, *(["--resume"] if "--resume" not in args.argv else [])]
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    # the job's own launch: a multi-process checkpoint resumes with as many processes
    launcher = f"torchrun --nproc_per_node {world} -m zoo.cli train" if world > 1 else "zoo train"
    return f"; continue from the last complete checkpoint with: {launcher} {shlex.join(argv)}"


if __name__ == "__main__":
    sys.exit(main())
