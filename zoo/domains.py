"""One door for domains: a :class:`Domain` descriptor in each ``domains/<d>/__init__.py``.

A field of the zoo (medical, GUI, ...) is a folder. Its ``__init__.py`` holds one ``DOMAIN =
Domain(...)`` that names, as import strings, what the folder contributes: the module that
registers its model entries, the module that registers its rewards, the module declaring its
papers' own losses, its dataset loaders, its evaluation, its environments and its recipes
folder. Naming modules rather than importing them keeps discovery cheap: ``zoo.list_models()`` imports the
entries modules only, never reward or data code.

Discovery happens inside the registries, on their first miss: :data:`DOMAINS` finds every
sub-package of ``domains`` (so a new field is a new folder and nothing else), plus a ``DOMAIN``
advertised by another distribution under the ``zoo.domains`` entry-point group (value: the module
that holds it). The tables built from the descriptors (models, datasets, rewards, loss types,
environments, benchmarks) each name their hook here (:func:`load_entries`, :func:`register_all`,
...), so a name any domain registers resolves whatever the user imported first.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rewards.base import REWARDS
from zoo.import_strings import entry_point_packages
from zoo_common.registry import Registry, name_key

logger = logging.getLogger(__name__)

#: The kinds of the tables a domain's ``algorithms`` module adds rows to, besides policy methods (whose names
#: :attr:`Domain.methods` declares): the keys :attr:`Domain.algorithm_names` may use.
ALGORITHM_TABLES = ("loss type", "advantage estimator", "policy loss", "rollout plug-in")


@dataclass(frozen=True)
class Domain:
    """What one field contributes to the zoo. Every module is named by its import path.

    Attributes:
        name: the folder name (``gui``); entries carry it in ``ModelEntry.domain``.
        summary: one line for ``zoo domains`` and the README.
        entries: module whose import registers the field's :class:`~zoo.registry.ModelEntry` s.
        rewards: module whose import registers the field's rewards.
        algorithms: module whose import registers its papers' own loss types, advantage estimators, policy losses
            and rollout plug-ins (:mod:`zoo.algorithms`), and its policy methods' training code.
        algorithm_names: what ``algorithms`` registers, table by table: a table's kind (``"loss type"``, one of
            :data:`ALGORITHM_TABLES`) -> its names there. Looking one of them up imports this domain's
            ``algorithms`` alone (:func:`locate_algorithm`), and listing a table imports only the domains that
            name rows in it; ``None`` leaves it undeclared, so every miss of those tables imports the module.
            ``tests/contract/test_algorithm_names.py`` holds it equal to what the module registers.
        datasets: dataset name -> ``"module:function"`` loader returning :class:`~zoo.data.Sample` s.
        answer_formats: name -> ``"module:function"`` writing a sample's reference answer as the
            assistant text an SFT stage teaches (``vlm-sft`` recipes' ``data.answer_format``).
        evaluate: ``"module:function"`` run by ``zoo eval`` as ``fn(pipe, data, path, out_dir, limit)``.
        benchmarks: the ``--data`` names that evaluation accepts (for help and listing).
        eval_datasets: the registered datasets that read a benchmark's own files (ScreenSpot, ChartMimic,
            OVDEval, ...): a recipe training on one is refused unless it says why (``data.allow_eval_data``).
        environments: environment name -> ``"module:function"`` factory (policy engines).
        methods: policy-method name -> the light module that registers its settings class (e.g.
            ``domains.robot.settings``; the method itself registers from ``algorithms``): a recipe choosing
            ``algorithm.method`` imports that module alone (:func:`load_method`).
        recipes: the recipes folder, relative to the domain package.
        package: the import path of the domain package (filled in by discovery).
    """

    name: str
    summary: str
    entries: str | None = None
    rewards: str | None = None
    algorithms: str | None = None
    algorithm_names: Mapping[str, tuple[str, ...]] | None = None
    datasets: Mapping[str, str] = field(default_factory=dict)
    answer_formats: Mapping[str, str] = field(default_factory=dict)
    evaluate: str | None = None
    benchmarks: tuple[str, ...] = ()
    eval_datasets: tuple[str, ...] = ()
    environments: Mapping[str, str] = field(default_factory=dict)
    methods: Mapping[str, str] = field(default_factory=dict)
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


_lock = threading.RLock()
_loaded = {"entries": False, "rewards": False, "algorithms": False}


def _register_domains() -> None:
    """Discovery hook of :data:`DOMAINS`: import each domain package's descriptor, once."""
    for package in _domain_packages():
        _add(package)


