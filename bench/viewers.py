"""Viewers while a training runs: `python -m bench.viewers [--samples 5]`.

On a fresh `streamlit run app.py`, the first-chart time of a fresh browser context opening the Attention
page (toy model, a sentence of its own, so the server builds its trace and figures): `samples` times with
the server idle, then `samples` times while another tab trains a model on the Train page (started by
clicking Train, as a student does). The medians, and the ratio of the training one to the idle one
(issue 47: at most `MAX_RATIO`).

The training runs in its session's script thread (ui/training.py), one torch thread like every run, and
stops after ATTENTION_VIZ_TRAIN_CPU_S (120 s of one core by default, longer than the samples take).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.browser import CHART, ERRORS, VIEWPORT, Server, attention_url, load_average
from bench.coldstart import BROWSER_ARGS, CHROMIUM, SEEN_JS

MAX_RATIO = 1.5
NOUNS = ("cat", "dog", "bird", "horse", "cow", "sheep", "mouse", "king", "queen", "doctor", "farmer", "woman", "baker", "teacher", "child")


def first_chart_s(browser, url: str) -> float:
    """Seconds from asking for `url` in a fresh context until its first chart is on screen (page clock)."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        context.add_init_script(SEEN_JS)
        page = context.new_page()
        start = time.time()
        page.goto(url, wait_until="commit", timeout=300_000)
        page.wait_for_selector(CHART, timeout=300_000)
        page.wait_for_function("() => window.__seen && window.__seen.chart", timeout=300_000)
        if page.locator(ERRORS).count():
            raise RuntimeError(f"an error box on {url}")
        return page.evaluate("window.__seen.chart") / 1000 - start
    finally:
        context.close()


def start_training(browser, base: str):
    """A tab that starts a training on the Train page (the largest toy, the most steps); returns the page
    once the first step is reported."""
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.goto(f"{base}/Train", timeout=300_000)
    page.get_by_role("button", name="Train", exact=True).wait_for(timeout=300_000)
    page.get_by_label("Steps").fill("3000")
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("step ", exact=False).first.wait_for(timeout=300_000)
    return page


def training_done(page) -> bool:
    return page.get_by_text("Your model (", exact=False).count() > 0


def run(samples: int = 5, log=print) -> dict:
    """Idle and training first-chart times (seconds), their medians and the ratio."""
    from playwright.sync_api import sync_playwright

    server = Server()
    sentences = iter(f"the {noun} sat on the {place} ." for place in ("mat", "bank", "river", "hill") for noun in NOUNS)
    times: dict[str, list[float]] = {"idle": [], "training": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            try:
                first_chart_s(browser, attention_url(server.url, "toy", "a warm up ."))  # imports and the model load once per server
                for _ in range(samples):
                    times["idle"].append(first_chart_s(browser, attention_url(server.url, "toy", next(sentences))))
                trainer = start_training(browser, server.url)
                for _ in range(samples):
                    times["training"].append(first_chart_s(browser, attention_url(server.url, "toy", next(sentences))))
                ran_throughout = not training_done(trainer)  # the server stops it (its budget is 120 s of one core)
            finally:
                browser.close()
        exceptions = server.exceptions()
    finally:
        server.stop()
    idle, training = statistics.median(times["idle"]), statistics.median(times["training"])
    result = dict(
        samples=samples,
        times=times,
        idle_median_s=idle,
        training_median_s=training,
        ratio=training / idle,
        max_ratio=MAX_RATIO,
        training_ran_throughout=ran_throughout,
        load_average=load_average(),
        server_exceptions=exceptions[:10],
    )
    log(f"  idle {', '.join(f'{t:.2f}' for t in times['idle'])} s; training {', '.join(f'{t:.2f}' for t in times['training'])} s; ratio {result['ratio']:.2f}")
    return result


def format_report(result: dict) -> str:
    verdict = "meets" if result["ratio"] <= result["max_ratio"] else "MISSES"
    return "\n".join(
        [
            f"First chart of a fresh tab on the Attention page (toy), median of {result['samples']}:",
            f"  idle {result['idle_median_s']:.2f} s; while a training runs {result['training_median_s']:.2f} s; "
            f"ratio {result['ratio']:.2f} [{verdict} ≤ {result['max_ratio']}]",
            f"  the training ran throughout the samples: {result['training_ran_throughout']}; load average {result['load_average']}",
            f"  exceptions in the server's log: {len(result['server_exceptions'])}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.viewers", description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5, help="first charts per condition (default 5)")
    args = parser.parse_args(argv)
    log = lambda message: print(f"[bench.viewers] {message}", file=sys.stderr, flush=True)  # noqa: E731
    result = run(args.samples, log=log)
    print(format_report(result))
    return 0 if result["ratio"] <= result["max_ratio"] else 1


if __name__ == "__main__":
    sys.exit(main())
