"""Values built once per key and shared by every session of the server process, within one memory budget.

`st.cache_resource` keeps values by count; a cached 512-token SmolLM2 trace is about 250 MB and a toy trace
a few KB, so a count says nothing of memory: forty long texts took one process to 9.5 GB. Here every cache
of the process (models, traces, page content) shares one budget in bytes, `ATTENTION_VIZ_MEMORY_MB`
(default `DEFAULT_MB`), measured from the values' own tensors, arrays and bytes (`size_of`). When a new
value would pass it, the entries used least recently go first, whichever cache holds them. A value that
alone is larger than the budget is served, then not kept.

As with `st.cache_resource`: a value is built once even when several sessions ask for it at the same time
(the others wait for it), and a build that raises is not kept. The key is the arguments themselves
(hashable: strings, tuples, frozen dataclasses), found with one dict lookup.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import wraps
from typing import Generic, TypeVar

T = TypeVar("T")
# A process holds about 600 MB besides its caches (Python, torch, transformers, Streamlit): with 1.5 GB of
# cached values (SmolLM2's weights among them) a server reading forty long texts stayed at 2.1-2.3 GB on
# one model (python -m bench.memory, docs/performance.md), so four processes fit in 16 GB.
DEFAULT_MB = 1536
COLLECT_AFTER_BYTES = 64 * 2**20  # values dropped since the last collection that make one worth its 0.25-0.37 s


def budget_bytes(environ=os.environ) -> int:
    """The process's memory budget for cached values, from ATTENTION_VIZ_MEMORY_MB."""
    try:
        return max(1, int(float(environ.get("ATTENTION_VIZ_MEMORY_MB", DEFAULT_MB)) * 2**20))
    except ValueError:
        return DEFAULT_MB * 2**20


