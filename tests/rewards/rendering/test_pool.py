"""The warm render pool: correct images, exact sizes, parallel batches, fresh state per job,
worker replacement, isolation report, clean shutdown."""

from __future__ import annotations

import os
import signal
import threading

import psutil
import pytest

import rewards
from rewards.rendering import RenderPool

CHART = """
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(9, 3), facecolor="#00ff00")
ax.bar([1, 2, 3], [3, 1, 2], color="#0000ff")
ax.set_title("sales")
plt.savefig("chart.png")
plt.close()
"""


def test_svg_render_is_exact_size_rgb_and_correct(render_pool: RenderPool) -> None:
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50">'
           '<rect width="50" height="50" fill="#0000ff"/><rect x="50" width="50" height="50" fill="#ffff00"/></svg>')
    result = render_pool.render("svg", svg, size=(200, 100))
    assert result.status == "ok" and result.error is None
    assert result.image.size == (200, 100) and result.image.mode == "RGB"
    assert result.image.getpixel((50, 50)) == (0, 0, 255) and result.image.getpixel((150, 50)) == (255, 255, 0)


@pytest.mark.parametrize("size", [(256, 256), (123, 77)])
def test_matplotlib_figure_is_drawn_at_exact_size(render_pool: RenderPool, size) -> None:
    result = render_pool.render("matplotlib", CHART, size=size)
    assert result.status == "ok", result.error
    assert result.image.size == size and result.image.mode == "RGB"
    assert result.image.getpixel((1, 1)) == (0, 255, 0)  # the code's figure, despite plt.close()
    pixels = set(result.image.getdata())
    assert (0, 0, 255) in pixels


def test_jobs_do_not_share_state_and_may_use_scratch(render_pool: RenderPool) -> None:
    dirty = ("import matplotlib.pyplot as plt, matplotlib as mpl\nmpl.rcParams['figure.facecolor'] = 'red'\n"
             "open('notes.txt', 'w').write('scratch works')\nassert open('notes.txt').read() == 'scratch works'\n"
             "fig = plt.figure()\n")
    assert render_pool.render("matplotlib", dirty, size=(32, 32)).image.getpixel((0, 0)) == (255, 0, 0)
    clean = "import matplotlib.pyplot as plt\nfig = plt.figure()\nassert plt.get_fignums() == [1]\n"
    for _ in range(2):  # whichever worker runs it, the warm state is untouched
        result = render_pool.render("matplotlib", clean, size=(32, 32))
        assert result.status == "ok", result.error
        assert result.image.getpixel((0, 0)) == (255, 255, 255)


def test_render_many_keeps_order_and_matches_single_renders(render_pool: RenderPool) -> None:
    colors = ["#ff0000", "#00ff00", "#0000ff", "#ffffff", "#000000", "#808080"]
    svgs = [f'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" '
            f'fill="{c}"/></svg>' for c in colors]
    batch = render_pool.render_many("svg", [*svgs, "", "while"], size=(8, 8))
    assert [r.image.getpixel((4, 4)) for r in batch[:6]] == [
        (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0), (128, 128, 128)]
    assert [r.status for r in batch[6:]] == ["invalid", "invalid"]


def test_module_level_render_uses_the_default_pool(render_pool: RenderPool) -> None:
    result = rewards.render("svg", '<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>', size=(5, 7))
    assert result.ok and result.image.size == (5, 7)
    out: list = []
    thread = threading.Thread(target=lambda: out.append(rewards.render("matplotlib", CHART, size=(20, 20))))
    thread.start()
    thread.join()
    assert out[0].ok  # usable off the main thread: no signal handlers involved


def test_caller_mistakes_raise(render_pool: RenderPool) -> None:
    with pytest.raises(ValueError, match="render kind 'png'"):
        render_pool.render("png", "x")
    with pytest.raises(ValueError, match="size must be"):
        render_pool.render("svg", "<svg/>", size=(0, 10))
    with pytest.raises(ValueError, match="timeout"):
        render_pool.render("svg", "<svg/>", timeout=-1)
    with pytest.raises(ValueError, match="unknown render kinds"):
        RenderPool(kinds=("cad",))


def test_a_kind_without_its_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a worker dying on ``import cadquery`` with a traceback: the pool refuses before starting one."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cadquery" else real(name, *a))
    with pytest.raises(ImportError, match=r"'cadquery-geometry' needs the 'cadquery' package.*\[cad\]"):
        RenderPool(kinds=("svg", "cadquery-geometry"))


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/proc/self/ns/net"), reason="needs root on Linux")
def test_isolation_report_as_root(render_pool: RenderPool) -> None:
    walls = render_pool.isolation
    assert walls["network_namespace"] and walls["mount_namespace"] and walls["pid_namespace"]
    assert walls["job_uid"] is not None and walls["job_uid"] >= 1000
    assert "/tmp" in walls["private_tmp"] and walls["problems"] == []


def test_dead_worker_is_replaced_and_reported_as_infra() -> None:
    pool = RenderPool(1).start()
    try:
        old = pool.worker_pids[0]
        os.killpg(old, signal.SIGKILL)
        result = pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', size=(4, 4))
        assert result.status == "infra" and result.infra_failure and "replaced" in result.error
        again = pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', size=(4, 4))
        assert again.ok and pool.worker_pids[0] != old
    finally:
        pids = pool.worker_pids
        pool.close()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_a_forked_child_starts_its_own_workers(render_pool: RenderPool) -> None:
    """A DataLoader-style fork must not talk over the parent's pipes or kill its workers."""
    assert render_pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', size=(4, 4)).ok  # parent first
    parent_workers = list(render_pool.worker_pids)
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            result = render_pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', size=(4, 4))
            ok = result.ok and not set(render_pool.worker_pids) & set(parent_workers)
            render_pool.close()
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert render_pool.worker_pids == parent_workers
    assert render_pool.render("svg", '<svg xmlns="http://www.w3.org/2000/svg"/>', size=(4, 4)).ok


