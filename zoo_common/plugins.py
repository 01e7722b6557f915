"""Where plug-in code may come from: distributions installed in the environment, never the working directory.

``importlib.metadata`` reads entry points from every ``sys.path`` entry, and under ``python -m`` (the form
``torchrun -m`` and ``accelerate launch -m`` use) the working directory is one: a ``*.dist-info/entry_points.txt``
planted in a downloaded recipe folder would make ``zoo list`` import the module it names. So the zoo reads its
plug-in entry points (``zoo.domains``, ``zoo.rewards``) only from the folders installed packages live in
(:func:`install_dirs`): installing a distribution is how a user trusts its code. A folder of wheels installed with
``pip install --target`` (the GPU suite's) is trusted by naming it in :data:`PLUGIN_DIRS_ENV`.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from functools import cache
from importlib.metadata import EntryPoint, distributions
from pathlib import Path

#: The environment variable naming further folders of installed distributions (``os.pathsep`` separated), whose
#: entry points count as installed ones: the user's explicit opt-in, like ``ZOO_TRUST_MODULES`` for modules.
PLUGIN_DIRS_ENV = "ZOO_PLUGIN_DIRS"

@cache
def install_dirs() -> tuple[Path, ...]:
    """The folders installed packages live in: the standard library and every site-packages folder."""
    schemes = [sysconfig.get_paths(), sysconfig.get_paths(vars={"base": sys.base_prefix,
                                                                "platbase": sys.base_exec_prefix})]  # fmt: skip
    dirs = {paths[key] for paths in schemes for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.add(site.getusersitepackages())
    return tuple(Path(os.path.realpath(d)) for d in sorted(dirs))


def installed_entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` that installed distributions advertise (one per distribution name, the first
    found, as ``importlib.metadata`` does), read from :func:`install_dirs` and the folders :data:`PLUGIN_DIRS_ENV`
    names, never from the rest of ``sys.path``."""
    named = [Path(d) for d in os.environ.get(PLUGIN_DIRS_ENV, "").split(os.pathsep) if d]
    seen: set[str] = set()
    points: list[EntryPoint] = []
    for dist in distributions(path=[str(d) for d in (*install_dirs(), *named) if d.is_dir()]):
        name = (dist.metadata["Name"] or "").lower().replace("-", "_")
        if name in seen:
            continue
        seen.add(name)
        points.extend(dist.entry_points.select(group=group))
    return points