#: Every field of the zoo by name; filled on its first lookup (:func:`_register_domains`).
DOMAINS: Registry[Domain] = Registry("domain", discover=_register_domains)


def discover() -> list[Domain]:
    """Every domain (folders of ``domains``, then the ``zoo.domains`` entry points), sorted by name.

    Only the descriptors are imported. A domain whose ``__init__`` fails to import is logged and
    skipped, so one broken field does not hide the others.
    """
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
    DOMAINS.register(domain.name, _with_package(domain, package))


def _with_package(domain: Domain, package: str) -> Domain:
    from dataclasses import replace

    return domain if domain.package == package else replace(domain, package=package)


def register_all(registry: Registry[str], part: str) -> None:
    """Register every domain's ``part`` table (``"datasets"``, ``"environments"``, ...) into ``registry``.

    The discovery hook of the registries whose names the descriptors list as import strings.
    """
    for domain in discover():
        for name, target in getattr(domain, part).items():
            registry.register(name, target)


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


def _offering(name: str) -> tuple[Domain, str] | None:
    """The domain whose descriptor offers policy method ``name`` (``_`` and ``-`` alike) and the settings module it
    names for it (:attr:`Domain.methods`); ``None`` when no descriptor does."""
    key = name.strip().lower().replace("_", "-")
    for domain in discover():
        module = next((m for n, m in domain.methods.items() if n.lower().replace("_", "-") == key), None)
        if module is not None:
            return domain, module
    return None


def load_method(name: str) -> None:
    """Import the settings module a domain names for policy method ``name``, and no other module: what reading a
    recipe needs; nothing when no descriptor names it (the settings table's own discovery then looks)."""
    found = _offering(name)
    if found is not None:
        importlib.import_module(found[1])


def load_method_code(name: str) -> None:
    """Import the ``algorithms`` module of the domain that offers policy method ``name`` (its training code, which
    registers the method), and no other domain's: what the policy engine's check needs; nothing when no descriptor
    offers it (the method table's own discovery then imports every domain's)."""
    found = _offering(name)
    if found is not None and found[0].algorithms is not None:
        importlib.import_module(found[0].algorithms)


def _names_rows(domain: Domain, table: str) -> bool:
    """``domain``'s ``algorithms`` module may register rows in ``table``: it says so, or it does not say."""
    return domain.algorithms is not None and (domain.algorithm_names is None or bool(domain.algorithm_names.get(table)))


def locate_algorithm(table: str) -> Callable[[str], None]:
    """The locator of algorithm table ``table`` (:data:`ALGORITHM_TABLES`): it imports the ``algorithms`` module of
    the domain whose :attr:`Domain.algorithm_names` name the looked-up name there, and no other domain's (nothing
    when none does: the table's own discovery then looks)."""
    _check_table(table)

    def locate(name: str) -> None:
        key = name_key(name)
        for domain in discover():
            if domain.algorithms and key in {name_key(n) for n in (domain.algorithm_names or {}).get(table, ())}:
                _import_part(domain, "algorithms")
                return

    return locate


def discover_algorithms(table: str) -> Callable[[], None]:
    """The discovery of algorithm table ``table`` (a name no descriptor declares, or a listing): the ``algorithms``
    modules of the domains that name rows in it or leave :attr:`Domain.algorithm_names` undeclared, so an unknown
    loss's close-match error never imports a policy domain's training code."""
    _check_table(table)

    def discover_table() -> None:
        for domain in discover():
            if _names_rows(domain, table):
                _import_part(domain, "algorithms")

    return discover_table


def _check_table(table: str) -> None:
    if table not in ALGORITHM_TABLES:
        raise ValueError(f"no algorithm table {table!r}; the tables are {ALGORITHM_TABLES}")


def _import_part(domain: Domain, part: str) -> None:
    """Import ``domain``'s ``part`` module; a broken one is logged, so it does not hide the other domains."""
    module = getattr(domain, part)
    try:
        importlib.import_module(module)
    except Exception:  # one broken module must not hide the other domains
        logger.exception("could not import %s of domain %r; its %s are unavailable", module, domain.name, part)


def _load_once(part: str) -> None:
    with _lock:
        if _loaded[part]:
            return
        _loaded[part] = True
        for domain in discover():
            if getattr(domain, part) is not None:
                _import_part(domain, part)


# rewards may not import zoo; instead zoo adds the domains' rewards modules to the reward
# registry's discovery (the `zoo.rewards` entry point imports this module when rewards is used alone).
REWARDS.add_discovery(load_rewards)