VALID_CODE = {
    "pandas": "import pandas as pd\nimport matplotlib.pyplot as plt\n"
              "pd.DataFrame({'a': [1, 2, 3], 'b': [3, 2, 1]}).plot(kind='bar')\n",
    "mplot3d": "import matplotlib.pyplot as plt\nax = plt.figure().add_subplot(projection='3d')\n"
               "ax.plot([0, 1], [0, 1], [0, 1])\n",
    "stdlib-and-dates": "import datetime, json, math, random, statistics\nimport matplotlib.dates as mdates\n"
                        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
                        "ax.plot([datetime.date(2020, 1, d) for d in range(1, 5)], [1, 2, 3, 4])\n"
                        "ax.xaxis.set_major_formatter(mdates.DateFormatter('%d'))\n",
    "absolute-savefig-and-show": "import matplotlib.pyplot as plt\nplt.plot([1, 2])\n"
                                 "plt.savefig('/tmp/chart.png', dpi=600, bbox_inches='tight')\nplt.show()\n",
    "switch-backend": "import matplotlib\nmatplotlib.use('TkAgg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\n",
    "mathtext-and-colorbar": "import numpy as np\nimport matplotlib.pyplot as plt\nplt.imshow(np.eye(8))\n"
                             "plt.colorbar()\nplt.title(r'$\\alpha^2 + \\sum_i x_i$')\n",
}


@pytest.mark.parametrize("case", sorted(VALID_CODE))
def test_common_chart_code_renders(render_pool: RenderPool, case: str) -> None:
    result = render_pool.render("matplotlib", VALID_CODE[case], size=(96, 64))
    assert result.status == "ok", result.error
    assert result.image.size == (96, 64) and len(set(result.image.getdata())) > 2  # something was drawn


SLEEP = "import time\ntime.sleep(2)\n"
EMPTY_SVG = '<svg xmlns="http://www.w3.org/2000/svg"/>'


def _worker_processes() -> set[int]:
    """Pids of render workers started by this process (alive, not zombies)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "rewards.rendering.worker" in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                found.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return found


def test_an_interrupt_mid_render_neither_loses_nor_leaks_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewards.rendering import pool as pool_module

    real = pool_module.read_message
    calls = []

    def interrupted(fd, deadline=None, max_payload=1 << 30):
        calls.append(fd)
        if len(calls) == 1:
            raise KeyboardInterrupt  # Ctrl-C while the trainer waits for the answer
        return real(fd, deadline, max_payload)

    before = _worker_processes()
    with RenderPool(1, kinds=("svg",), preload=()) as pool:
        old = pool.worker_pids
        monkeypatch.setattr(pool_module, "read_message", interrupted)
        with pytest.raises(KeyboardInterrupt):
            pool.render("svg", EMPTY_SVG, size=(4, 4), timeout=2)
        assert not psutil.pid_exists(old[0]) or psutil.Process(old[0]).status() == psutil.STATUS_ZOMBIE
        again = pool.render("svg", EMPTY_SVG, size=(4, 4), timeout=2)  # a lazy restart, not a 120 s wait
        assert again.ok and again.elapsed < 60 and pool.worker_pids != old
    assert _worker_processes() <= before


def test_a_failed_restart_is_retried_on_the_next_render(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewards.rendering import pool as pool_module

    before = _worker_processes()
    with RenderPool(1, kinds=("svg",), preload=()) as pool:
        os.killpg(pool.worker_pids[0], signal.SIGKILL)
        assert pool.render("svg", EMPTY_SVG, size=(4, 4)).status == "infra"  # the lost worker's sample
        real = pool_module._Worker.wait_ready

        def fails_once(self, timeout):
            monkeypatch.setattr(pool_module._Worker, "wait_ready", real)
            self.kill()
            raise RuntimeError("render worker 0 did not start: simulated")

        monkeypatch.setattr(pool_module._Worker, "wait_ready", fails_once)
        failed = pool.render("svg", EMPTY_SVG, size=(4, 4))
        assert failed.status == "infra" and "could not restart" in failed.error
        assert pool.render("svg", EMPTY_SVG, size=(4, 4)).ok
    assert _worker_processes() <= before


def test_close_racing_renders_waits_for_them_and_stops_every_worker() -> None:
    before = _worker_processes()
    pool = RenderPool(2, kinds=("matplotlib",), preload=()).start()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(pool.render("matplotlib", SLEEP, size=(8, 8),
                                                                          timeout=4))) for _ in range(3)]
    for thread in threads:
        thread.start()
    while pool._busy < 2 or not pool._cond._waiters:  # two jobs running, the third render waiting
        threading.Event().wait(0.05)
    pool.close()
    for thread in threads:
        thread.join(30)
    assert _worker_processes() <= before, "a worker outlived close()"
    assert len(results) == 3
    # the two running jobs finish (their code draws no figure), the waiting one is refused
    assert sorted(r.status for r in results) == ["infra", "invalid", "invalid"], results
