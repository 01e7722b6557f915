"""``make test``'s scheduler (tests/conftest.py): files are units of work, except a folder whose session fixture is
costly, which goes to one worker whole."""

from __future__ import annotations

import pytest

from tests.conftest import ONE_WORKER_FOLDERS, pytest_xdist_make_scheduler

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
