"""Run the measurements in order and collect them into one plain dict (the report's data)."""

from __future__ import annotations

import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import DEFAULT_SIZES, MODELS, QUICK_SIZES, measure, workload

PARTS = ("forward", "toggles", "pages", "memory", "bertviz", "coldstart")


@dataclass
class Options:
    sizes: tuple[int, ...] = DEFAULT_SIZES
    models: tuple[str, ...] = MODELS
    parts: tuple[str, ...] = PARTS
    forward_repeats: int = 5
    repeats: int = 3  # toggles, pages, bertviz
    budget_s: float | None = 15.0  # per measurement: stop repeating past this much measured time
    memory_tokens: int = 512
    deadline_s: float = 420.0  # past this many seconds, the remaining measurements run once each
    quick: bool = False
    log: object = field(default=sys.stderr, repr=False)

    @classmethod
    def quick_run(cls, sizes: tuple[int, ...] | None = None, **changes) -> Options:
        sizes = tuple(sizes or QUICK_SIZES)
        values = dict(
            sizes=sizes,
            forward_repeats=2,
            repeats=1,
            budget_s=5.0,
            memory_tokens=max(sizes),
            quick=True,
            parts=tuple(p for p in PARTS if p != "coldstart"),
        )
        values.update(changes)
        return cls(**values)


def _commit() -> str:
    """The app's commit, with a mark when its code differs from it (the benchmark measures the work tree)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "app.py", "home.py", "model", "viz", "ui", "pages"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" + local changes" if dirty else "")


def machine() -> dict:
    import plotly
    import streamlit
    import torch
    import transformers

    return dict(
        commit=_commit(),
        python=platform.python_version(),
        torch=torch.__version__,
        transformers=transformers.__version__,
        plotly=plotly.__version__,
        streamlit=streamlit.__version__,
        cores=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        load_average=[round(x, 2) for x in os.getloadavg()],
        bertviz=measure.bertviz_available(),
    )


def _say(options: Options, message: str) -> None:
    if options.log is not None:
        print(f"[bench] {message}", file=options.log, flush=True)


def run(options: Options) -> dict:
    """Every measurement `options` asks for; returns the report's data (see bench.report)."""
    started = time.perf_counter()
    whole_run = measure.CpuWatch()
    results: dict = dict(
        machine=machine(),
        options=dict(
            sizes=list(options.sizes),
            models=list(options.models),
            parts=list(options.parts),
            forward_repeats=options.forward_repeats,
            repeats=options.repeats,
            memory_tokens=options.memory_tokens,
            quick=options.quick,
        ),
        models={},
    )
    folder = None
    try:
        model_parts = {"forward", "toggles", "pages", "memory", "bertviz"} & set(options.parts)
        for kind in options.models if model_parts else ():
            if model_parts == {"bertviz"} and kind != "distilbert":
                continue
            entry: dict = dict(sizes={})
            t = time.perf_counter()
            if kind == "distilbert":
                _say(options, "building the DistilBERT-size model (random weights) in a temporary folder")
                folder = workload.build_distilbert_folder()
                entry["build_s"] = time.perf_counter() - t
                t = time.perf_counter()
            model = workload.load(kind, folder if kind == "distilbert" else None)
            entry["load_s"] = time.perf_counter() - t
            entry.update(n_layers=model.n_layers, n_heads=model.n_heads, d_model=model.d_model)
            tokens_page = workload.TokensPage(model) if "pages" in options.parts else None
            per_size = {"forward", "toggles", "pages"} & set(options.parts)
            for size in options.sizes if per_size else ():
                text = workload.text_of_tokens(model, size)
                row: dict = {}
                if time.perf_counter() - started > options.deadline_s and not results.get("hurried_from"):
                    results["hurried_from"] = f"{kind} {size} tokens"
                    _say(options, f"past {options.deadline_s:g} s: one run per measurement from here on")
                hurry = bool(results.get("hurried_from"))
                repeats = 1 if hurry else options.repeats
                forward_repeats = 1 if hurry else options.forward_repeats
                budget_s = 2.0 if hurry else options.budget_s
                watch = measure.CpuWatch()
                if "forward" in options.parts:
                    _say(options, f"{kind} {size} tokens: forward vs trace")
                    row["forward"] = measure.forward_vs_trace(model, text, forward_repeats, budget_s)
                if "toggles" in options.parts:
                    _say(options, f"{kind} {size} tokens: toggles")
                    row["toggles"] = measure.toggle_times(model, text, repeats, budget_s)
                if "pages" in options.parts:
                    _say(options, f"{kind} {size} tokens: pages")
                    row["pages"] = measure.page_payloads(model, text, repeats, budget_s, tokens_page)
                row["others_cpu"] = watch.others()
                entry["sizes"][str(size)] = row
            if "memory" in options.parts:
                _say(options, f"{kind}: peak memory of a {options.memory_tokens}-token trace (subprocess)")
                entry["memory"] = measure.peak_memory(kind, options.memory_tokens, folder if kind == "distilbert" else None)
            if kind == "distilbert" and "bertviz" in options.parts:
                if not measure.bertviz_available():
                    entry["bertviz"] = dict(available=False)
                else:
                    entry["bertviz"] = dict(available=True, sizes={})
                    for size in options.sizes:
                        _say(options, f"bertviz vs overview, {size} tokens (subprocess)")
                        text = workload.text_of_tokens(model, size)
                        repeats = 1 if results.get("hurried_from") else options.repeats
                        entry["bertviz"]["sizes"][str(size)] = measure.bertviz_vs_overview(model, folder, text, repeats)
            results["models"][kind] = entry
            del model
        if "coldstart" in options.parts:
            from bench import coldstart

            _say(options, "cold start: streamlit run app.py → first chart of /Attention in chromium")
            cold = coldstart.cold_start()
            cold["imports_s"] = coldstart.import_time()
            results["cold_start"] = cold
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    results["notes"] = dict(workload.NOTES)
    results["others_cpu"] = whole_run.others()
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["elapsed_s"] = time.perf_counter() - started
    return results


def main_sizes(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or any(n < 3 or n > 512 for n in sizes):
        raise ValueError("sizes must be token counts between 3 and 512, comma-separated")
    return sizes


__all__ = ["Options", "PARTS", "main_sizes", "run"]
