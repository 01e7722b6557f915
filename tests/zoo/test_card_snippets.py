"""The usage snippet of a pushed card runs as written for someone who has only the Hub repository.

Each shipped checkpoint is planned for a push, the push's exact file set (:func:`zoo.push.stage`) is laid out in one
Hugging Face cache as the Hub's, and every card's snippet runs offline from a folder that is no checkout (no
``examples/`` beside it, no ``checkpoints/``): the model and its example input come from that cache only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hub_layout import install_in_cache, run_offline
from zoo.cards import downloaded_files, usage_code
from zoo.demo.examples import EXAMPLES_DIR
from zoo.hub import CHECKPOINTS_DIR
from zoo.push import plan_push, published, stage
from zoo.registry import info

SHIPPED = sorted(p.name for p in CHECKPOINTS_DIR.iterdir() if p.is_dir())

#: The owner the test pushes to (never contacted: the push is staged, not sent).
OWNER = "zoo-reader"


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """name -> the traceback of its pushed card's snippet ("" where it ran), all run in one process."""
    root = tmp_path_factory.mktemp("published")
    cache, reader = root / "hf-cache", root / "reader"
    reader.mkdir()
    snippets = []
    for name in SHIPPED:
        plan = plan_push(name, f"{OWNER}/{name}")
        install_in_cache(stage(plan, root / "staged" / name), plan.repo_id, cache)
        snippets.append((name, usage_code(plan.card, name)))
    return run_offline(snippets, cache, cwd=reader)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_pushed_cards_snippet_runs_from_the_hub_repository_alone(name: str, outcomes: dict[str, str]) -> None:
    assert outcomes[name] == "", outcomes[name]


@pytest.mark.parametrize("name", SHIPPED)
def test_a_pushed_card_fetches_its_example_input_from_the_repository_pushed_to(name: str) -> None:
    plan = plan_push(name, f"{OWNER}/{name}")
    code = usage_code(plan.card, name)
    downloads = downloaded_files(code, name)
    assert f'zoo.load("hf-hub:{plan.repo_id}", entry="{name}")' in code
    assert {repo for repo, _ in downloads} <= {plan.repo_id}
    assert sorted({file for _, file in downloads}) == list(plan.examples)
    assert set(plan.examples) <= set(published(plan))
    assert bool(plan.examples) == (info(name).kind == "vlm")  # an image model reads a file; a prompt or env needs none
    assert all("hf_hub_download(" in line for line in code.splitlines() if "examples/" in line)  # no checkout path


def test_a_staged_push_holds_the_example_beside_the_model(tmp_path: Path) -> None:
    plan = plan_push("gui-grounding-tiny", f"{OWNER}/gui-grounding-tiny")
    staged = stage(plan, tmp_path / "staged")
    assert sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file()) == sorted(published(plan))
    assert (staged / "examples" / "screen.png").read_bytes() == (EXAMPLES_DIR / "screen.png").read_bytes()
