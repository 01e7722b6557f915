"""MkDocs hook: the pages generated from the registries at build time, so a new entry gets its page unwritten.

- ``models/index.md``: the model table (``zoo list --markdown``, the README's), each name linking its page;
- ``models/<name>.md``: one page per :class:`~zoo.registry.ModelEntry`: task, base, licence and where it was
  read, revision, the input contract (prompt, pixel limits, parser) or the kind's settings, how to load it,
  the recipes that train with it (``reproduces:`` or ``model.entry:``) with their provenance, and its card;
- ``fields/<name>.md``: one page per domain: its entries, datasets, benchmarks and recipes (which run on a
  CPU, which need GPUs), then the field's own notes (``domains/<name>/README.md``);
- ``reference/recipes.md``: every engine's recipe dataclass, rendered by mkdocstrings from the field
  docstrings (type, default, meaning);
- ``reference/cli.md``: ``zoo --help`` and every subcommand's, from the program's own parser.

Nothing is written into ``docs/``: the files are added to the build in memory (``File.generated``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]


def on_files(files: Files, config: Any) -> Files:
    """Add the generated pages (MkDocs event, called once per build)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from zoo.registry import info, list_models

    recipes = _recipes()
    names = list_models()
    files.append(File.generated(config, "models/index.md", content=_model_index(names)))
    for name in names:
        files.append(File.generated(config, f"models/{name}.md", content=model_page(info(name), recipes)))
    from zoo.domains import discover

    fields = ["# Fields", "", "One guide per field, generated from its domain: models, datasets, benchmarks, recipes, notes.", "",
              "| field | what it contributes |", "|---|---|"]  # fmt: skip
    for domain in discover():
        files.append(File.generated(config, f"fields/{domain.name}.md", content=field_page(domain, recipes)))
        fields.append(f"| [{domain.name}]({domain.name}.md) | {_cell(domain.summary)} |")
    files.append(File.generated(config, "fields/index.md", content="\n".join(fields) + "\n"))
    files.append(File.generated(config, "reference/recipes.md", content=_recipe_reference()))
    files.append(File.generated(config, "reference/cli.md", content=_cli_reference()))
    return files


