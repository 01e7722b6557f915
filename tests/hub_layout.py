"""Test helpers: lay a model directory out in a Hugging Face cache exactly as huggingface_hub does.

``models--{org}--{name}/blobs/<sha256>`` holds the files, ``snapshots/<commit>/<file>`` are
relative symlinks to the blobs, and ``refs/main`` holds the commit hash. This is the layout
``snapshot_download(..., local_files_only=True)`` reads, so the zoo's real resolution code runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def install_in_cache(model_dir: Path, repo_id: str, cache_dir: Path, commit: str | None = None) -> Path:
    """Copy ``model_dir``'s files into ``cache_dir`` as the snapshot ``commit`` of ``repo_id`` on ``main``; by default
    the commit a registry entry pins for ``repo_id`` (what ``zoo.load`` asks the cache for), else a made-up one."""
    commit = commit or pinned_commit(repo_id) or "0" * 40
    repo = cache_dir / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    for file in sorted(p for p in Path(model_dir).rglob("*") if p.is_file()):
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        blob = repo / "blobs" / digest
        if not blob.exists():
            shutil.copyfile(file, blob)
        link = snapshot / file.relative_to(model_dir)
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def pinned_commit(repo_id: str) -> str | None:
    """The revision a registry entry of ``repo_id`` pins (the first that pins one), ``None`` where none does."""
    import zoo

    pins = [e.revision for e in map(zoo.info, zoo.list_models()) if e.repo_id == repo_id and e.revision]
    return pins[0] if pins else None


#: Runs each ``(name, code)`` of the JSON file argv[1] in a fresh namespace and prints ``{name: traceback or ""}``.
_RUN_SNIPPETS = """
import json, sys, traceback
outcome = {}
for name, code in json.load(open(sys.argv[1])):
    try:
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
        outcome[name] = ""
    except Exception:
        outcome[name] = traceback.format_exc()
print("\\n" + json.dumps(outcome))
"""


def run_offline(snippets: list[tuple[str, str]], cache: Path, cwd: Path, timeout: float = 900) -> dict[str, str]:
    """Run each ``(name, code)`` as a reader would, from ``cwd`` with ``HF_HUB_OFFLINE=1`` and ``cache`` as the Hugging
    Face cache: one fresh namespace per snippet, one process for all (the imports are paid once). Returns each name's
    traceback, an empty string where the snippet ran."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    listing = Path(cwd) / "snippets.json"
    listing.write_text(json.dumps(snippets))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-c", _RUN_SNIPPETS, str(listing)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the snippet runner itself failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])
