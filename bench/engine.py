"""`python -m bench.engine`: what tracing through the registered `attention_stages` costs.

For MiniLM (all-MiniLM-L6-v2, 6 layers × 12 heads, d_model 384) and SmolLM2-135M (30 layers × 9 query
heads / 3 key/value heads), on one 512-token sentence:

- the bare forward pass with transformers' own eager attention (no hooks, nothing recorded),
- `model.trace`: the same forward pass through `attention_stages`, recording q, k, v and hidden states,

the median of several runs each, and their ratio (target: at most 1.3). Then, in a fresh process, the
peak memory of a 512-token SmolLM2 trace with the Attention page's figures drawn and serialised.
`--profile` prints where the trace's time goes (torch profiler, top operators).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

N_TOKENS = 512
TARGET_RATIO = 1.3  # the target: a trace costs at most 1.3 bare eager forward passes
WORDS = "the cat sat on the mat because it was tired and the dog ran to the river bank to see the boats".split()


def text_of_tokens(model, n: int) -> str:
    """A sentence that the model's tokenizer cuts into exactly `n` tokens (special tokens included)."""
    words = []
    while len(model.tokenizer.encode(" ".join(words))) < n:
        words.append(WORDS[len(words) % len(WORDS)])
    while len(model.tokenizer.encode(" ".join(words))) > n:
        words.pop()
    return " ".join(words)


def timed(function) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine the CPU time is the steadier one."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def load(name: str):
    from model import load_model
    from model.loading import bundled_path

    if bundled_path(name) is None:
        return None
    return load_model(name)


def forward_vs_trace(model, repeats: int, n_tokens: int = N_TOKENS) -> dict:
    """Bare eager forward vs `model.trace` on one sentence of `n_tokens` tokens."""
    import torch

    text = text_of_tokens(model, n_tokens)
    trace = model.trace([text])
    input_ids, key_valid = trace.input_ids, trace.key_valid
    from model.interface import NAME as own

    module = model.module
    extra = dict(use_cache=False) if model.causal else {}

    def bare():
        with torch.no_grad():
            module(input_ids=input_ids, attention_mask=key_valid.long(), **extra)

    def eager_forward():
        module.set_attn_implementation("eager")
        try:
            bare()
        finally:
            module.set_attn_implementation(own)

    # interleaved, so that the load of a shared machine falls on both alike
    eager_times, trace_times = [], []
    eager_forward(), model.trace([text])  # warm-up
    for _ in range(repeats):
        eager_times.append(timed(eager_forward))
        trace_times.append(timed(lambda: model.trace([text])))
    eager_s, trace_s = (statistics.median(t[0] for t in times) for times in (eager_times, trace_times))
    eager_cpu, trace_cpu = (statistics.median(t[1] for t in times) for times in (eager_times, trace_times))
    return dict(
        model=model.name,
        tokens=int(input_ids.shape[1]),
        layers=model.n_layers,
        heads=model.n_heads,
        eager_forward_s=round(eager_s, 6),
        trace_s=round(trace_s, 6),
        ratio=round(trace_s / eager_s, 3),
        eager_forward_cpu_s=round(eager_cpu, 4),
        trace_cpu_s=round(trace_cpu, 4),
        cpu_ratio=round(trace_cpu / eager_cpu, 3),
    )


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_child(name: str) -> dict:
    """In this (fresh) process: load, trace 512 tokens, draw the Attention page's figures; peak RSS."""
    import plotly.io as pio

    from viz.content.attention import overview_figure, scaling_figures, stages_of_head
    from viz.plain import plotly_dict

    model = load(name)
    text = text_of_tokens(model, N_TOKENS)
    loaded, loaded_peak = _rss_mb("VmRSS"), _rss_mb("VmHWM")
    trace = model.trace([text])
    traced, traced_peak = _rss_mb("VmRSS"), _rss_mb("VmHWM")
    stages = trace.stages(0)
    figures = {"stages": stages_of_head(trace, 0, 0, 0, stages), "overview": overview_figure(trace, 0)}
    figures.update(scaling_figures(trace, 0, 0, 0))
    sizes = {key: len(pio.to_json(plotly_dict(figure), validate=False)) for key, figure in figures.items()}  # as plotly.js takes it
    return dict(
        model=name,
        tokens=int(trace.input_ids.shape[1]),
        rss_after_load_mb=round(loaded, 1),
        peak_during_load_mb=round(loaded_peak, 1),
        rss_after_trace_mb=round(traced, 1),
        peak_during_trace_mb=round(traced_peak, 1),
        peak_rss_mb=round(_rss_mb("VmHWM"), 1),
        figures_json_bytes=sum(sizes.values()),
    )


