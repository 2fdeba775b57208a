"""`python -m bench.miss [--sizes 16,128,512] [--repeats 3] [--pages attention,tokens]`: a cache miss per page.

A view nobody has seen yet (a new sentence, a new toggle) builds its page's figures from scratch and
turns each into the JSON the browser receives. This prints, per page and input size on the toy model,
the CPU seconds of that work in this process (median of `--repeats` runs, each on a model run of its own
temperature, so that nothing is reused) against issue 19's target of 0.05 s of server CPU, beside the
wall-clock time and the load average (on a loaded machine the wall clock grows, the CPU time much less).
The model's forward pass is timed apart: it is not the page's work. torch runs on as many threads as in
the app (`ui.view.torch_threads`: 1 unless ATTENTION_VIZ_TORCH_THREADS says): with two, the idle thread's
spinning doubled the CPU of a miss at 16 tokens.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

import bench  # noqa: F401  (sets the offline / quiet environment first)

TARGET_S = 0.05
PAGES = ("attention", "tokens", "positional", "embeddings", "next-token", "heads")
TEMPERATURES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 1.5)  # one per run: every run is a new view


def page_builders(model) -> dict:
    """Each page's content, called as the page calls it (settings, trace) -> PageContent."""
    from viz.content import embeddings_page, next_token_page, positional_page, tokens_page
    from viz.content.attention import attention_figures, attention_selection
    from viz.content.heads import heads_page
    from viz.content.tokens import comparison_tokenizers

    tokenizers = comparison_tokenizers(model)  # the app keeps them for the process
    return {
        "attention": lambda s, t: attention_figures(s, t, model=model).merge(attention_selection(s, t)),
        "tokens": lambda s, t: tokens_page(s, t, model, tokenizers),
        "positional": lambda s, t: positional_page(s, t, model),
        "embeddings": lambda s, t: embeddings_page(s, t, model.name, model.tokenizer),
        "next-token": lambda s, t: next_token_page(s, t, model),
        "heads": lambda s, t: heads_page(s, t, model),
    }


def miss_times(model, text: str, pages: tuple[str, ...], repeats: int) -> dict[str, dict]:
    """{page: {figures_s, json_s, total_s (CPU), wall_s, n_figures}}: medians over `repeats` new views."""
    from viz.payload import browser_json
    from viz.content.settings import Settings, run_model

    builders = page_builders(model)
    base = Settings(text=text)
    warm = run_model(model, base.sentences, base.display)
    for page in pages:
        builders[page](base, warm)  # the first call of a process imports and fills plotly's caches
    out = {}
    for page in pages:
        rows = []
        for temperature in TEMPERATURES[:repeats]:
            settings = replace(base, temperature=temperature)
            trace = run_model(model, settings.sentences, settings.display)
            w0, t0 = time.perf_counter(), time.process_time()
            content = builders[page](settings, trace)
            t1 = time.process_time()
            for figure in content.figures.values():
                browser_json(figure)  # what ui.figures.sent_to_browser makes once per figure
            t2, w2 = time.process_time(), time.perf_counter()
            rows.append((t1 - t0, t2 - t1, w2 - w0, len(content.figures)))
        out[page] = dict(
            figures_s=statistics.median(r[0] for r in rows),
            json_s=statistics.median(r[1] for r in rows),
            total_s=statistics.median(r[0] + r[1] for r in rows),
            wall_s=statistics.median(r[2] for r in rows),
            n_figures=rows[-1][3],
        )
    return out


def forward_s(model, text: str, repeats: int = 5) -> float:
    from viz.content.settings import Settings, run_model

    settings = Settings(text=text)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_model(model, settings.sentences, settings.display)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.miss", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,128,512", help="token counts (default 16,128,512)")
    parser.add_argument("--repeats", type=int, default=3, help=f"new views per page and size (median; at most {len(TEMPERATURES)})")
    parser.add_argument("--pages", default=",".join(PAGES), help=f"comma-separated, from {', '.join(PAGES)}")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    pages = tuple(p.strip() for p in args.pages.split(",") if p.strip())
    if bad := [p for p in pages if p not in PAGES]:
        parser.error(f"unknown page(s) {bad}; choose from {', '.join(PAGES)}")
    repeats = max(1, min(args.repeats, len(TEMPERATURES)))

    import torch

    from bench.browser import texts_of_tokens
    from model import load_model
    from ui.view import torch_threads

    torch.set_num_threads(torch_threads())  # as the app's process does
    model = load_model("toy")
    texts = texts_of_tokens("toy", sizes)
    print(
        f"cache miss per page, toy model: CPU seconds, median of {repeats} new views; target {TARGET_S} s (issue 19); torch threads {torch.get_num_threads()}"
    )
    print(f"{'tokens':>6}  {'page':<11} {'figures':>8} {'to_json':>8} {'CPU':>8} {'wall':>8}  {'n':>3}  verdict   load")
    for size in sizes:
        forward = forward_s(model, texts[size])
        for page, row in miss_times(model, texts[size], pages, repeats).items():
            verdict = "met" if row["total_s"] <= TARGET_S else "NOT met"
            load = os.getloadavg()[0]
            times = f"{row['figures_s']:>7.3f}s {row['json_s']:>7.3f}s {row['total_s']:>7.3f}s {row['wall_s']:>7.3f}s"
            print(f"{size:>6}  {page:<11} {times}  {row['n_figures']:>3}  {verdict:<8} {load:.1f}")
        print(f"{size:>6}  {'(forward)':<11} {forward:>7.4f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
