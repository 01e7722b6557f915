"""One door for domains: a :class:`Domain` descriptor in each ``domains/<d>/__init__.py``.

A field of the zoo (medical, GUI, ...) is a folder. Its ``__init__.py`` holds one ``DOMAIN =
Domain(...)`` that names, as import strings, what the folder contributes: the module that
registers its model entries, the module that registers its rewards, the module declaring its
papers' own losses, its dataset loaders, its evaluation, its environments and its recipes
folder. Naming modules rather than importing them keeps discovery cheap: ``zoo.list_models()`` imports the
entries modules only, never reward or data code.

Discovery is one function, :func:`discover`: every sub-package of ``domains`` (so a new field
is a new folder and nothing else), plus a ``DOMAIN`` advertised by another distribution under
the ``zoo.domains`` entry-point group (value: the module that holds it).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from zoo_common.registry import Registry

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "zoo.domains"


@dataclass(frozen=True)
class Domain:
    """What one field contributes to the zoo. Every module is named by its import path.

    Attributes:
        name: the folder name (``gui``); entries carry it in ``ModelEntry.domain``.
        summary: one line for ``zoo domains`` and the README.
        entries: module whose import registers the field's :class:`~zoo.registry.ModelEntry` s.
        rewards: module whose import registers the field's rewards.
        algorithms: module whose import registers its papers' own loss types or advantage estimators
            (:mod:`zoo.rl.loss_types`); the engines load it before reading those tables.
        datasets: dataset name -> ``"module:function"`` loader returning :class:`~zoo.data.Sample` s.
        answer_formats: name -> ``"module:function"`` writing a sample's reference answer as the
            assistant text an SFT stage teaches (``vlm-sft`` recipes' ``data.answer_format``).
        evaluate: ``"module:function"`` run by ``zoo eval`` as ``fn(pipe, data, path, out_dir, limit)``.
        benchmarks: the ``--data`` names that evaluation accepts (for help and listing).
        eval_datasets: the registered datasets that read a benchmark's own files (ScreenSpot, ChartMimic,
            OVDEval, ...): a recipe training on one is refused unless it says why (``data.allow_eval_data``).
        environments: environment name -> ``"module:function"`` factory (policy engines).
        recipes: the recipes folder, relative to the domain package.
        package: the import path of the domain package (filled in by discovery).
    """

    name: str
    summary: str
    entries: str | None = None
    rewards: str | None = None
    algorithms: str | None = None
    datasets: Mapping[str, str] = field(default_factory=dict)
    answer_formats: Mapping[str, str] = field(default_factory=dict)
    evaluate: str | None = None
    benchmarks: tuple[str, ...] = ()
    eval_datasets: tuple[str, ...] = ()
    environments: Mapping[str, str] = field(default_factory=dict)
    recipes: str = "recipes"
    package: str = ""

    def __hash__(self) -> int:  # mapping fields: hash on the identity parts
        return hash((self.name, self.package))

    @property
    def recipes_dir(self) -> Path | None:
        """The folder of this domain's recipe YAMLs, or ``None`` when it has none."""
        module = importlib.import_module(self.package)
        folder = Path(module.__file__).parent / self.recipes
        return folder if folder.is_dir() else None

    def recipe_files(self) -> list[Path]:
        """This domain's recipe files, sorted by name."""
        folder = self.recipes_dir
        return sorted(folder.glob("*.yaml")) if folder else []


DOMAINS: Registry[Domain] = Registry("domain")
_lock = threading.RLock()
_state = {"found": False, "entries": False, "rewards": False, "algorithms": False}


def discover() -> list[Domain]:
    """Find every domain once (folders of ``domains``, then the ``zoo.domains`` entry points).

    Only the descriptors are imported. A domain whose ``__init__`` fails to import is logged and
    skipped, so one broken field does not hide the others.
    """
    with _lock:
        if not _state["found"]:
            _state["found"] = True
            for package in _domain_packages():
                _add(package)
        return [DOMAINS.get(name) for name in DOMAINS.list()]


def _domain_packages() -> list[str]:
    packages = []
    try:
        import domains
    except ImportError:  # installed without the domains package
        domains = None
    if domains is not None:
        packages += [f"domains.{m.name}" for m in sorted(pkgutil.iter_modules(domains.__path__), key=lambda m: m.name)
                     if m.ispkg]  # fmt: skip
    return packages + entry_point_packages()


def entry_point_packages() -> list[str]:
    """The modules other distributions advertise under :data:`ENTRY_POINT_GROUP` (each holds a ``DOMAIN``).

    Installing a distribution that advertises one is how a user trusts a domain's code, so
    :mod:`zoo.import_strings` resolves the import strings of these packages too."""
    return [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]


def _add(package: str) -> None:
    try:
        module = importlib.import_module(package)
    except Exception:  # a broken domain must not hide the others
        logger.exception("could not import domain package %s; skipping it", package)
        return
    domain = getattr(module, "DOMAIN", None)
    if not isinstance(domain, Domain):
        logger.warning("%s has no DOMAIN = zoo.domains.Domain(...); not a zoo domain, skipped", package)
        return
    domain = _with_package(domain, package)
    DOMAINS.register(domain.name, domain)
    from zoo.data import register_answer_format, register_dataset

    for name, target in domain.datasets.items():
        register_dataset(name, target)
    for name, target in domain.answer_formats.items():
        register_answer_format(name, target)


def _with_package(domain: Domain, package: str) -> Domain:
    from dataclasses import replace

    return domain if domain.package == package else replace(domain, package=package)


def get(name: str) -> Domain:
    """The :class:`Domain` named ``name`` (close matches on a miss)."""
    discover()
    return DOMAINS.get(name)


def load_entries() -> None:
    """Import every domain's entries module once (registers their model entries)."""
    _load_once("entries")


def load_rewards() -> None:
    """Import every domain's rewards module once (registers their rewards and loss types)."""
    _load_once("rewards")


def load_algorithms() -> None:
    """Import every domain's algorithms module once (registers their loss types and estimators)."""
    _load_once("algorithms")


def _load_once(part: str) -> None:
    with _lock:
        if _state[part]:
            return
        _state[part] = True
        for domain in discover():
            module = getattr(domain, part)
            if module is None:
                continue
            try:
                importlib.import_module(module)
            except Exception:  # one broken module must not hide the other domains
                logger.exception("could not import %s of domain %r; its %s are unavailable", module, domain.name, part)


# rewards may not import zoo; instead zoo tells rewards how to find the domains' rewards.
from rewards.base import add_discovery_hook

add_discovery_hook(load_rewards)
