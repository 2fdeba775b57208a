"""ui.shared_cache: what st.cache_resource did for the app's shared values, at one dict lookup a call."""

import threading
import time

import pytest

from ui.shared_cache import SharedCache, shared


def test_a_value_is_built_once_per_key_and_the_oldest_use_goes_first():
    cache = SharedCache(max_entries=2)
    built = []

    def build(key):
        built.append(key)
        return [key]

    a = cache.get("a", lambda: build("a"))
    assert cache.get("a", lambda: build("a")) is a and built == ["a"]
    cache.get("b", lambda: build("b"))
    cache.get("a", lambda: build("a"))  # "a" used again: "b" is now the oldest use
    cache.get("c", lambda: build("c"))
    assert len(cache) == 2
    cache.get("a", lambda: build("a"))
    cache.get("b", lambda: build("b"))
    assert built == ["a", "b", "c", "b"]
    cache.clear()
    cache.get("a", lambda: build("a"))
    assert built[-1] == "a" and len(cache) == 1


def test_a_value_older_than_its_time_to_live_is_built_again():
    now = [0.0]
    cache = SharedCache(max_entries=8, ttl=30, clock=lambda: now[0])
    built = []
    cache.get("view", lambda: built.append(1) or len(built))
    now[0] = 29
    assert cache.get("view", lambda: built.append(1) or len(built)) == 1
    now[0] = 31
    assert cache.get("view", lambda: built.append(1) or len(built)) == 2


def test_a_build_that_raises_is_not_kept():
    cache = SharedCache(max_entries=8)
    calls = []

    def failing():
        calls.append("fail")
        raise OSError("model files missing")

    with pytest.raises(OSError, match="missing"):
        cache.get("minilm", failing)
    assert cache.get("minilm", lambda: "loaded") == "loaded" and calls == ["fail"] and len(cache) == 1


def test_sessions_asking_at_once_wait_for_one_build():
    cache = SharedCache(max_entries=8)
    builds, started = [], threading.Event()

    def slow_build():
        builds.append(threading.current_thread().name)
        started.set()
        time.sleep(0.2)
        return object()

    results = [None] * 4

    def ask(i):
        results[i] = cache.get("trace", slow_build)

    threads = [threading.Thread(target=ask, args=(i,), name=f"session {i}") for i in range(4)]
    threads[0].start()
    started.wait(5)
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(builds) == 1 and all(result is results[0] for result in results)


def test_the_decorator_keys_on_the_arguments():
    calls = []

    @shared(max_entries=4)
    def run(name, texts):
        calls.append((name, texts))
        return (name, len(texts))

    assert run("toy", ("a", "b")) == ("toy", 2) and run("toy", ("a", "b")) == ("toy", 2)
    run("minilm", ("a", "b"))
    assert calls == [("toy", ("a", "b")), ("minilm", ("a", "b"))]
    run.clear()
    run("toy", ("a", "b"))
    assert len(calls) == 3 and run.__name__ == "run"


def test_every_cache_shares_one_budget_in_bytes_and_the_least_recently_used_go_first():
    import numpy as np
    import torch

    from ui.shared_cache import _Budget, size_of

    budget = _Budget()
    budget.limit = 10_000
    traces, pages = SharedCache(max_entries=100, budget=budget), SharedCache(max_entries=100, budget=budget)
    a = traces.get("a", lambda: torch.zeros(1000))  # 4,000 bytes
    pages.get("p", lambda: {"figure": np.zeros(500)})  # 4,000 bytes
    traces.get("a", lambda: None)  # "a" used again: "p" is now the least recently used
    traces.get("b", lambda: torch.zeros(1000))  # 12,000 bytes in all: "p" goes
    assert len(pages) == 0 and len(traces) == 2 and budget.total == 8000
    big = traces.get("huge", lambda: torch.zeros(5000))  # alone larger than the budget: served, not kept
    assert big.numel() == 5000 and len(traces) == 2 and traces.get("a", lambda: "rebuilt") is a
    assert size_of(torch.zeros(10)[2:5]) == 40  # a view counts its storage once
    assert size_of({"x": np.zeros(8, dtype=np.float32), "y": b"abc", "z": [torch.zeros(2)]}) == 32 + 3 + 8 + 3  # and the keys' text


def test_the_budget_is_read_from_the_environment():
    from ui.shared_cache import DEFAULT_MB, budget_bytes

    assert budget_bytes({"ATTENTION_VIZ_MEMORY_MB": "512"}) == 512 * 2**20
    assert budget_bytes({}) == DEFAULT_MB * 2**20
    assert budget_bytes({"ATTENTION_VIZ_MEMORY_MB": "lots"}) == DEFAULT_MB * 2**20
