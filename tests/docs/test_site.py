"""The documentation site builds with warnings as errors, has a page per registry entry (one added by a
throwaway domain included, with no hand-written docs), the recipe reference of every engine, and no broken
internal link or anchor in the built HTML."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') builds the site")

# A throwaway entry registered before the build, as a new domain's entries module would register it.
BUILD = """
import logging
import sys
from mkdocs.commands.build import build
from mkdocs.config import load_config
from zoo.kinds import VLMSpec
from zoo.registry import ModelEntry, register

register(ModelEntry(name="throwaway-vlm-1b", repo_id="someone/throwaway-vlm-1b", architecture="qwen2_5_vl",
                    base_model="Qwen/Qwen2.5-VL-3B-Instruct", domain="throwaway", task="counting throwaway things",
                    spec=VLMSpec(user="{question} Count them.", system="You count."), license="mit",
                    license_source="a test"))
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
build(load_config(config_file=sys.argv[1], site_dir=sys.argv[2], strict=True))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-c", BUILD, str(ROOT / "mkdocs.yml"), str(out)], cwd=ROOT, env=env, check=False,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _text(path: Path) -> str:
    """A page's text as a reader sees it (tags, including code highlighting spans, removed)."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_every_entry_has_a_generated_page(site: Path) -> None:
    from zoo.registry import info, list_models

    for name in list_models():
        page = _text(site / "models" / name / "index.html")
        # zoo.load(name, trust_remote_code=True) too; zoo.info where the authors' code runs the weights (OmniGen2)
        assert any(text in page for text in (f'zoo.load("{name}"', f'zoo.info("{name}")', "No public weights")), name
        assert info(name).license in page, name
    index = (site / "models" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{name}/"' in index for name in list_models())


def test_a_new_domains_entry_gets_a_page_with_no_written_docs(site: Path) -> None:
    page = _text(site / "models" / "throwaway-vlm-1b" / "index.html")
    for text in ("counting throwaway things", "{question} Count them.", "You count.", "someone/throwaway-vlm-1b"):
        assert text in page
    assert 'href="throwaway-vlm-1b/"' in (site / "models" / "index.html").read_text(encoding="utf-8")


def test_every_field_has_a_guide_with_its_recipes(site: Path) -> None:
    from zoo.domains import discover

    index = _text(site / "fields" / "index.html")
    for domain in discover():
        assert domain.name in index
        page = _text(site / "fields" / domain.name / "index.html")
        for recipe in sorted((ROOT / "domains" / domain.name / "recipes").glob("*.yaml")):
            assert f"domains/{domain.name}/recipes/{recipe.name}" in page
    gui = _text(site / "fields" / "gui" / "index.html")
    assert re.search(r"gui-g1-3b\.yaml\s*vlm-trl\s*GPU", gui) and re.search(r"gui-g1-tiny-cpu\.yaml\s*vlm-trl\s*CPU", gui)
    image = _text(site / "fields" / "image" / "index.html")  # RLCM reproduces no entry: no model page sizes it
    assert re.search(r"rlcm-dreamshaper-aesthetic\.yaml\s*diffusion\s*GPU: 4 × \d+\.\d GiB \(ddp\)", image)


def test_the_recipe_reference_documents_every_engine(site: Path) -> None:
    from zoo.engines import ENGINES

    page = _text(site / "reference" / "recipes" / "index.html")
    for name in ENGINES.list():
        assert ENGINES.get(name).recipe_class().__name__ in page, name
    # a field's docstring, type and default, as the dataclass states them
    assert "num_generations" in page and "Group size G: completions sampled per prompt." in page


def _sections(page: str) -> dict[str, str]:
    """An engine section's HTML (from its ``## `engine``` heading to the next) by engine name."""
    parts = re.split(r'<h2 id="([^"]+)"', page)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def _rows(markup: str) -> dict[str, list[str]]:
    """The body rows of the tables in ``markup`` as their cells' text, by first cell."""
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", markup, re.DOTALL):
        cells = [" ".join(_text_of(c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)]
        if cells:
            rows.setdefault(cells[0], cells)
    return rows


def test_the_recipe_reference_lists_every_yaml_key_of_every_engine_inherited_ones_included(site: Path) -> None:

    import yaml

    from docs.hooks.recipe_reference import field_docs, keys
    from zoo.engines import ENGINES
    from zoo.recipe import Recipe, TrainingBase

    recipes = [(path.stem, yaml.safe_load(path.read_text(encoding="utf-8"))) for path in sorted(ROOT.glob("domains/*/recipes/*.yaml"))]
    sections = _sections((site / "reference" / "recipes" / "index.html").read_text(encoding="utf-8"))
    for name in ENGINES.list():
        rows = _rows(sections[name].split("<h3", 1)[0])  # the engine's own table, before the methods' blocks
        for key in keys(ENGINES.get(name).recipe_class()):
            assert key.path in rows, (name, key.path)
            if "`" not in key.doc:  # a plain docstring shows as written
                assert rows[key.path][3] == " ".join(key.doc.split()), (name, key.path)
        inherited = [k.path for k in keys(Recipe)] + [k.path for k in keys(TrainingBase, "training.")]
        assert set(inherited) <= set(rows), name  # engine, reproduces, launch, training.steps, output_dir...
        assert not {"validate", "__post_init__", "build", "from_dict", "load"} & {k.rsplit(".", 1)[-1] for k in rows}
        own = [stem for stem, raw in recipes if raw.get("engine") == name]
        setting = [stem for stem, raw in recipes if raw.get("engine") == name and "launch" in raw]
        shown = rows["launch"][4]  # the shipped recipes that set launch:
        whole = "—" if not setting else f"all {len(own)}" if setting == own and len(own) > 1 else None
        assert shown == whole if whole else shown.startswith(", ".join(setting[:4])), (name, shown)
    assert field_docs(TrainingBase)["steps"] == "Optimiser steps to run."


def test_no_sphinx_role_leaks_and_no_angle_bracketed_text_is_swallowed(site: Path) -> None:
    from zoo.registry import info, list_models

    leaked = {str(path.relative_to(site)): re.findall(r":(?:mod|func|class|attr|meth):`?\S+", _text(path))
              for path in site.rglob("*.html")}  # fmt: skip
    assert not {page: roles for page, roles in leaked.items() if roles}
    angled = [name for name in list_models() if re.search(r"<\w+>", info(name).task)]
    assert angled  # the flow-grpo-tiny-colour task says 'a <colour> square'
    index = " ".join(_text(site / "models" / "index.html").split())
    for name in angled:
        task = " ".join(info(name).task.split())
        assert task in " ".join(_text(site / "models" / name / "index.html").split()), name
        assert task in index and task in " ".join(_text(site / "fields" / info(name).domain / "index.html").split())


def test_the_site_reads_offline_links_its_repository_and_ranks_guides_above_model_pages(site: Path) -> None:
    import json

    import yaml

    pages = {path: path.read_text(encoding="utf-8") for path in site.rglob("*.html")}
    assert not [p for p, text in pages.items() if "fonts.googleapis" in text or "fonts.gstatic" in text]
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("!!python/name:", ""))
    assert config["repo_url"] in pages[site / "index.html"] and config["site_url"]
    boosts = {doc["location"]: doc.get("boost", 1.0)
              for doc in json.loads((site / "search" / "search_index.json").read_text())["docs"]}  # fmt: skip
    assert boosts["guides/multi-gpu/"] > boosts["models/"] > boosts["models/editscore-32b/"]


