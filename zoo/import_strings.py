"""The one resolver for ``"package.module:attr"`` strings that files name (recipes, registries, descriptors).

Recipes are data a user may be handed, yet some of their values name code
(``model.added_tokens: domains.gui.location_tokens:TOKENS``); a checkpoint's ``training.json`` names
none (:mod:`zoo.records`).
Importing such a string runs the module, and under ``python -m zoo.cli`` (the form ``accelerate
launch -m`` and ``torchrun -m`` use) the current directory is on ``sys.path``: a ``helpers.py``
shipped beside a recipe would run with no opt-in. So :func:`resolve` imports a module only when its
top-level package is

* one of this project's packages (:data:`PROJECT_PACKAGES`) found where this installation keeps them;
* installed in the environment: found in the standard library or a site-packages folder, not through
  the current directory, a script's directory or ``PYTHONPATH``;
* a domain another distribution registers under the ``zoo.domains`` entry-point group; or
* named in the environment variable ``ZOO_TRUST_MODULES`` (``pkg[,pkg]``): the user's explicit opt-in.

The decision is made from ``importlib.util.find_spec`` of the top-level package, which locates it
without running it. A module already imported is returned as it is: resolving it runs nothing new.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from zoo_common.plugins import install_dirs, installed_entry_points

#: The environment variable that trusts further top-level packages by name (comma separated).
TRUST_ENV = "ZOO_TRUST_MODULES"

#: This project's own library packages; trusted only where this installation keeps them (``lab``, the
#: experiments beside the library, is never named by a file the library reads).
PROJECT_PACKAGES = ("zoo", "zoo_common", "rewards", "domains")

#: The folder holding this installation's packages (the checkout, or site-packages for a wheel).
PROJECT_ROOT = Path(__file__).resolve().parents[1]


class ImportStringError(ImportError, ValueError):
    """An import string that is malformed, names nothing, or names code outside the trusted places.

    Both an ``ImportError`` (callers handling failed imports catch it) and a ``ValueError`` (the CLI
    prints those as one ``error:`` line).
    """


def resolve(target: str, *, what: str) -> Any:
    """The object ``target`` (``"package.module:attr"``) names, imported only from trusted places.

    Args:
        target: the import string.
        what: where the string comes from, for the error (``"recipe key model.added_tokens"``).

    Raises:
        ImportStringError: ``target`` is not ``module:attr``, its module does not exist or lacks
            ``attr``, or the module lies outside the trusted places (nothing of it is imported then).
    """
    module_name, sep, attr = str(target).partition(":")
    if not sep or not module_name or module_name.startswith(".") or not attr:
        raise ImportStringError(f"{what}: {target!r} is not an importable 'package.module:NAME' string")
    if module_name not in sys.modules:
        refusal = _refusal(module_name.split(".")[0], target, what)
        if refusal:
            raise ImportStringError(refusal)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not (module_name == err.name or module_name.startswith(f"{err.name}.")):
            raise  # a dependency of the named module is missing: the module's own error says which
        raise ImportStringError(f"{what}: {target!r} is not an importable 'module:NAME' ({err})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportStringError(f"{what}: {target!r} is not an importable 'module:NAME' "
                                f"(module {module_name!r} has no {attr!r})") from None  # fmt: skip


def trusted_by_user() -> frozenset[str]:
    """The top-level package names the user trusts through :data:`TRUST_ENV`."""
    return frozenset(name.strip() for name in os.environ.get(TRUST_ENV, "").split(",") if name.strip())


def _refusal(top: str, target: str, what: str) -> str | None:
    """Why ``top`` may not be imported (``None``: it may), decided without importing it."""
    if top in trusted_by_user():
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a malformed name; import_module reports it
        return None
    if spec is None:
        return None  # not found anywhere: import_module raises the not-found error
    if spec.origin in ("built-in", "frozen"):
        return None
    locations = [Path(p) for p in (spec.submodule_search_locations or ())] or [Path(str(spec.origin))]
    if top in PROJECT_PACKAGES:
        trusted_roots: tuple[Path, ...] = (PROJECT_ROOT / top,)
        place = f"this installation's own {top!r} ({PROJECT_ROOT / top})"
    else:
        trusted_roots = install_dirs()
        place = "an installed package (standard library or site-packages)"
    outside = [p for p in locations if not any(_inside(p, root) for root in trusted_roots)]
    if not outside or (top not in PROJECT_PACKAGES and top in _registered_domain_packages()):
        return None
    return (
        f"{what}: {target!r} would import {top!r} from {outside[0]}: not {place}, nor a domain registered under "
        "the 'zoo.domains' entry points. Nothing of it was imported (code lying beside the files you were handed "
        f"does not run); if you trust that code, allow it by name: {TRUST_ENV}={top}"
    )


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(root)


#: Entry-point group of distributions that add a domain (value: the module holding its ``DOMAIN``).
ENTRY_POINT_GROUP = "zoo.domains"


def entry_point_packages() -> list[str]:
    """The modules other distributions advertise under :data:`ENTRY_POINT_GROUP` (each holds a ``DOMAIN``).

    Installing a distribution that advertises one is how a user trusts a domain's code, so
    :func:`resolve` imports from these packages too; :mod:`zoo.domains` discovers them. Only installed
    distributions count (:func:`zoo_common.plugins.installed_entry_points`): a dist-info folder in the working
    directory advertises nothing."""
    return [ep.value for ep in installed_entry_points(ENTRY_POINT_GROUP)]


def _registered_domain_packages() -> frozenset[str]:
    """Top-level packages of the domains other distributions advertise (``zoo.domains`` entry points)."""
    return frozenset(package.split(".")[0] for package in entry_point_packages())
