"""The measurements, as plain functions returning plain dicts (the report and the tests read them)."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench import workload
from viz.content.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
TOGGLES = ("head", "mask", "scaling", "temperature")
PAGES = ("attention", "tokens", "positional", "embeddings")


class CpuWatch:
    """The share of the machine's CPU that other processes used since `start()` (0 … 1).

    /proc/stat's busy time of all cores, less this process's own CPU time (and its waited-for
    children's), over wall time × cores. Timings taken while it is high are not trustworthy.
    """

    def __init__(self):
        self.start()

    @staticmethod
    def _snapshot() -> tuple[float, float, float]:
        import resource

        busy = 0.0
        try:
            fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
            user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
            busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            busy = float("nan")
        own = sum(usage.ru_utime + usage.ru_stime for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
        return time.monotonic(), busy, own

    def start(self) -> None:
        self.begin = self._snapshot()

    def others(self) -> float:
        t0, busy0, own0 = self.begin
        t1, busy1, own1 = self._snapshot()
        capacity = (t1 - t0) * (os.cpu_count() or 1)
        if capacity <= 0 or busy1 != busy1:  # NaN: no /proc/stat
            return float("nan")
        return min(1.0, max(0.0, ((busy1 - busy0) - (own1 - own0)) / capacity))


def timed(function, repeats: int, warmup: int = 1, budget_s: float | None = None) -> dict:
    """Median wall time of `function()` over `repeats` runs after `warmup` runs.

    `function` may return a dict of named part times (seconds); their medians are reported too.
    With `budget_s`, repetition stops early once that much time has gone into the measured runs
    (at least one run is always measured).
    """
    for _ in range(warmup):
        function()
    gc.collect()  # once per series: a full collection costs ~0.15 s with torch, transformers and plotly loaded
    totals, parts = [], {}
    spent = 0.0
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = function()
        elapsed = time.perf_counter() - start
        totals.append(elapsed)
        if isinstance(result, dict):
            for name, value in result.items():
                if isinstance(value, (int, float)):
                    parts.setdefault(name, []).append(float(value))
        spent += elapsed
        if budget_s is not None and spent > budget_s:
            break
    return dict(
        median_s=statistics.median(totals),
        min_s=min(totals),
        runs=len(totals),
        parts={name: statistics.median(values) for name, values in parts.items()},
    )


# ------------------------------------------------------------------------- 1. forward vs trace


def forward_vs_trace(model, text: str, repeats: int, budget_s: float | None = None, min_total_s: float = 1.0) -> dict:
    """The bare forward pass against `model.trace([text])` (tokenizing, hooks, recording included).

    The two are timed alternately after a warm-up of each, so that a burst of load elsewhere on the
    machine falls on both; fast runs are repeated until `min_total_s` is spent (at most 50 times).
    """
    input_ids, key_valid = workload.bare_inputs(model, text)
    forward = lambda: workload.bare_forward(model, input_ids, key_valid)  # noqa: E731
    trace = lambda: model.trace([text])  # noqa: E731
    forward(), trace()
    gc.collect()
    times: dict[str, list[float]] = {"forward": [], "trace": []}
    spent = 0.0
    while True:
        for name, function in (("forward", forward), ("trace", trace)):
            start = time.perf_counter()
            function()
            elapsed = time.perf_counter() - start
            times[name].append(elapsed)
            spent += elapsed
        runs = len(times["trace"])
        if runs >= 50 or (runs >= max(1, repeats) and spent >= min_total_s) or (budget_s is not None and spent > 2 * budget_s):
            break
    forward_s, trace_s = statistics.median(times["forward"]), statistics.median(times["trace"])
    return dict(
        tokens=int(input_ids.shape[1]),
        forward_s=forward_s,
        trace_s=trace_s,
        ratio=trace_s / forward_s,
        forward_min_s=min(times["forward"]),
        trace_min_s=min(times["trace"]),
        runs=len(times["trace"]),
    )


# --------------------------------------------------------------------------- 2. toggle → figures


def toggled(settings: Settings, toggle: str, model) -> Settings:
    """The settings after one change in the sidebar."""
    if toggle == "head":
        return replace(settings, heads=(1 % model.n_heads,))
    if toggle == "mask":  # the model's own mask → the other one of padding / causal+padding
        own = model.default_mask if settings.mask == "model" else settings.mask
        return replace(settings, mask="padding" if own == "causal+padding" else "causal+padding")
    if toggle == "scaling":
        return replace(settings, scaling=not settings.scaling)
    if toggle == "temperature":
        return replace(settings, temperature=2.0 if settings.temperature != 2.0 else 1.0)
    raise ValueError(f"unknown toggle {toggle!r}")


def reruns(model, base: Settings, new: Settings) -> bool:
    """Whether the toggle needs a new model run: only the toy model's, and not for a head change."""
    return model.is_toy and new.display != base.display


def toggle_step(model, text: str, base_run, base: Settings, toggle: str):
    """The server work after one toggle, as a function returning its parts' times.

    base_run is the cached run (a trace as the model computed it). The toy model re-runs with the new
    settings (that is how the app works: its forward pass depends on them); a pretrained model's view
    is changed on the cached run. Then the Attention page's figures are built and serialised.
    """
    new = toggled(base, toggle, model)

    def step() -> dict:
        t0 = time.perf_counter()
        if reruns(model, base, new):
            trace = workload.trace_for(model, [text], new)
        elif model.is_toy:
            trace = base_run
        else:
            trace = workload.view_of(base_run, new, model)
        t1 = time.perf_counter()
        figures = workload.attention_figures(trace, new)
        t2 = time.perf_counter()
        sizes = workload.serialise(figures)
        t3 = time.perf_counter()
        return dict(run_s=t1 - t0, figures_s=t2 - t1, json_s=t3 - t2, bytes=sum(sizes.values()))

    return step


def toggle_times(model, text: str, repeats: int, budget_s: float | None = None) -> dict:
    """Seconds from a changed toggle to serialised Attention-page figures, per kind of toggle."""
    base = Settings()
    base_run = model.trace([text]) if not model.is_toy else workload.trace_for(model, [text], base)
    step = toggle_step(model, text, base_run, base, "head")
    step()  # warm-up: plotly's validators, first allocations
    results = {}
    for toggle in TOGGLES:
        measured = timed(toggle_step(model, text, base_run, base, toggle), repeats, 0, budget_s)
        results[toggle] = dict(
            seconds=measured["median_s"],
            reruns_model=reruns(model, base, toggled(base, toggle, model)),
            runs=measured["runs"],
            **{name: value for name, value in measured["parts"].items() if name != "bytes"},
        )
    return results


# ------------------------------------------------------------------------------ 3. page payloads


def page_payloads(model, text: str, repeats: int, budget_s: float | None = None, tokens_page=None) -> dict:
    """Bytes of figure JSON per page render, and the server time to build and serialise them."""
    settings = Settings()
    trace = workload.trace_for(model, [text], settings)
    n = trace.input_ids.shape[1]
    tokens_page = tokens_page or workload.TokensPage(model)
    builders = {
        "attention": lambda: workload.attention_figures(trace, settings),
        "tokens": lambda: tokens_page.figures(trace, settings),
        "positional": lambda: workload.positional_figures(model, trace, settings, n),
        "embeddings": lambda: workload.embeddings_figures(model, trace, settings),
    }
    results = {}
    for page, build in builders.items():
        figures = build()
        sizes = workload.serialise(figures)

        def render(build=build) -> dict:
            t0 = time.perf_counter()
            figures = build()
            t1 = time.perf_counter()
            workload.serialise(figures)
            return dict(figures_s=t1 - t0, json_s=time.perf_counter() - t1)

        measured = timed(render, repeats, 0, budget_s)
        results[page] = dict(
            bytes=sum(sizes.values()),
            seconds=measured["median_s"],
            runs=measured["runs"],
            figures=sizes,
            **measured["parts"],
        )
    return results


# ----------------------------------------------------------------------- subprocess measurements


def run_worker(args: list[str], timeout_s: float) -> dict:
    """`python -m bench.worker ARGS` in a fresh process; its last stdout line is JSON."""
    command = [sys.executable, "-m", "bench.worker", *args]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {timeout_s:g} s")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return dict(error=f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
    return json.loads(lines[-1])


def peak_memory(kind: str, tokens: int, folder: Path | None, timeout_s: float = 240) -> dict:
    """Peak RSS of a process that loads the model and traces `tokens` tokens (then draws the Attention page)."""
    args = ["memory", "--model", kind, "--tokens", str(tokens)]
    if folder is not None:
        args += ["--folder", str(folder)]
    return run_worker(args, timeout_s)


def bertviz_available() -> bool:
    return importlib.util.find_spec("bertviz") is not None


def bertviz_vs_overview(model, folder: Path, text: str, repeats: int, timeout_s: float = 240) -> dict:
    """bertviz `model_view` HTML (in a subprocess) against our overview figure for the same attentions."""
    import plotly.io as pio

    from viz.content.attention import overview_figure
    from viz.plain import plotly_dict

    tokens = workload.n_tokens(model, text)
    theirs = run_worker(["bertviz", "--folder", str(folder), "--tokens", str(tokens)], timeout_s)
    trace = model.trace([text])
    sizes = {}

    def ours() -> None:
        sizes["bytes"] = len(pio.to_json(plotly_dict(overview_figure(trace, 0)), validate=False).encode("utf-8"))

    measured = timed(ours, repeats, 1)
    result = dict(tokens=tokens, ours_bytes=sizes["bytes"], ours_s=measured["median_s"])
    if "error" in theirs:
        result["error"] = theirs["error"]
        return result
    result.update(
        bertviz_bytes=theirs["html_bytes"],
        bertviz_s=theirs["seconds"],
        bertviz_peak_rss=theirs.get("peak_rss"),
        size_ratio=theirs["html_bytes"] / sizes["bytes"],
        time_ratio=theirs["seconds"] / measured["median_s"],
    )
    return result