def peak_memory(name: str) -> dict:
    command = [sys.executable, "-m", "bench.engine", "--memory-child", name]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return dict(model=name, error=done.stderr.strip().splitlines()[-1:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile(model) -> str:
    from torch.profiler import ProfilerActivity, profile as torch_profile

    text = text_of_tokens(model, N_TOKENS)
    model.trace([text])
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        model.trace([text])
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)


def run(models: list[str], repeats: int, memory: bool, show_profile: bool) -> dict:
    results = dict(forward_vs_trace=[], peak_memory=[])
    for name in models:
        model = load(name)
        if model is None:
            print(f"[bench.engine] {name}: its package is not installed; skipped", file=sys.stderr)
            continue
        print(f"[bench.engine] {name}: {N_TOKENS} tokens, eager forward vs trace ({repeats} runs each)", file=sys.stderr)
        results["forward_vs_trace"].append(forward_vs_trace(model, repeats))
        if show_profile:
            print(profile(model), file=sys.stderr)
    if memory and load("smollm2") is not None:
        print("[bench.engine] smollm2: peak memory of a trace with the Attention page drawn (fresh process)", file=sys.stderr)
        results["peak_memory"].append(peak_memory("smollm2"))
    return results


def format_report(results: dict) -> str:
    lines = [f"Trace through attention_stages vs the bare eager forward, {N_TOKENS} tokens (median; wall | CPU):"]
    lines.append(f"  {'model':<10}{'layers×heads':>13}{'eager forward':>22}{'trace':>22}{'ratio':>16}")
    for row in results["forward_vs_trace"]:
        shape = f"{row['layers']}×{row['heads']}"
        lines.append(
            f"  {row['model']:<10}{shape:>13}"
            f"{row['eager_forward_s'] * 1000:>10.0f} | {row['eager_forward_cpu_s'] * 1000:>5.0f} ms"
            f"{row['trace_s'] * 1000:>10.0f} | {row['trace_cpu_s'] * 1000:>5.0f} ms"
            f"{row['ratio']:>8.2f} | {row['cpu_ratio']:.2f}×"
            f"  {'meets' if row['ratio'] <= TARGET_RATIO else 'misses'} the target ≤{TARGET_RATIO}× (wall)"
        )
    for row in results["peak_memory"]:
        if "error" in row:
            lines.append(f"Peak memory ({row['model']}): failed: {row['error']}")
            continue
        lines.append(
            f"Peak memory, {row['model']} trace of {row['tokens']} tokens + Attention page figures: "
            f"{row['peak_rss_mb']:.0f} MB (load: peak {row['peak_during_load_mb']:.0f}, then {row['rss_after_load_mb']:.0f} MB; "
            f"trace: peak {row['peak_during_trace_mb']:.0f}, then {row['rss_after_trace_mb']:.0f} MB; "
            f"figures {row['figures_json_bytes'] / 1e6:.1f} MB of JSON)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="minilm,smollm2", help="built-in models, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory run")
    parser.add_argument("--profile", action="store_true", help="print where the trace's time goes")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child)))
        return 0
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    results = run(models, max(1, args.repeats), not args.no_memory, args.profile)
    print(format_report(results))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
