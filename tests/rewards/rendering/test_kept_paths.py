"""Kept paths that live under a private tmpfs (a CI checkout and its ``.venv`` in ``/tmp``) stay
visible to jobs, read-only, while the rest of the real ``/tmp`` stays hidden.

The kept directory is put on ``PYTHONPATH`` (one of the kept paths, like ``sys.prefix`` and the
checkout) and the audit hook is off, so what the job sees is the OS walls' doing alone.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from rewards.rendering import RenderPool

PROBE = """
import errno, os
import kept_probe
RESULT = {"module": kept_probe.VALUE, "data": open(os.path.join(KEPT, "data.txt")).read()}
for name, action in [("sibling", lambda: open(SIBLING).read()),
                     ("write_new", lambda: open(os.path.join(KEPT, "new.txt"), "w")),
                     ("append", lambda: open(os.path.join(KEPT, "data.txt"), "a"))]:
    try:
        action()
        RESULT[name] = "allowed"
    except OSError as e:
        RESULT[name] = errno.errorcode[e.errno]
RESULT["tmp_listing"] = sorted(n for n in os.listdir("/tmp") if n.startswith("zoo-kept-"))
open("scratch.txt", "w").write("scratch still works")
RESULT["scratch"] = open("scratch.txt").read()
raise RuntimeError("RESULT=" + repr(RESULT))
"""


@pytest.fixture
def kept_under_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A world-writable kept dir and a world-readable sibling file, both directly in ``/tmp``:
    only the sandbox's mounts, not file permissions, can stop a job's write or read."""
    kept = tempfile.mkdtemp(prefix="zoo-kept-", dir="/tmp")
    sibling = tempfile.mkdtemp(prefix="zoo-kept-sibling-", dir="/tmp")
    try:
        with open(os.path.join(kept, "kept_probe.py"), "w") as fh:
            fh.write("VALUE = 'imported from a kept dir under /tmp'\n")
        with open(os.path.join(kept, "data.txt"), "w") as fh:
            fh.write("kept data")
        with open(os.path.join(sibling, "secret.txt"), "w") as fh:
            fh.write("must stay invisible")
        for path, mode in [(kept, 0o777), (os.path.join(kept, "data.txt"), 0o666), (sibling, 0o755),
                           (os.path.join(sibling, "secret.txt"), 0o644)]:
            os.chmod(path, mode)
        monkeypatch.setenv("PYTHONPATH", kept)
        yield kept, os.path.join(sibling, "secret.txt")
    finally:
        shutil.rmtree(kept, ignore_errors=True)
        shutil.rmtree(sibling, ignore_errors=True)


def test_kept_path_under_tmp_is_visible_read_only_and_siblings_are_not(kept_under_tmp) -> None:
    kept, sibling = kept_under_tmp
    pool = RenderPool(1, kinds=("matplotlib",), audit_hook=False, preload=()).start()
    try:
        walls = pool.isolation
        if "/tmp" not in walls["private_tmp"]:
            pytest.skip(f"no private /tmp on this machine: {walls['problems']}")
        assert kept in walls["kept"] and walls["read_only_mounts"], walls
        code = f"KEPT = {kept!r}\nSIBLING = {sibling!r}\n" + PROBE
        result = pool.render("matplotlib", code, size=(8, 8), timeout=10)
    finally:
        pool.close()
    assert result.status == "invalid" and "RESULT=" in result.error, result.error
    found = ast.literal_eval(result.error.split("RESULT=", 1)[1].rsplit(" (line", 1)[0])
    assert found == {
        "module": "imported from a kept dir under /tmp", "data": "kept data",
        "sibling": "ENOENT",  # the real /tmp's other content is not there at all
        "write_new": "EROFS", "append": "EROFS",  # the kept tree is bound read-only
        "tmp_listing": [os.path.basename(kept)],  # only the kept dir is re-exposed in the private /tmp
        "scratch": "scratch still works",
    }
    assert sorted(os.listdir(kept)) == ["data.txt", "kept_probe.py"]
    with open(os.path.join(kept, "data.txt")) as fh:
        assert fh.read() == "kept data"
