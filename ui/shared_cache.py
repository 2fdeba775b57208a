"""Values built once per key and shared by every session of the server process.

`st.cache_resource` does this too, but each call costs about 0.4 ms on this machine before the value is
found: it hashes every argument and looks up each one's name with `inspect.signature`. A rerun of the
Attention page makes about fourteen such calls (its figures' parts, the trace, the model), 6 ms of the
0.07 s a toggle costs the server. Here the key is the arguments themselves (hashable: strings, tuples,
frozen dataclasses), found with one dict lookup.

As with `st.cache_resource`: a value is built once even when several sessions ask for it at the same
time (the others wait for it), a build that raises is not kept, and the oldest entries go first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import wraps
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedCache(Generic[T]):
    """At most `max_entries` values, each dropped `ttl` seconds after it was built (never if None)."""

    def __init__(self, max_entries: int, ttl: float | None = None, clock: Callable[[], float] = time.monotonic):
        self.max_entries, self.ttl, self._clock = max_entries, ttl, clock
        self._values: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()  # key → (built at, value), oldest use first
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def _found(self, key: Hashable) -> tuple[bool, T | None]:
        with self._lock:
            entry = self._values.get(key)
            if entry is None:
                return False, None
            if self.ttl is not None and self._clock() - entry[0] > self.ttl:
                del self._values[key]
                return False, None
            self._values.move_to_end(key)
            return True, entry[1]

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value kept for `key`, or `build()` kept for it."""
        found, value = self._found(key)
        if found:
            return value
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per key at a time; whoever waited finds its value
            found, value = self._found(key)
            if found:
                return value
            try:
                value = build()
                with self._lock:
                    self._values[key] = (self._clock(), value)
                    while len(self._values) > self.max_entries:
                        self._values.popitem(last=False)
                return value
            finally:  # after the value is kept: a session asking now finds it, not a new lock
                with self._lock:
                    self._building.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)


def shared(max_entries: int, ttl: float | None = None):
    """Decorator: `function(*args)` kept per arguments (all hashable) in a `SharedCache`; `.clear()`
    empties it."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        cache: SharedCache[T] = SharedCache(max_entries, ttl)

        @wraps(function)
        def cached(*args):
            return cache.get(args, lambda: function(*args))

        cached.clear = cache.clear
        cached.cache = cache
        return cached

    return decorate
