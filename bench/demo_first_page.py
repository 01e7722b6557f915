"""Time from ``zoo demo NAME`` to its first page: process start to the first HTTP 200 of ``/``.

    python bench/demo_first_page.py [--runs 3] [--names gui-grounding-tiny flow-grpo-tiny-colour fetch-push-bc-tiny]

One shipped checkpoint per kind the zoo ships (VLM, text-to-image, policy; no CLIP checkpoint is shipped),
each started ``--runs`` times, one server at a time, on CPU with one OpenMP thread (the tests' setting).
Prints min and median seconds per name and the machine's load average, which the numbers depend on.
The target is a first page under 20 s on an idle 2-core machine. Not a test: the clock depends on the machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["gui-grounding-tiny", "flow-grpo-tiny-colour", "fetch-push-bc-tiny"]
#: Longest wait for one page (a server that never answers is reported, not waited on forever).
TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_page_seconds(name: str, log: Path) -> float:
    """Seconds from starting ``zoo demo NAME`` to the first 200 of its ``/``; the server is stopped after."""
    port = free_port()
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "zoo.cli", "demo", name, "--port", str(port), "--device", "cpu"],
        cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        while time.perf_counter() - start < TIMEOUT_S:
            if process.poll() is not None:
                raise RuntimeError(f"zoo demo {name} exited ({process.returncode}); its log: {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    if response.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"zoo demo {name} did not answer in {TIMEOUT_S} s; its log: {log}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="starts per name (default: 3)")
    parser.add_argument("--names", nargs="+", default=SHIPPED, help="entries to serve (default: one per kind)")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="demo-first-page-"))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    for name in args.names:
        times = [first_page_seconds(name, logs / f"{name}-{i}.log") for i in range(args.runs)]
        print(f"{name:<24} min {min(times):6.1f} s  median {statistics.median(times):6.1f} s  "
              f"({', '.join(f'{t:.1f}' for t in times)})")  # fmt: skip
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; logs in {logs}")


if __name__ == "__main__":
    main()
