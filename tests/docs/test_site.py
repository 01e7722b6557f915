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
        assert f'zoo.load("{name}")' in page or "No public weights" in page, name
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


def test_the_recipe_reference_documents_every_engine(site: Path) -> None:
    from zoo.engines import ENGINES

    page = _text(site / "reference" / "recipes" / "index.html")
    for name in ENGINES.list():
        assert ENGINES.get(name).recipe_class().__name__ in page, name
    # a field's docstring, type and default, as the dataclass states them
    assert "num_generations" in page and "Group size G: completions sampled per prompt." in page


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
