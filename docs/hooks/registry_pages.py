"""MkDocs hook: the pages generated from the registries at build time, so a new entry gets its page unwritten.

- ``models/index.md``: the model table: name (linking its page), kind, availability (``zoo.availability``),
  weights, licence, task;
- ``models/<name>.md``: one page per ``zoo.registry.ModelEntry``: task, base, licence and where it was
  read, revision, the input contract (prompt, pixel limits, parser) or the kind's settings, a load snippet that
  runs as written (``load_snippets.py``), the recipes that train with it (``reproduces:``, ``model.entry:`` or its
  checkpoint's ``training.json``) with their provenance, and its card;
- ``fields/<name>.md``: one page per domain: its entries, datasets, benchmarks and recipes (which run on a
  CPU, which need GPUs), then the field's own notes (``domains/<name>/README.md``);
- ``reference/recipes.md``: per engine, every YAML key a recipe can set, with type, default, meaning and the
  shipped recipes that set it (``recipe_reference.py``);
- ``reference/cli.md``: ``zoo --help`` and every subcommand's, from the program's own parser.

Nothing is written into ``docs/``: the files are added to the build in memory (``File.generated``). Two passes
over every page, written and generated alike: guides rank above the generated model pages in search
(``on_page_markdown``), and the Sphinx roles of docstrings (``:mod:`` and kin, which mkdocstrings' Google style
leaves as text) become code (``on_page_content``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]

#: Search weight of a page by where it lives: guides first, generated model pages last (mkdocs-material's
#: ``search.boost`` page setting; 1 is the default).
SEARCH_BOOST = {"models/index.md": 1.0, "guides/": 3.0, "getting-started.md": 3.0, "concepts.md": 3.0, "models/": 0.3}

#: A Sphinx role around inline code, as docstrings written for Sphinx reach the HTML: ``:func:<code>~a.b</code>``.
SPHINX_ROLE = re.compile(r":(?:py:)?(?:mod|func|class|attr|meth|data|obj|exc|const):<code>~?([^<]*)</code>")


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
    from docs.hooks.recipe_reference import recipe_reference

    files.append(File.generated(config, "reference/recipes.md", content=recipe_reference(recipes, _cell)))
    files.append(File.generated(config, "reference/cli.md", content=_cli_reference()))
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Give the page its search weight (:data:`SEARCH_BOOST`) unless its front matter sets one."""
    weight = next((w for prefix, w in SEARCH_BOOST.items() if page.file.src_uri.startswith(prefix)), None)
    if weight is not None:
        page.meta.setdefault("search", {}).setdefault("boost", weight)
    return markdown


