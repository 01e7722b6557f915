"""The render sandbox starts, and renders, in the directory layouts users have.

Each layout is built as root in a private mount namespace (``unshare -m``), so nothing of it
reaches the host, and a fresh Python started there renders one SVG and one matplotlib chart
through the default pool (walls up, audit hook on). Layouts that broke the pool before:

* a checkout inside a home directory that is a mount of its own (NFS/autofs homes, systemd-homed):
  the hidden ``/home`` shadowed that mount, its remount failed with ``EINVAL`` and the pool refused
  ("missing: read only mounts") with a remedy (user namespaces) that did not apply to root;
* a virtualenv reached through a symlink in a hidden directory (``~/venv -> <real venv>``):
  behind the walls the link no longer resolved, so every matplotlib job's font read was refused;
* a virtualenv under a bind mount of its own.

The unprivileged run from a closed (0700) parent is ``.ci/run``'s second step: it clones the
repository into a subfolder of a ``mktemp -d`` directory and runs ``test_unprivileged`` there.
The mount bookkeeping itself (shadowed, already read-only and failing mounts) is tested on a
written ``mountinfo`` at the end, without any namespace.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewards.rendering import oslevel

REPO = Path(__file__).resolve().parents[3]
VENV = Path(sys.prefix).resolve()
# The layouts are built over /home and /mnt (fresh tmpfs mounts, so the host's folders are not touched)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None or sys.prefix == sys.base_prefix
    or any(str(p).startswith(("/home/", "/mnt/")) for p in (REPO, VENV)) or not os.path.isdir("/mnt"),
    reason="builds mount layouts as root with unshare(1) over /home and /mnt, around this checkout's virtualenv",
)

RENDER_BOTH = r"""
import json
from rewards.rendering import RenderPool
svg = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>'
with RenderPool(1, kinds=("svg", "matplotlib")) as pool:
    out = {kind: pool.render(kind, source, size=(16, 16), timeout=60)
           for kind, source in (("svg", svg), ("matplotlib", "import matplotlib.pyplot as plt\nplt.plot([1, 2])"))}
    print(json.dumps({"walls": pool.isolation, **{k: [r.status, r.error] for k, r in out.items()}}))
"""


def render_in_layout(setup: str, python: str, cwd: str) -> dict:
    """Build the layout with ``setup`` (sh, as root, private mounts), then render from ``cwd`` with ``python``."""
    script = f"set -e\n{setup}\ncd {cwd}\nexec {python} -c \"$ZOO_RENDER\""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HUB_OFFLINE": "1", "ZOO_RENDER": RENDER_BOTH,
           "PYTHONPATH": cwd}
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_rendered(result: dict) -> None:
    walls = result["walls"]
    assert walls["read_only_mounts"] and walls["mount_namespace"] and "/tmp" in walls["private_tmp"], walls
    assert result["svg"] == ["ok", None], result["svg"]
    assert result["matplotlib"] == ["ok", None], result["matplotlib"]


@needs_root
def test_a_checkout_in_a_home_that_is_its_own_mount() -> None:
    setup = (f"mount -t tmpfs tmpfs /home && mkdir /home/zoo-user && mount -t tmpfs tmpfs /home/zoo-user\n"
             f"mkdir /home/zoo-user/repo && mount --bind {REPO} /home/zoo-user/repo")
    assert_rendered(render_in_layout(setup, f"{VENV}/bin/python", "/home/zoo-user/repo"))


@needs_root
def test_a_virtualenv_reached_through_a_symlink_in_a_hidden_directory() -> None:
    setup = f"mount -t tmpfs tmpfs /home && mkdir /home/zoo-user && ln -s {VENV} /home/zoo-user/venv"
    assert_rendered(render_in_layout(setup, "/home/zoo-user/venv/bin/python", str(REPO)))


@needs_root
def test_a_virtualenv_under_a_bind_mount() -> None:
    setup = f"mount -t tmpfs tmpfs /mnt && mkdir /mnt/zoo-venv && mount --bind {VENV} /mnt/zoo-venv"
    assert_rendered(render_in_layout(setup, "/mnt/zoo-venv/bin/python", str(REPO)))


def test_shadowed_and_already_read_only_mounts_are_not_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a written mountinfo: a mount that another one shadows is skipped, a read-only mount that
    refuses the remount counts as read-only, and a writable one that refuses is named with its cause."""
    lines = ["21 1 0:20 / /data rw,relatime - ext4 /dev/a rw",        # shadowed by 30 (same path)
             "30 21 0:30 / /data rw,relatime - tmpfs tmpfs rw",        # reachable, remounts fine
             "31 1 0:31 / /locked ro,nosuid - ext4 /dev/b ro",         # read-only already, refuses
             "32 1 0:32 / /stuck\\040dir rw - ext4 /dev/c rw"]          # writable, refuses
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("\n".join(lines) + "\n")
    reachable = {"/data": 30, "/locked": 31, "/stuck dir": 32}
    remounted = []

    def fake_mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
        if target in ("/locked", "/stuck dir"):
            raise OSError(errno.EPERM, "Operation not permitted")
        remounted.append((target, flags & oslevel.MS_RDONLY))

    monkeypatch.setattr(oslevel, "_mount", fake_mount)
    monkeypatch.setattr(oslevel, "_mount_id_at", reachable.get)
    walls = oslevel.Walls()
    oslevel._remount_read_only(walls, mountinfo=str(mountinfo))
    assert remounted == [("/data", oslevel.MS_RDONLY)]
    assert not walls.read_only_mounts
    assert walls.problems == ["could not make these mounts read-only: /stuck dir (Operation not permitted)"]

    mountinfo.write_text("\n".join(lines[:3]) + "\n")
    walls = oslevel.Walls()
    oslevel._remount_read_only(walls, mountinfo=str(mountinfo))
    assert walls.read_only_mounts and not walls.problems


def test_the_refusal_names_a_remedy_only_where_it_applies() -> None:
    from rewards.rendering.pool import _remedy

    assert "user namespaces" in _remedy("no namespaces (unshare: Operation not permitted)")
    layout = _remedy("could not make these mounts read-only: /home/u (Invalid argument)")
    assert "user namespaces" not in layout and "report" in layout
