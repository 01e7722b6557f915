"""``make test``'s scheduler (tests/conftest.py): files are units of work, except a folder whose session fixture is
costly, which goes to one worker whole; the costliest units are handed out first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIRST_UNITS, ONE_WORKER_FOLDERS, pytest_xdist_make_scheduler

pytest.importorskip("xdist", reason="pytest-xdist is the dev extra's (pip install -e '.[dev]')")


class _Options:
    """The options pytest-xdist's scheduler reads: ``--tx 2*popen --dist DIST``."""

    def __init__(self, dist: str) -> None:
        self.values = {"dist": dist, "tx": ["2*popen"]}

    def getoption(self, name: str, default: object = None) -> object:
        return self.values.get(name, default)

    getvalue = getoption


def test_a_one_worker_folder_is_one_unit_and_other_files_stay_their_own() -> None:
    scheduler = pytest_xdist_make_scheduler(_Options("loadfile"), None)
    folder = ONE_WORKER_FOLDERS[0]
    scopes = {scheduler._split_scope(f"{folder}{name}::test_x") for name in ("test_a.py", "test_b.py")}
    assert scopes == {folder}
    assert scheduler._split_scope("tests/zoo/test_a.py::test_x") == "tests/zoo/test_a.py"
    assert scheduler._split_scope("tests/zoo/test_b.py::test_x") == "tests/zoo/test_b.py"


def test_other_distribution_modes_keep_xdists_scheduler() -> None:
    assert pytest_xdist_make_scheduler(_Options("load"), None) is None


class _Worker:
    """A worker as the scheduler sees it: it records the test indexes it is sent."""

    def __init__(self) -> None:
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)


def test_the_costliest_units_are_handed_out_first_then_xdists_order() -> None:
    scheduler = pytest_xdist_make_scheduler(_Options("loadfile"), None)
    waiting = ["tests/zoo/test_a.py", FIRST_UNITS[2], "tests/zoo/test_b.py", FIRST_UNITS[0]]
    collection = [f"{unit}::test_x" for unit in waiting]
    worker = _Worker()
    scheduler.registered_collections[worker] = collection
    scheduler.workqueue.update((unit, {f"{unit}::test_x": False}) for unit in waiting)
    while scheduler.workqueue:
        scheduler._assign_work_unit(worker)
    handed = [collection[i].split("::")[0] for (i,) in worker.sent]
    assert handed == [FIRST_UNITS[0], FIRST_UNITS[2], "tests/zoo/test_a.py", "tests/zoo/test_b.py"]


def test_every_first_unit_is_a_test_file_or_a_one_worker_folder() -> None:
    root = Path(__file__).parents[1]
    for unit in FIRST_UNITS:
        assert (root / unit).is_file() or unit in ONE_WORKER_FOLDERS, unit
