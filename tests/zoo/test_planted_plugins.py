"""Plug-ins come only from installed distributions (review-reliability 8.2): a ``*.dist-info/entry_points.txt``
planted in the folder a user runs from advertises nothing, under ``python -m``, ``torchrun -m`` and
``accelerate launch -m`` (the forms that put the working directory on ``sys.path``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1",
       "ACCELERATE_USE_CPU": "1"}  # fmt: skip


def plant(folder: Path) -> Path:
    """A recipe folder as a stranger could hand it over: a module that writes a marker when imported, advertised by a
    dist-info as a zoo domain and as a reward plug-in. Returns the marker's path."""
    marker = folder / "ran"
    (folder / "evil_domain.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\nDOMAIN = None\n")
    info = folder / "helpers-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: helpers\nVersion: 1.0\n")
    points = "[zoo.domains]\nhelpers = evil_domain\n\n[zoo.rewards]\nhelpers = evil_domain\n"
    (info / "entry_points.txt").write_text(points)
    return marker


@pytest.mark.parametrize(
    "launcher",
    [
        [sys.executable, "-m"],
        [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", "1", "-m"],
        [str(BIN / "accelerate"), "launch", "--cpu", "--num_processes", "1", "-m"],
    ],
    ids=["python", "torchrun", "accelerate"],
)
def test_a_planted_entry_point_imports_nothing(launcher: list[str], tmp_path: Path) -> None:
    if not Path(launcher[0]).is_file():
        pytest.skip(f"{launcher[0]} is not installed")
    marker = plant(tmp_path)
    done = subprocess.run([*launcher, "zoo.cli", "list"], cwd=tmp_path, env={**ENV, "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "patho-r1" in done.stdout  # the installed domains are all there
    assert not marker.exists(), "a module from the working directory ran"


def test_the_resolver_does_not_trust_a_planted_domain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zoo.import_strings import ImportStringError, entry_point_packages, resolve

    marker = plant(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "evil_domain" not in entry_point_packages()
    with pytest.raises(ImportStringError, match="Nothing of it was imported"):
        resolve("evil_domain:DOMAIN", what="recipe key model.added_tokens")
    assert not marker.exists()


def test_a_folder_of_installed_wheels_is_trusted_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install --target DIR`` (the GPU suite's wheels) is not a site folder: naming it opts its entry points
    in."""
    from zoo_common.plugins import PLUGIN_DIRS_ENV, installed_entry_points

    plant(tmp_path)
    assert not [p for p in installed_entry_points("zoo.domains") if p.value == "evil_domain"]
    monkeypatch.setenv(PLUGIN_DIRS_ENV, str(tmp_path))
    assert [p.value for p in installed_entry_points("zoo.domains")] == ["evil_domain"]