def size_of(value, seen: set | None = None) -> int:
    """The bytes that `value` holds in tensors, arrays, bytes and strings, following dataclasses, dicts,
    lists, tuples, torch modules and plain objects; each storage counted once (views share theirs)."""
    seen = set() if seen is None else seen
    if id(value) in seen or value is None or isinstance(value, (bool, int, float, type)):
        return 0
    seen.add(id(value))
    if isinstance(value, (bytes, bytearray, str)):
        return len(value)
    storage = getattr(value, "untyped_storage", None)
    if callable(storage):  # a torch tensor
        data = storage()
        if ("storage", data.data_ptr()) in seen:
            return 0
        seen.add(("storage", data.data_ptr()))
        return data.nbytes()
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and hasattr(value, "dtype"):  # a numpy array (a view counts its base once)
        base = getattr(value, "base", None)
        return size_of(base, seen) if base is not None and hasattr(base, "nbytes") else nbytes
    if isinstance(value, dict):
        return sum(size_of(k, seen) + size_of(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(size_of(item, seen) for item in value)
    if callable(getattr(value, "state_dict", None)) and callable(getattr(value, "parameters", None)):  # a torch module
        return sum(size_of(tensor, seen) for tensor in value.state_dict(keep_vars=True).values())
    if dataclasses.is_dataclass(value):  # a field marked metadata={"owned": False} is another's (a model's weights)
        fields = dataclasses.fields(value)
        for f in fields:
            if not f.metadata.get("owned", True):  # not counted, but its storages noted: `borrowed`
                inner: set = set()
                size_of(getattr(value, f.name), inner)
                seen.update(("borrowed", mark[1]) for mark in inner if isinstance(mark, tuple) and mark[0] == "storage")
        return sum(size_of(getattr(value, f.name), seen) for f in fields if f.metadata.get("owned", True))
    if hasattr(value, "__dict__"):
        return size_of(vars(value), seen)
    return 0


def storages(seen: set) -> tuple[frozenset, frozenset]:
    """After `size_of(value, seen)`: the tensor storages `value` owns, and those it only refers to (another
    value's, such as a trace's views of its model's weights), by address."""
    owned = frozenset(mark[1] for mark in seen if isinstance(mark, tuple) and mark[0] == "storage" and mark[1])  # 0: an empty tensor
    borrowed = frozenset(mark[1] for mark in seen if isinstance(mark, tuple) and mark[0] == "borrowed" and mark[1]) - owned
    return owned, borrowed


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


MALLOC_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Return to the system the pages that the C allocator keeps free inside its heaps (glibc's
    `malloc_trim(0)`); whether anything was returned (False also where there is no `malloc_trim`).

    A tensor smaller than glibc's mmap threshold (which rises to 32 MB as large blocks are freed) lives in
    the allocator's heaps, and a freed one stays there, counted in the process's RSS, until a later
    allocation reuses it. Only the top of a heap is given back on its own; the free pages between the
    values still kept are given back only by `malloc_trim`."""
    return bool(MALLOC_TRIM(0)) if MALLOC_TRIM is not None else False


class _Budget:
    """The bytes kept by every cache of the process, and the order in which their entries were last used."""

    def __init__(self):
        self.lock = threading.RLock()
        self.used: OrderedDict[tuple[int, Hashable], tuple[SharedCache, int]] = OrderedDict()  # (cache id, key) → (cache, bytes)
        self.total = 0
        self.limit: int | None = None  # read from the environment on first use
        self.dropped = 0  # bytes of the values dropped since the last garbage collection
        # (cache id, key) → (storages the value owns, storages of other values it refers to), where it has any
        self.storages: dict[tuple[int, Hashable], tuple[frozenset, frozenset]] = {}

    def bytes_allowed(self) -> int:
        if self.limit is None:
            self.limit = budget_bytes()
        return self.limit

    def touch(self, cache: SharedCache, key: Hashable) -> None:
        with self.lock:
            if (cache.ident, key) in self.used:
                self.used.move_to_end((cache.ident, key))

    def _take(self, entry: tuple[int, Hashable]) -> list[tuple[SharedCache, Hashable]]:
        """Remove `entry` from the budget with every entry that refers to its storages (a trace holding views
        of a model's weights: the weights stay in memory as long as the trace does, so a model dropped alone
        would leave its count in the budget and its 0.5 GB in the process). Called with the lock held; the
        caches still hold the values (`forget` them after)."""
        taken, pending = [], [entry]
        while pending:
            entry = pending.pop()
            cache, nbytes = self.used.pop(entry, (None, 0))
            if cache is None:
                continue
            self.total -= nbytes
            self.dropped += nbytes
            taken.append((cache, entry[1]))
            owned = self.storages.pop(entry, (frozenset(), frozenset()))[0]
            if owned:
                pending += [other for other, (_, borrowed) in self.storages.items() if borrowed & owned]
        return taken

    def add(self, cache: SharedCache, key: Hashable, nbytes: int, parts: tuple[frozenset, frozenset] | None = None) -> None:
        """Keep `key`'s entry of `cache` in the budget (or `nbytes` more of it), making room by dropping the
        entries used least recently. `parts`: the storages the value owns and borrows (`storages`)."""
        victims = []
        with self.lock:
            before = self.used.get((cache.ident, key), (cache, 0))[1]
            self.used[(cache.ident, key)] = (cache, before + nbytes)
            self.used.move_to_end((cache.ident, key))
            if parts is not None and (parts[0] or parts[1]):
                self.storages[(cache.ident, key)] = parts
            self.total += nbytes
            while self.total > self.bytes_allowed() and len(self.used) > 1:
                victims += self._take(next(iter(self.used)))
            collect = self.dropped >= COLLECT_AFTER_BYTES
            if collect:
                self.dropped = 0
        for owner, old_key in victims:  # outside the budget's lock: a cache's own lock is never taken inside it
            owner.forget(old_key)
        if collect:
            # A model or trace is held in reference cycles (a module and its hooks, a trace and its parts), which
            # only the cyclic collector frees, and the app runs no collection after each script run: dropped
            # values stayed in memory beside their replacements (a server at 3.3 GB with a 2 GB budget).
            gc.collect()
            release_free_memory()

    def remove(self, cache: SharedCache, key: Hashable) -> None:
        """Let `key`'s entry of `cache` go (the cache has dropped it), with the entries that refer to it."""
        with self.lock:
            dropped = self._take((cache.ident, key))
        for owner, old_key in dropped:
            if owner is not cache or old_key != key:
                owner.forget(old_key)


BUDGET = _Budget()
_IDENTS = itertools.count()


class SharedCache(Generic[T]):
    """At most `max_entries` values, each dropped `ttl` seconds after it was built (never if None), all
    within the process's memory budget (`BUDGET`)."""

    def __init__(self, max_entries: int, ttl: float | None = None, clock: Callable[[], float] = time.monotonic, budget: _Budget = BUDGET):
        self.max_entries, self.ttl, self._clock, self.budget = max_entries, ttl, clock, budget
        self.ident = next(_IDENTS)
        self._values: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()  # key → (built at, value), oldest use first
        self._lock = threading.RLock()
        self._building: dict[Hashable, threading.Lock] = {}

    def _found(self, key: Hashable) -> tuple[bool, T | None]:
        with self._lock:
            entry = self._values.get(key)
            expired = entry is not None and self.ttl is not None and self._clock() - entry[0] > self.ttl
            if entry is not None and not expired:
                self._values.move_to_end(key)
        if entry is None:
            return False, None
        if expired:
            self.drop(key)
            return False, None
        self.budget.touch(self, key)
        return True, entry[1]

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value kept for `key`, or `build()` kept for it (if it fits the budget)."""
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
                seen: set = set()
                nbytes = size_of(value, seen)
                if nbytes <= self.budget.bytes_allowed():
                    with self._lock:
                        self._values[key] = (self._clock(), value)
                        over = list(self._values)[: max(0, len(self._values) - self.max_entries)]
                    for old in over:
                        self.drop(old)
                    self.budget.add(self, key, nbytes, storages(seen))
                return value
            finally:  # after the value is kept: a session asking now finds it, not a new lock
                with self._lock:
                    self._building.pop(key, None)

    def has(self, key: Hashable) -> bool:
        """Whether a value is kept for `key` (it may still be dropped before it is asked for)."""
        with self._lock:
            return key in self._values

    def grew(self, key: Hashable, nbytes: int) -> None:
        """The value kept for `key` now holds `nbytes` more (something made from it and kept with it)."""
        if key in self._values:
            self.budget.add(self, key, nbytes)

    def forget(self, key: Hashable) -> None:
        """Drop `key`'s value (the budget has already let it go)."""
        with self._lock:
            self._values.pop(key, None)

    def drop(self, key: Hashable) -> None:
        self.forget(key)
        self.budget.remove(self, key)

    def clear(self) -> None:
        for key in list(self._values):
            self.drop(key)

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
