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
