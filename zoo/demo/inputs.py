"""What a page's typed numbers may be: whole numbers in a stated range, else a refusal naming the range.

A slider clamps what is typed into it, silently: 100000 steps ran as 100 and nobody was told. The pages
take numbers in plain number boxes and check them here, so an out-of-range value is answered in the
status line with the range it must lie in, before anything runs.
"""

from __future__ import annotations

import math

from zoo.demo.errors import InputError

#: Largest first seed a page takes (zoo: 2**31 - 1, so that seed + i of the few seeds one press runs stays within
#: every generator's range: torch's 64-bit seeds, numpy's and gymnasium's 32-bit ones; a larger one overflowed inside
#: torch as "Overflow when unpacking long long").
SEED_MAX = 2**31 - 1


def number(value: float | None, what: str, low: float, high: float) -> float:
    """``value`` when it is a number from ``low`` to ``high``; else an :class:`InputError` naming the range."""
    if value is None:
        raise InputError(f"{what} is empty: type a number from {low:g} to {high:g}")
    if not (math.isfinite(value) and low <= value <= high):
        raise InputError(f"{what} {value:g} is out of range: type a number from {low:g} to {high:g}")
    return float(value)


def whole_number(value: float | None, what: str, low: int, high: int) -> int:
    """``value`` as an ``int`` when it is a whole number from ``low`` to ``high``; else an :class:`InputError`."""
    if value is None:
        raise InputError(f"{what} is empty: type a whole number from {low} to {high}")
    if not math.isfinite(value) or value != int(value) or not low <= value <= high:
        raise InputError(f"{what} {value:g} is out of range: type a whole number from {low} to {high}")
    return int(value)


def seed(value: float | None) -> int:
    """The first seed of a press (episode or image ``i`` uses ``seed + i``)."""
    return whole_number(value, "seed", 0, SEED_MAX)
