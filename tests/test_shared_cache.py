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


def test_a_value_dropped_from_the_budget_is_freed_though_it_sits_in_reference_cycles():
    import gc
    import weakref

    import torch

    from ui.shared_cache import COLLECT_AFTER_BYTES, _Budget

    class Model:  # a module and its hooks refer to each other: only the cyclic collector frees them
        def __init__(self):
            self.weights = torch.empty(COLLECT_AFTER_BYTES // 4)  # float32: COLLECT_AFTER_BYTES bytes, pages never touched
            self.hooks = [self]

    budget = _Budget()
    budget.limit = COLLECT_AFTER_BYTES + 1000
    models = SharedCache(max_entries=10, budget=budget)
    first = weakref.ref(models.get("first", Model))
    gc.disable()  # only the budget's own collection may free it
    try:
        models.get("second", Model)  # the budget holds one: "first" is dropped
        assert len(models) == 1 and not models.has("first")
        assert first() is None
    finally:
        gc.enable()


def test_free_pages_inside_the_c_heap_are_given_back_to_the_system():
    import ctypes
    from pathlib import Path

    from ui.shared_cache import MALLOC_TRIM, release_free_memory

    if MALLOC_TRIM is None:
        pytest.skip("no malloc_trim in this C library (glibc only)")
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]

    def rss_mb() -> float:
        line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024

    block = 64 * 1024  # below glibc's mmap threshold: from the heap
    blocks = [libc.malloc(block) for _ in range(3200)]  # 200 MB
    for address in blocks:
        ctypes.memset(address, 1, block)
    for index, address in enumerate(blocks):
        if index % 16:  # every sixteenth block stays: the free ones lie between kept ones, not at the heap's top
            libc.free(address)
    held = rss_mb()
    assert release_free_memory()
    given_back = held - rss_mb()
    for address in blocks[::16]:
        libc.free(address)
    assert given_back > 150  # of the 187 MB freed


def test_a_value_that_refers_to_a_dropped_models_weights_goes_with_it():
    import gc
    import weakref
    from dataclasses import dataclass, field

    import torch

    from ui.shared_cache import _Budget, size_of

    class Model:
        def __init__(self):
            self.weight = torch.zeros(1000)  # 4,000 bytes

    @dataclass
    class Trace:  # as model.trace.Trace: its own tensors, and views of its model's weights (not counted)
        pattern: torch.Tensor
        weights: torch.Tensor = field(metadata={"owned": False})

    budget = _Budget()
    budget.limit = 10_000
    models, traces = SharedCache(max_entries=10, budget=budget), SharedCache(max_entries=10, budget=budget)
    model = models.get("smollm2", Model)
    trace = traces.get("text", lambda m=model: Trace(torch.zeros(500), m.weight[:10]))  # used after the model
    model_bytes = 4000 + len("weight")  # its tensor, and its attribute's name
    assert size_of(trace) == 2000 and budget.total == model_bytes + 2000
    alive = weakref.ref(model)
    del model, trace
    models.get("minilm", Model)  # over 10,000 bytes: the least recently used goes, the first model, and the trace with it
    gc.collect()
    assert not models.has("smollm2") and not traces.has("text") and alive() is None
    assert budget.total == model_bytes and len(models) == 1
    traces.get("other", lambda: Trace(torch.zeros(10), torch.zeros(3)))
    models.drop("minilm")  # a value dropped by its own cache takes no one else's with it
    assert traces.has("other") and budget.total == size_of(Trace(torch.zeros(10), torch.zeros(3))) == 40


def test_a_session_holds_no_trace_once_the_caches_let_it_go():
    """A browser session keeps its last run's widgets and the Attention page's fragment (a closed tab's too,
    until Streamlit lets the session go): neither may keep the trace, or the model's weights stay in memory
    after the shared cache dropped them (SmolLM2's 0.5 GB across a model switch)."""
    import gc
    import weakref

    from apptest_helpers import open_page
    from model.trace import Trace
    from ui import content_cache, view

    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, Trace)}  # other tests' (their own caches)
    at = open_page("pages/3_Attention.py", {"text": "The bank of the river was muddy."})
    assert at.session_state["settings"].text == "The bank of the river was muddy."
    gc.collect()
    traces = [weakref.ref(o) for o in gc.get_objects() if isinstance(o, Trace) and id(o) not in before]
    assert traces and all(ref().texts == ["The bank of the river was muddy."] for ref in traces)
    view.cached_run.clear()
    content_cache._cached.clear()
    gc.collect()
    kept = [ref() for ref in traces if ref() is not None]
    assert not kept, [gc.get_referrers(t)[:3] for t in kept][:1]
    at.run()  # the session still draws: the page builds its trace again
    assert not at.exception and len(at.session_state["settings"].text) > 0


def test_the_output_step_keeps_a_copy_of_w_o_not_the_model_s_weights():
    """The page's content (cached, and kept in a session for its downloads) must not hold views of the
    model's weights: a mapped safetensors file is one storage, so one layer's W_O would keep the whole
    model in memory after the caches let it go."""
    import numpy as np

    from model import load_model
    from viz.content import Settings, run_model
    from viz.content.attention import output_step_and_table

    model = load_model("toy")
    settings = Settings(text="The bank of the river was muddy.")
    trace = run_model(model, settings.sentences, settings.display)
    figure, table = output_step_and_table(trace, model, 0, 0, [0, 1])
    w_o = model.output_projection(0)[0].numpy()
    arrays = [v for trace_ in figure["data"] for v in trace_.values() if isinstance(v, np.ndarray)]
    kept = [cell.cell_contents for cell in table.__closure__ if isinstance(cell.cell_contents, np.ndarray)]  # what the table keeps
    assert any(np.array_equal(a, w_o) for a in arrays) and any(np.array_equal(a, w_o) for a in kept)  # W_O drawn and kept …
    assert not any(np.shares_memory(a, w_o) for a in arrays + kept)  # … as copies
    assert table()["value"].notna().all()