def _cli_reference() -> str:
    """``zoo --help`` and every subcommand's ``--help``, as the program prints them (not copied by hand)."""
    import argparse
    import os

    from zoo.cli import build_parser, train_parser

    os.environ.setdefault("COLUMNS", "100")  # argparse wraps to the terminal: a fixed width for the page
    parser = build_parser()
    lines = [
        "# Command line",
        "",
        "The `zoo` command's help, generated from the program at build time.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
    for action in parser._actions:  # argparse keeps subcommands here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                sub = train_parser() if name == "train" else sub  # `zoo train` hands its arguments to its own parser
                lines += [f"## `zoo {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines) + "\n"


def _model_index(names: list[str]) -> str:
    from zoo.cli import markdown_table

    table = markdown_table()
    for name in names:  # the name cell links the model's page
        table = table.replace(f"| `{name}` |", f"| [`{name}`]({name}.md) |", 1)
    return (
        "# Models\n\nEvery entry of the registry, generated at build time (`zoo list --markdown` prints the "
        "same table). A name opens its page: what it does, how to load it, the prompt it is asked with, "
        "the recipes that train it and its card.\n\n" + table + "\n"
    )


def _recipes() -> list[tuple[str, dict[str, Any]]]:
    import yaml

    out = []
    for path in sorted(ROOT.glob("domains/*/recipes/*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append((str(path.relative_to(ROOT)), raw))
    return out


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}text\n{text}\n{fence}"


def _contract(spec: Any) -> list[str]:
    """The input contract of a VLM entry, or the settings of another kind."""
    if spec.kind != "vlm":
        settings = {k: v for k, v in asdict(spec).items() if v not in (None, (), {}, "")}
        rows = [f"| `{k}` | {_cell(v)} |" for k, v in settings.items()]
        return [
            "## Settings",
            "",
            f"What the `{spec.kind}` pipeline reads (`zoo.kinds.{type(spec).__name__}`).",
            "",
            "| setting | value |",
            "|---|---|",
            *rows,
            "",
        ]
    lines = [
        "## Input contract",
        "",
        "What `zoo.load` asks the model with, and what a recipe naming this entry (`model.entry`) trains with.",
        "",
        "| | |",
        "|---|---|",
        f"| pixels | {spec.min_pixels} to {spec.max_pixels} |",
        f"| coordinates | `{spec.coord_frame}` |",
        f"| parser | `{getattr(spec.parser, '__name__', None)}` |",
        f"| generation | {_cell(spec.generation or 'greedy')}, at most {spec.max_new_tokens} new tokens |",
        f"| image | {'before' if spec.image_first else 'after'} the text |",
        "",
    ]
    lines += ["System prompt:", "", _code(spec.system) if spec.system else "*none*", ""]
    lines += ["User template (`{question}` is the user's text):", "", _code(spec.user), ""]
    for title, table, flag in (
        ("Prompt variants", spec.variants, "system"),
        ("Other templates", spec.templates, "template"),
    ):
        for key, text in table.items():
            lines += [f"{title}: `{key}` (`pipe(..., {flag}={key!r})`)", "", _code(text) if text else "*none*", ""]
    return lines


def _loading(entry: Any) -> list[str]:
    if not entry.released:
        return [
            '!!! warning "No public weights"',
            f"    {entry.notes or 'The authors have not released weights.'}",
            "",
            "Its rewards, recipes and evaluation are in the zoo; `zoo.load` says so instead of loading.",
            "",
        ]
    call = {
        "vlm": 'pred = pipe("image.png", "your question")',
        "clip": 'probs = pipe("image.png", ["label one", "label two"])',
        "diffusion": 'image = pipe("a prompt", seed=0)',
        "policy": "action = pipe(observation)",
    }[entry.kind]
    lines = ["```python", "import zoo", "", f'pipe = zoo.load("{entry.name}")', call, "```", ""]
    if entry.gated:
        lines += ['!!! note "Gated"', "    Accept the licence on the model's Hub page, then `hf auth login`.", ""]
    return lines


def _recipe_rows(name: str, aliases: tuple[str, ...], recipes: list[tuple[str, dict[str, Any]]]) -> list[str]:
    names = {name, *aliases}
    lines = []
    for path, raw in recipes:
        model = raw.get("model") or {}
        how = ("reproduces it" if raw.get("reproduces") in names else
               "trains with its contract" if model.get("entry") in names else None)  # fmt: skip
        if how is None:
            continue
        lines += [
            f"### `{path}`",
            "",
            f"{_cell(raw.get('description', ''))} (`{raw.get('engine')}` engine; {how}).",
            "",
        ]
        provenance = raw.get("provenance") or {}
        if provenance:
            lines += [
                "| setting | where it comes from |",
                "|---|---|",
                *[f"| `{k}` | {_cell(v)} |" for k, v in provenance.items()],
                "",
            ]
        lines += [*_launch_rows(path, raw), "```bash", f"zoo train {path} --dry-run", "```", ""]
    return lines or ["No recipe of the zoo trains this entry yet.", ""]


def _launch_rows(path: str, raw: dict[str, Any]) -> list[str]:
    """For a recipe that names a launch config: the hardware it is sized for, the line that launches it and what each
    GPU holds, from ``zoo train RECIPE --plan`` (generated here, never written by hand)."""
    if not raw.get("launch") or raw.get("engine") == "vlm-verl":
        return []
    from zoo import memory_plan
    from zoo.recipe import load_recipe

    try:
        _, rows, skipped = memory_plan.plan(load_recipe(ROOT / path))
    except (ValueError, LookupError) as err:  # a model the plan cannot size offline: say so
        return [f"Launch config `{raw['launch']}`; its memory cannot be planned offline: {_cell(err)}", ""]
    named = next((r for r in rows if r.named), None)
    if named is None:
        return [f"Launch config `{raw['launch']}`: {_cell(skipped.get(raw['launch'], 'not planned'))}", ""]
    parts = ", ".join(f"{k} {v / memory_plan.GIB:.1f}" for k, v in named.parts.items() if v)
    return [f"Sized for {named.processes} GPUs of 80 GB under `{named.config}` ({named.strategy}): "
            f"{named.total / memory_plan.GIB:.1f} GiB a GPU ({parts}; `zoo train {path} --plan` for every config).",
            "", "```bash", memory_plan.launch_line(replace(named, path=str(Path(named.path).relative_to(ROOT))), [path]),
            "```", ""]


def model_page(entry: Any, recipes: list[tuple[str, dict[str, Any]]]) -> str:
    """The page of one entry, from the entry alone (and the recipes that name it)."""
    from zoo.cards import render_card

    repo = (f"[`{entry.repo_id}`](https://huggingface.co/{entry.repo_id})" if entry.repo_id else
            f"shipped in `checkpoints/{entry.name}/`" if entry.released else "not released")  # fmt: skip
    revision = f"`{entry.revision}`" if entry.revision else _cell(entry.revision_note or "follows main")
    paper = f"[arXiv:{entry.paper}](https://arxiv.org/abs/{entry.paper})" if entry.paper else "—"
    lines = [
        f"# {entry.name}",
        "",
        f"{_cell(entry.task)}.",
        "",
        "| | |",
        "|---|---|",
        f"| field | {entry.domain} |",
        f"| kind | {entry.kind} |",
        f"| weights | {repo} |",
        f"| revision | {revision} |",
        f"| base model | {_cell(entry.base_model)} |",
        f"| licence | `{entry.license}`{' (gated)' if entry.gated else ''}: {_cell(entry.license_source)} |",
        f"| paper | {paper} |",
        f"| RL | {', '.join(entry.rl_methods) or '—'} |",
        f"| aliases | {', '.join(f'`{a}`' for a in entry.aliases) or '—'} |",
        "",
    ]
    if entry.notes and entry.released:
        lines += ["!!! note", f"    {_cell(entry.notes)}", ""]
    lines += ["## Load", "", *_loading(entry), *_contract(entry.spec)]
    lines += ["## Recipes", "", *_recipe_rows(entry.name, entry.aliases, recipes)]
    card = str(render_card(entry).text)
    body = re.sub(r"\A---\n.*?\n---\n", "", card, flags=re.DOTALL)  # the Hub's YAML header
    body = re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 2, 6) + " ", body, flags=re.MULTILINE)
    body = re.sub(r"!\[([^\]]*)\]\((?!https?:)[^)]*\)", r"*(figure: \1, in the card's folder)*", body)
    lines += ["## Card", "", "The model card `zoo push` publishes (`zoo card " + entry.name + "`):", "", body]
    return "\n".join(lines) + "\n"


def _sections(cls: type, seen: set[type]) -> list[type]:
    """``cls`` and, depth first, the dataclasses its fields hold (``model:``, ``algorithm:``, ``training.lora:``)."""
    import dataclasses
    import typing

    if cls in seen:
        return []
    seen.add(cls)
    found = [cls]
    for hint in typing.get_type_hints(cls).values():
        for inner in (hint, *typing.get_args(hint)):
            if dataclasses.is_dataclass(inner) and isinstance(inner, type):
                found += _sections(inner, seen)
    return found


def _runs_on(raw: dict[str, Any]) -> str:
    """Where a recipe runs: a tiny or shipped model trains on a CPU; a policy run's simulators are CPU-only."""
    name = str((raw.get("model") or {}).get("name", ""))
    return "CPU" if raw.get("engine") == "policy" or name.startswith(("tiny:", "checkpoints/", "runs/")) else "GPU"


def _first_line(target: str) -> str:
    from zoo.import_strings import resolve

    doc = (resolve(target, what="dataset").__doc__ or "").strip()
    return _cell(doc.split("\n\n")[0].replace("\n", " ")) if doc else ""


def field_page(domain: Any, recipes: list[tuple[str, dict[str, Any]]]) -> str:
    """The guide of one field, generated from its descriptor, its entries and its recipes, then its notes."""
    from zoo.registry import info, list_models

    lines = [f"# {domain.name}", "", f"{_cell(domain.summary)}.", "", "## Models", "",
             "| name | task | licence | weights |", "|---|---|---|---|"]  # fmt: skip
    for name in list_models(domain=domain.name):
        entry = info(name)
        weights = entry.repo_id or (f"checkpoints/{name}" if entry.released else "not released")
        lines.append(f"| [`{name}`](../models/{name}.md) | {_cell(entry.task)} | {entry.license} | `{weights}` |")
    if domain.datasets:
        lines += ["", "## Datasets", "", "`data.name` in a recipe, `--data` of `zoo eval` where it is a benchmark.", "",
                  "| name | what it reads |", "|---|---|",
                  *[f"| `{n}` | {_first_line(t)} |" for n, t in sorted(domain.datasets.items())]]  # fmt: skip
    if domain.benchmarks:
        lines += ["", "## Benchmarks", "", ", ".join(f"`{b}`" for b in domain.benchmarks) + " (`zoo eval NAME --data ...`)."]
    own = [(p, raw) for p, raw in recipes if p.startswith(f"domains/{domain.name}/")]
    if own:
        lines += ["", "## Recipes", "", "A recipe on a tiny or shipped model runs on a laptop CPU; the others need GPUs.",
                  "", "| recipe | engine | runs on | what it is |", "|---|---|---|---|"]  # fmt: skip
        for path, raw in own:
            what = (f"reproduces [`{raw['reproduces']}`](../models/{raw['reproduces']}.md): " if raw.get("reproduces")
                    else "") + _cell(raw.get("description", ""))  # fmt: skip
            lines.append(f"| `{path}` | `{raw.get('engine')}` | {_runs_on(raw)} | {what} |")
    notes = ROOT / "domains" / domain.name / "README.md"
    if notes.is_file():
        text = notes.read_text(encoding="utf-8")
        text = re.sub(r"\A# .*\n", "", text)  # its title: the page has one
        text = re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 1, 6) + " ", text, flags=re.MULTILINE)
        lines += ["", f"## Notes from `domains/{domain.name}/README.md`", "", text]
    return "\n".join(lines) + "\n"


def _recipe_reference() -> str:
    from zoo.engines import ENGINES

    lines = [
        "# Recipe reference",
        "",
        (
            "A recipe is a YAML file read into the dataclass of its engine (`engine:`); each block of the file "
            "(`model:`, `data:`, `algorithm:`, `training:`...) is one of the dataclasses listed under it. Every "
            "field, with its type, default and meaning, is generated from the dataclasses' field docstrings."
        ),
        "",
    ]
    seen: set[type] = set()
    for name in ENGINES.list():
        engine = ENGINES.get(name)
        lines += [f"## `{name}`", "", engine.summary, ""]
        for cls in _sections(engine.recipe_class(), seen):
            lines += [
                f"::: {cls.__module__}.{cls.__qualname__}",
                "    options:",
                "      heading_level: 3",
                "      show_bases: false",
                "",
            ]
    return "\n".join(lines) + "\n"
