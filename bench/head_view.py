"""`python -m bench.head_view`: how fast and how big the head view is, 12 heads at 128 and 512 tokens.

Server side: building the view's data from a trace, the JSON sent to the browser, the export figure.
Browser side (Debian's chromium, the standalone page, so no server in the measurement): the first
drawing, every line at once, and a hover preview of one row (median over many tokens).
Targets: a hover under 16 ms (one frame) at 128 tokens × 12 heads; at 512 tokens, a focus window.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from model import load_model
from viz.head_view import component_data, head_view_data, head_view_figure, head_view_html

ASSETS = Path(__file__).resolve().parents[1] / "ui" / "components" / "head_view"
CHROMIUM = "/usr/bin/chromium"
HEADS = list(range(12))


def sentence(n_tokens: int) -> str:
    words = "the cat sat on the mat because it was tired and the dog ran to the river bank".split()
    return " ".join(words[i % len(words)] for i in range(n_tokens))


def timed(function, repeats: int = 5):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def browser_times(browser, page_path: Path) -> dict:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto("about:blank")
    start = time.perf_counter()
    page.goto(page_path.as_uri())
    page.wait_for_selector(".hv-q .hv-tok")
    first = time.perf_counter() - start
    times = page.evaluate(
        """() => {
          const root = document.querySelector('.hv');
          const q = [...root.querySelectorAll('.hv-q .hv-tok')];
          const out = {hover: [], all: []};
          for (const b of q.slice(0, 60)) {
            const t0 = performance.now();
            b.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
            out.hover.push(performance.now() - t0);
            const t1 = performance.now();
            root.querySelector('.hv-body').dispatchEvent(new MouseEvent('mouseleave'));
            out.all.push(performance.now() - t1);
          }
          return out;
        }"""
    )
    page.close()
    return dict(first=first, hover=statistics.median(times["hover"]), all=statistics.median(times["all"]))


def main() -> None:
    js = (ASSETS / "head_view.js").read_text(encoding="utf-8")
    css = (ASSETS / "head_view.css").read_text(encoding="utf-8")
    model = load_model("toy-random", n_heads=12, d_model=96)
    print(
        f"{'tokens':>6} {'data ms':>8} {'JSON KB':>8} {'lines':>7} {'not drawn':>9} {'figure ms':>9} {'page load s':>11} {'all lines ms':>12} {'hover ms':>8}"
    )
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
    for n in (128, 512):
        trace = model.trace([sentence(n)], mask="none")
        assert trace.input_ids.shape[1] == n, trace.input_ids.shape
        stages = trace.stages(0)
        data_time, view = timed(lambda trace=trace, stages=stages: head_view_data(trace, 0, 0, HEADS, stages=stages))
        payload = json.dumps(component_data(view, pinned=n // 2))
        drawn = sum(len(line["q"]) for line in component_data(view)["lines"])
        hidden, _ = view.hidden_lines()
        figure_time, _ = timed(lambda view=view, n=n: head_view_figure(view, pinned=n // 2), repeats=3)
        with tempfile.TemporaryDirectory() as folder:
            page = Path(folder) / "head_view.html"
            page.write_bytes(head_view_html(view, js, css))
            timing = browser_times(browser, page)
        print(
            f"{n:>6} {data_time * 1e3:>8.1f} {len(payload) / 1024:>8.0f} {drawn:>7,} {hidden:>9,} "
            f"{figure_time * 1e3:>9.1f} {timing['first']:>11.2f} {timing['all']:>12.1f} {timing['hover']:>8.2f}"
        )
    browser.close()
    playwright.stop()


if __name__ == "__main__":
    main()
