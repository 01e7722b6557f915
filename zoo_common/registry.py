"""One registry pattern for every pluggable thing in the project.

Models, rewards, advantage estimators and policy losses are all looked up by a
lowercase kebab-case name. The pattern follows verl's decorator registries: a
second, *different* object under a taken name is an error (no silent shadowing),
and a miss names the closest keys so a typo is a one-glance fix.

A registry finds its own plug-ins: it holds *discovery hooks* (``discover=`` or
:meth:`Registry.add_discovery`) and runs the pending ones on the first miss, once each, inside
the lookup. So a name a domain registers resolves whatever the user imported first
(``import rewards; rewards.get("gui-g1")``, ``DATASETS.get(...)`` straight from ``zoo.data``), and
no module has to remember to call a ``discover()`` before reading a table. A registry may also hold a
*locator* (``locate=``): asked first on a miss, it imports the one module that registers that name (the
plug-in that declares it), so a lookup pays for one plug-in and only a name nobody declares runs discovery.

It lives in the leaf package ``zoo_common`` so that ``rewards``, ``zoo`` and the
domains share it without ``zoo`` paying for importing the reward code.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that no registry entry carries; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


def close_matches(name: str, choices: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``choices`` a mistyped ``name`` may have meant: those containing it (``patho`` -> every
    ``patho-*``; three characters or more), then the most similar spellings (``difflib``, ratio 0.5 or more)."""
    contain = sorted(c for c in choices if len(name) >= 3 and name in c and c != name)
    similar = difflib.get_close_matches(name, choices, n=n, cutoff=0.5)
    return list(dict.fromkeys(contain + similar))[:n]


def name_key(name: str) -> str:
    """The form a registry stores ``name`` under: case and ``_``/``-`` do not matter (``UI_S1`` is ``ui-s1``)."""
    return name.strip().lower().replace("_", "-")


class Registry(Generic[T]):
    """Case-insensitive name -> object mapping with explicit aliases.

    ``_`` and ``-`` are interchangeable in lookups so that ``ui_s1`` finds ``ui-s1``.

    Args:
        kind: what the registry holds, in words (error messages say "unknown reward 'x'").
        discover: a hook that registers the plug-ins found elsewhere (e.g. every domain's
            datasets); it runs on the first lookup that misses, or the first listing.
        locate: ``locate(name)`` registers the plug-in that declares ``name``, if one does (importing its
            module alone); it runs on every miss, before ``discover``, so a declared name costs one plug-in.
    """

    def __init__(self, kind: str, discover: Callable[[], None] | None = None,
                 locate: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.kind = kind
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._pending: list[Callable[[], None]] = [discover] if discover else []
        self._locate = locate
        self._lock = threading.RLock()  # a hook may look names up in this registry while it runs

    def add_discovery(self, hook: Callable[[], None]) -> None:
        """Run ``hook()`` once, at the next lookup that misses or the next listing.

        A hook added while another runs (a plug-in that brings its own) runs in the same discovery.
        """
        with self._lock:
            self._pending.append(hook)

    def _discover(self) -> bool:
        """Run every pending hook once; ``True`` when any ran (a missed name may now be there).

        A hook is taken off the list before it runs, so a lookup it makes cannot re-enter it, and
        one that raises is not retried at every later miss.
        """
        ran = False
        with self._lock:
            while self._pending:
                self._pending.pop(0)()
                ran = True
        return ran

    def register(self, name: str, obj: T, aliases: tuple[str, ...] = ()) -> T:
        """Add ``obj`` under ``name`` (and ``aliases``); re-adding the same object is a no-op."""
        key = name_key(name)
        if key in self._aliases:
            raise ValueError(f"{self.kind} name {name!r} is already an alias of {self._aliases[key]!r}")
        if key in self._items and self._items[key] is not obj and self._items[key] != obj:
            raise ValueError(
                f"{self.kind} {name!r} is already registered with a different object; "
                "pick another name or remove the first registration"
            )
        self._items[key] = obj
        for alias in aliases:
            akey = name_key(alias)
            if akey in self._items or self._aliases.get(akey, key) != key:
                raise ValueError(f"alias {alias!r} for {self.kind} {name!r} is already taken")
            self._aliases[akey] = key
        return obj

    def decorator(self, name: str, aliases: tuple[str, ...] = ()) -> Callable[[T], T]:
        """``@registry.decorator("name")`` form of :meth:`register`."""

        def wrap(obj: T) -> T:
            return self.register(name, obj, aliases)

        return wrap

    def _lookup(self, name: str) -> str:
        key = name_key(name)
        return self._aliases.get(key, key)

    def _find(self, name: str) -> str:
        """The key ``name`` refers to after the cheapest search that can register it: the table, then the
        locator (the one plug-in declaring it), then discovery (every plug-in)."""
        key = self._lookup(name)
        if key not in self._items and self._locate is not None:
            self._locate(name)
            key = self._lookup(name)
        if key not in self._items and self._discover():
            key = self._lookup(name)
        return key

    def canonical(self, name: str) -> str:
        """The registered key that ``name`` (a key or an alias, any case) refers to."""
        key = self._find(name)
        if key not in self._items:
            choices = list(self._items) + list(self._aliases)
            close = close_matches(key, choices)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            known = ", ".join(sorted(self._items)) if len(self._items) <= 12 else f"{len(self._items)} names"
            raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} (registered: {known})")
        return key

    def get(self, name: str) -> T:
        """The object registered under ``name``; raises :class:`UnknownNameError` with suggestions."""
        return self._items[self.canonical(name)]

    def list(self) -> list[str]:
        """Registered names, sorted (after discovery: every plug-in's names)."""
        self._discover()
        return sorted(self._items)

    def aliases_of(self, name: str) -> list[str]:
        key = self.canonical(name)
        return sorted(a for a, k in self._aliases.items() if k == key)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._find(name) in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self.list())
