"""The benchmarks ``zoo eval --data`` accepts, read from the domains' descriptors (``Domain.benchmarks``).

One table for the command's ``--help``, its close-match errors and the choice of evaluation for a
model no domain lists, so what the help says is what the command takes. Two fields may evaluate a
benchmark of the same name (``synthetic`` is the GUI's and the driving field's generated set): the
table maps a name to every domain that declares it, and the model's own domain decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from zoo.domains import Domain, discover
from zoo_common.registry import Registry


@dataclass(frozen=True)
class Benchmark:
    """A ``--data`` name as its domains spell it (``u2bench-disease_diagnosis``) and who evaluates it."""

    name: str
    domains: tuple[Domain, ...]


def _register_benchmarks() -> None:
    declared: dict[str, list[Domain]] = {}
    for domain in discover():
        if domain.evaluate is None:
            continue
        for name in domain.benchmarks:
            declared.setdefault(name, []).append(domain)
    for name, domains in declared.items():
        BENCHMARKS.register(name, Benchmark(name, tuple(domains)))


#: ``--data`` name -> the benchmark and the domains whose evaluation takes it (a name's ``:id``
#: suffix, e.g. ``u2bench-cla:18``, selects a subset inside the benchmark and is not part of the name).
BENCHMARKS: Registry[Benchmark] = Registry("benchmark", discover=_register_benchmarks)


def benchmark_name(data: str) -> str:
    """The registered part of a ``--data`` value (``u2bench-cla:18`` -> ``u2bench-cla``)."""
    return data.partition(":")[0]


def evaluating_domain(data: str, domain: str | None) -> Domain:
    """The domain whose evaluation runs ``--data data`` for a model of ``domain`` (``None``: unlisted).

    The model's domain when it declares the benchmark; for a model of no domain, the only domain
    that does. A name no domain declares is an error with close matches; a benchmark of another
    field, or one several fields declare for a model of none, asks for ``--entry``.
    """
    owners = BENCHMARKS.get(benchmark_name(data)).domains
    names = ", ".join(d.name for d in owners)
    mine = [d for d in owners if d.name == domain]
    if mine:
        return mine[0]
    if domain is not None:
        raise ValueError(f"--data {data} is evaluated by the {names} domain, not by {domain!r}, this model's; pass "
                         "--entry NAME, a registered model of that field whose prompt and parser the model follows")
    if len(owners) == 1:
        return owners[0]
    raise ValueError(f"--data {data}: the benchmark of several domains ({names}); pass --entry NAME, a registered "
                     "model of the field whose evaluation you mean")  # fmt: skip


def help_text() -> str:
    """``--data``'s help: every benchmark, from the same table the command reads."""
    return "benchmark, one of: " + ", ".join(BENCHMARKS.get(key).name for key in BENCHMARKS.list()) + " (u2bench-<task>:<id> picks one dataset)"