def on_page_content(html: str, **_: Any) -> str:
    """Sphinx roles as the code they mark (``:class:`~zoo.kinds.VLMSpec``` shows ``zoo.kinds.VLMSpec``)."""
    return SPHINX_ROLE.sub(r"<code>\1</code>", html)


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
    from zoo.availability import availability
    from zoo.registry import info

    lines = [
        "# Models",
        "",
        "Every entry of the registry, generated at build time. A name opens its page: what it does, how to load it, "
        "the prompt it is asked with, the recipes that train it and its card. *Availability*: `runs offline here` "
        "(shipped in `checkpoints/`), `needs download` (public on the Hub), `gated` (accept the licence on the Hub "
        "first, for the model or the base it applies on), `not released` (recipes, rewards and evaluation only); "
        "`zoo list` says the same and also counts what is already in your Hugging Face cache.",
        "",
        "| name | kind | availability | weights | licence | task |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        entry = info(name)
        weights = (f"[{entry.repo_id}](https://huggingface.co/{entry.repo_id})" if entry.repo_id else
                   f"`checkpoints/{name}`" if entry.released else "—")  # fmt: skip
        lines.append(f"| [`{name}`]({name}.md) | {entry.kind} | {availability(entry, look_in_cache=False)} | "
                     f"{weights} | `{entry.license}` | {_cell(entry.task)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _recipes() -> list[tuple[str, dict[str, Any]]]:
    import yaml

    out = []
    for path in sorted(ROOT.glob("domains/*/recipes/*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append((str(path.relative_to(ROOT)), raw))
    return out


def _cell(value: Any) -> str:
    """``value`` as one table cell: pipes escaped, one line, ``<word>`` outside code kept as text (not a tag)."""
    return _escape_angles(str(value).replace("|", "\\|").replace("\n", " "))


def _escape_angles(text: str) -> str:
    """``<`` and ``>`` outside code spans as entities, so ``'a <colour> square'`` is not read as an HTML tag."""
    parts = re.split(r"(`+[^`]*`+)", text)
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)


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
    from docs.hooks.load_snippets import load_snippet
    from zoo.availability import availability
    from zoo.card_kinds import card_kind

    if not entry.released:
        return [
            '!!! warning "No public weights"',
            f"    {_cell(entry.notes or 'The authors have not released weights.')}",
            "",
            "Its rewards, recipes and evaluation are in the zoo; `zoo.load` says so instead of loading.",
            "",
        ]
    where = {"runs offline here": "The weights ship with the checkout, so this runs offline",
             "needs download": "The first `zoo.load` downloads the weights into the Hugging Face cache",
             "gated": "The weights are gated: accept the licence on the model's Hub page, then `hf auth login`; "
                      "the first `zoo.load` downloads them"}[availability(entry, look_in_cache=False)]  # fmt: skip
    if card_kind(entry).pipeline is None:
        where = "`zoo.load` does not run this model: its authors' code does (the card below says how)"
    return [f"{where}. Run from the repository root (`examples/` ships with it):", "",
            "```python", load_snippet(entry), "```", ""]


def _recipe_rows(name: str, aliases: tuple[str, ...], recipes: list[tuple[str, dict[str, Any]]]) -> list[str]:
    from zoo.engines.reading import load_recipe
    from zoo.provenance import rows as provenance_rows

    names = {name, *aliases}
    trained = _trained_by(name)
    lines = []
    for path, raw in recipes:
        model = raw.get("model") or {}
        reasons = [("reproduces it" if raw.get("reproduces") in names else
                    "trains with its contract" if model.get("entry") in names else ""),
                   _stages_text(trained.get(path, []))]  # fmt: skip
        how = "; ".join(r for r in reasons if r)
        if not how:
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
                *[f"| `{row.field}` | {_cell(row.text)} |" for row in provenance_rows(provenance)],
                "",
            ]
        recipe = load_recipe(ROOT / path) if raw.get("authors_run") or _plans(raw) else None  # loaded once for both
        if raw.get("authors_run"):
            lines += _authors_run_rows(recipe)
        if _plans(raw):
            lines += _launch_rows(path, raw, recipe)
        lines += ["```bash", f"zoo train {path} --dry-run", "```", ""]
    return lines or ["No recipe of the zoo trains this entry yet.", ""]


def _authors_run_rows(recipe: Any) -> list[str]:
    """The recipe's batch against the authors', the code of the release and the differences that are no field
    (:mod:`zoo.authors_run`), the rows ``zoo info`` prints."""
    from zoo.engines.batches import authors_run_rows

    return ["| about the authors' run | |", "|---|---|",
            *[f"| {row.kind} | {_cell(row.sentence())} |" for row in authors_run_rows(recipe)], ""]  # fmt: skip


def _trained_by(name: str) -> dict[str, list[str]]:
    """Recipe path -> the names of the stages it ran, from a shipped checkpoint's training record (none for a Hub entry)."""
    from zoo.hub import CHECKPOINTS_DIR
    from zoo.records import read_record

    path = CHECKPOINTS_DIR / name / "training.json"
    stages: dict[str, list[str]] = {}
    for stage in read_record(path).stages if path.is_file() else ():
        if stage.recipe:
            stages.setdefault(stage.recipe, []).append(stage.name)
    return stages


def _stages_text(stages: list[str]) -> str:
    """``ran its stage "RL"`` (or stages), as the checkpoint's training record names them; ``""`` for none."""
    if not stages:
        return ""
    return f"ran its stage{'s' if len(stages) > 1 else ''} " + ", ".join(f'"{_cell(s)}"' for s in stages) + \
        " (`training.json`)"


def _plans(raw: dict[str, Any]) -> bool:
    """The recipe names a launch config that ``zoo train --plan`` sizes (verl launches on its own cluster)."""
    return bool(raw.get("launch")) and raw.get("engine") != "vlm-verl"


def _launch_rows(path: str, raw: dict[str, Any], recipe: Any) -> list[str]:
    """For a recipe that names a launch config (:func:`_plans`): the hardware it is sized for, the line that launches
    it and what each GPU holds, from ``zoo train RECIPE --plan`` (generated here, never written by hand)."""
    from zoo import memory_plan

    try:
        _, rows, skipped = memory_plan.plan(recipe)
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
    from zoo.availability import availability
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
        f"| availability | {availability(entry, look_in_cache=False)} |",
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


def _runs_on(raw: dict[str, Any]) -> str:
    """Where a recipe runs: a tiny or shipped model trains on a CPU; a policy run's simulators are CPU-only."""
    name = str((raw.get("model") or {}).get("name", ""))
    return "CPU" if raw.get("engine") == "policy" or name.startswith(("tiny:", "checkpoints/", "runs/")) else "GPU"


def _sized(path: str, raw: dict[str, Any]) -> str:
    """``GPU: 4 × 7.0 GiB (`ddp`)``: the GPUs and what each holds under the recipe's launch config, from ``zoo train
    --plan`` (generated; the field guide shows it for the recipes no model page shows too, RLCM's among them)."""
    from zoo import memory_plan
    from zoo.engines.reading import load_recipe

    try:
        _, rows, _ = memory_plan.plan(load_recipe(ROOT / path))
    except (ValueError, LookupError):  # a model the plan cannot size offline
        return "GPU"
    named = next((r for r in rows if r.named), None)
    if named is None:
        return "GPU"
    return f"GPU: {named.processes} × {named.total / memory_plan.GIB:.1f} GiB (`{named.config}`)"


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
            runs_on = _sized(path, raw) if _runs_on(raw) == "GPU" and _plans(raw) else _runs_on(raw)
            lines.append(f"| `{path}` | `{raw.get('engine')}` | {runs_on} | {what} |")
    notes = ROOT / "domains" / domain.name / "README.md"
    if notes.is_file():
        text = notes.read_text(encoding="utf-8")
        text = re.sub(r"\A# .*\n", "", text)  # its title: the page has one
        text = re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 1, 6) + " ", text, flags=re.MULTILINE)
        lines += ["", f"## Notes from `domains/{domain.name}/README.md`", "", text]
    return "\n".join(lines) + "\n"
