"""What Streamlit's frontend costs per rerun, before any page of the app: the floor under a toggle's time.

    python -m bench.floor [--throttle 4] [--count 20] [--toggles 6]

Serves bench/floor_app.py (a sidebar toggle, then `--count` elements of one kind) and flips the toggle
`--toggles` times per kind in Debian's chromium, its CPU slowed `--throttle` times (CDP), waiting each time
for the page to settle (bench.browser: no running script and no long task for 1.5 s). Prints, per kind,
the browser main thread's time per rerun (CDP `Performance.getMetrics`) and the time to settled, and what
one more element of that kind adds: (time with `--count` elements − time with none) / `--count`. A page of
the app re-renders all its elements on every toggle (the Attention page 60 at 16 tokens); this is what
that costs in Streamlit's own frontend, without the app's charts. Two kinds compare ways to list the
pages: "page_link", the app's way (a link element per page in the sidebar), and "navigation", the same
number of pages in Streamlit's own navigation (`st.navigation`), whose menu is not an element of the run.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from bench.browser import Server, _input_time, _wait_settled, browser_busy, monitored_page

KINDS = ("markdown", "toggle", "pills", "select_slider", "multiselect", "selectbox", "page_link", "navigation")  # as bench/floor_app.py draws them


def flips(page, url: str, toggles: int) -> tuple[float, float, int]:
    """(median main-thread seconds per rerun, median seconds to settled, the page's element count)."""
    page.goto(url)
    page.get_by_text("off", exact=True).wait_for(timeout=60_000)
    _wait_settled(page, 0, timeout_s=60, expect_change=False)
    busy, settled = [], []
    for _ in range(toggles):
        before = browser_busy(page)[0]
        page.locator("[data-testid=stCheckbox]").filter(has_text="Flip").locator("label").first.click()
        t0 = _input_time(page)
        settled.append(_wait_settled(page, t0, expect_change=False)[1])
        busy.append(browser_busy(page)[0] - before)
    return statistics.median(busy), statistics.median(settled), page.locator("[data-testid=stElementContainer]").count()


def measure(throttle: float, count: int, toggles: int, kinds: tuple[str, ...] = KINDS) -> dict:
    """{"none": (busy, settled, elements) of the page with the toggle alone, measured first and last; kind: (…) with `count` of it}."""
    server = Server(script="bench/floor_app.py")
    out: dict = {}
    try:
        with monitored_page(throttle) as page:
            out["none"] = flips(page, f"{server.url}/?k=0", toggles)
            for kind in kinds:
                out[kind] = flips(page, f"{server.url}/?kind={kind}&k={count}", toggles)
            out["none, again"] = flips(page, f"{server.url}/?k=0", toggles)
    finally:
        server.stop()
    return out


def report(results: dict, throttle: float, count: int) -> str:
    base = statistics.mean(results[name][0] for name in ("none", "none, again"))
    lines = [f"Streamlit's frontend per rerun, browser CPU ×{throttle:g} (medians): main thread, time to settled"]
    for name, (busy, settled, elements) in results.items():
        line = f"  {name:<14} {elements:3d} elements  {busy:.3f} s  settled {settled:.2f} s"
        if not name.startswith("none"):
            line += f"   one more element: {1000 * (busy - base) / count:+.1f} ms"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--throttle", type=float, default=4.0)
    parser.add_argument("--count", type=int, default=20, help="elements of each kind")
    parser.add_argument("--toggles", type=int, default=6, help="flips measured per kind")
    args = parser.parse_args(argv)
    print(report(measure(args.throttle, args.count, args.toggles), args.throttle, args.count))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