def test_the_models_table_says_each_entrys_kind_and_availability(site: Path) -> None:
    from zoo.availability import availability
    from zoo.registry import info, list_models

    rows = _rows((site / "models" / "index.html").read_text(encoding="utf-8"))
    for name in list_models():
        entry = info(name)
        assert rows[name][1:3] == [entry.kind, availability(entry, look_in_cache=False)], name
    assert len(next(iter(rows.values()))) <= 6  # name, kind, availability, weights, licence, task: fits 1280 px


def test_a_shipped_checkpoint_links_the_recipes_its_training_record_names(site: Path) -> None:
    from zoo.records import read_record

    for folder in sorted((ROOT / "checkpoints").iterdir()):
        page = _text(site / "models" / folder.name / "index.html")
        recipes = {stage.recipe for stage in read_record(folder / "training.json").stages if stage.recipe}
        assert all(recipe in page for recipe in recipes), folder.name
        assert ("No recipe of the zoo trains this entry yet" in page) == (not recipes), folder.name  # BC is a script


def _load_snippet(site: Path, name: str) -> str:
    """The Python block of the model page's Load section, as a reader copies it."""
    page = (site / "models" / name / "index.html").read_text(encoding="utf-8")
    section = page.split('id="load"', 1)[1].split("<h2", 1)[0]
    return _text_of(re.search(r"<pre[^>]*>(.*?)</pre>", section, re.DOTALL).group(1))


def test_the_load_snippet_of_every_shipped_checkpoint_and_of_a_hub_entry_per_kind_runs_as_written(
    site: Path, tmp_path: Path
) -> None:
    """Shipped checkpoints load offline as they are; a Hub entry of each kind loads a tiny stand-in from a Hugging
    Face cache laid out as the Hub's (a VLM, a CLIP and a diffusion pipeline; no policy entry is on the Hub)."""
    from tests.hub_layout import install_in_cache, run_offline
    from tests.pipelines.test_clip import _save_hub_layout, _tiny_clip
    from tests.tiny_pipelines import save_tiny_flux
    from zoo.registry import info

    cache = tmp_path / "hf-cache"
    stand_ins = {"gui-g1-3b": ROOT / "checkpoints" / "gui-grounding-tiny",
                 "patho-clip-b": _save_hub_layout(_tiny_clip(), tmp_path / "clip"),
                 "flux-1-dev": save_tiny_flux(tmp_path / "flux")}  # fmt: skip
    for name, folder in stand_ins.items():
        install_in_cache(folder, info(name).repo_id, cache)
    names = [folder.name for folder in sorted((ROOT / "checkpoints").iterdir())] + list(stand_ins)
    snippets = [(name, _load_snippet(site, name)) for name in names]
    assert all("examples/" in code for name, code in snippets if info(name).kind in ("vlm", "clip"))
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # as from the repository root, without writing there
    failed = {name: error for name, error in run_offline(snippets, cache, cwd=tmp_path).items() if error}
    assert not failed, "\n".join(f"{name}:\n{error}" for name, error in failed.items())[-6000:]
    assert (tmp_path / "out.png").is_file()  # the diffusion snippets saved their image


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "a" and values.get("href"):
            self.hrefs.append(values["href"])


def test_no_internal_link_or_anchor_is_broken(site: Path) -> None:
    # 404.html links from the site root by design (it is served at any missing path)
    pages = {path: _Links() for path in site.rglob("*.html") if path.name != "404.html"}
    for path, parser in pages.items():
        parser.feed(path.read_text(encoding="utf-8"))
    broken = []
    for path, parser in pages.items():
        for href in parser.hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith("mailto:"):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)}: {href}")
            elif parts.fragment and target in pages and parts.fragment not in pages[target].ids:
                broken.append(f"{path.relative_to(site)}: {href} (no such anchor)")
    assert not broken, "\n".join(broken[:20])
    assert len(pages) > 60  # every model page was checked


def test_a_model_page_shows_each_gpu_recipes_hardware_launch_line_and_memory(site: Path) -> None:
    """Generated from ``zoo train RECIPE --plan``, never written by hand (issue 53)."""
    page = " ".join(_text(site / "models" / "ui-s1-7b" / "index.html").split())
    assert re.search(r"Sized for 8 GPUs of 80 GB under fsdp-qwen2.5-vl-offload \(zoo FSDP2 \+ offload\): \d+\.\d GiB a GPU",
                     page), page[:2000]  # fmt: skip
    assert "accelerate launch --config_file zoo/launch/fsdp-qwen2.5-vl-offload.yaml --num_processes 8" in page


def test_the_command_line_page_is_the_programs_own_help(site: Path) -> None:
    from zoo.cli import build_parser

    page = _text(site / "reference" / "cli" / "index.html")
    for command in ("list", "info", "run", "train", "eval", "push"):
        assert f"zoo {command}" in page
    usage = build_parser().format_usage().split()
    assert " ".join(usage[:3]) in " ".join(page.split())
    for flag in ("--set", "--resume", "--resume-changes", "--dry-run", "--plan", "--nproc"):  # zoo train's own parser
        assert flag in page, flag
