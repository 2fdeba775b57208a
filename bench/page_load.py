"""What a page load costs chromium: its main thread's busy time from the address typed to a quiet page, for
this checkout and, with `--against`, another one (a git worktree of an older commit), alternated.

    python -m bench.page_load [--against DIR] [--rounds 6] [--throttle 1] [--page Attention]

Each load opens a fresh browser context (nothing cached but what the server caches), goes to the page of the
toy model with one sentence of 16 tokens, and waits until Streamlit's script has run to its end and nothing in
the page has changed for a second. The busy time is CDP's `Performance.getMetrics` TaskDuration. Both
servers are warmed by one load first; the order of the two alternates from round to round, so that the
machine's load falls on both. Prints each load and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from bench.coldstart import BROWSER_ARGS, CHROMIUM, ROOT, _stop
from deploy.serve import free_port, healthy, streamlit_command

TEXT = "the cat sat on the mat and the dog ran to the river bank ."
# The page is settled when the script has run to its end, no status widget shows, and nothing in the page
# has changed for `ms` milliseconds (a rerun that is about to start changes the run state first). The
# browser tests wait on the same condition (tests/conftest.py, settle).
QUIET_JS = """(ms) => {
  if (!window.__avQuiet) {
    window.__avQuiet = { last: performance.now() };
    new MutationObserver(() => { window.__avQuiet.last = performance.now(); })
      .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    return false;
  }
  const app = document.querySelector("[data-testid=stApp]");
  return app?.getAttribute("data-test-script-state") === "notRunning" && !document.querySelector("[data-testid=stStatusWidget]")
    && performance.now() - window.__avQuiet.last > ms;
}"""


def start(folder: Path) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` in `folder` on a free port: (its process, its address)."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(streamlit_command(port), cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while not healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise RuntimeError(f"streamlit did not start in {folder}")
        time.sleep(0.2)
    return process, url


def load(browser, url: str, throttle: float) -> tuple[float, float]:
    """One load of `url` in a fresh context: (main-thread busy seconds, seconds until the page was quiet)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        session = context.new_cdp_session(page)
        session.send("Performance.enable")
        if throttle != 1:
            session.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        started = time.perf_counter()
        page.goto(url)
        page.wait_for_function(QUIET_JS, arg=1000, timeout=180_000, polling=100)
        quiet = time.perf_counter() - started - 1.0
        metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
        return metrics["TaskDuration"], quiet
    finally:
        context.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another checkout of the app (a git worktree), loaded in alternation")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--throttle", type=float, default=1.0, help="CDP CPU throttling rate (4: a low-end laptop)")
    parser.add_argument("--page", default="Attention")
    args = parser.parse_args(argv)
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    folders = {"this checkout": ROOT}
    if args.against:
        folders[f"against {args.against}"] = args.against.resolve()
    servers = {label: start(folder) for label, folder in folders.items()}
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in servers}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            urls = {label: f"{url}/{args.page}?text={quote(TEXT)}" for label, (_, url) in servers.items()}
            for url in urls.values():
                load(browser, url, 1.0)  # the server's caches warmed
            order = list(urls)
            for r in range(args.rounds):
                for label in order if r % 2 == 0 else order[::-1]:
                    busy, quiet = load(browser, urls[label], args.throttle)
                    runs[label].append((busy, quiet))
                    print(f"  round {r + 1}, {label}: main thread {busy:.2f} s, quiet after {quiet:.2f} s", flush=True)
            browser.close()
    finally:
        for process, _ in servers.values():
            _stop(process)
    print(f"\n{args.page}, 16 tokens, browser CPU ×{args.throttle:g}, {args.rounds} rounds (medians):")
    for label, values in runs.items():
        busy, quiet = (statistics.median(v[i] for v in values) for i in (0, 1))
        print(f"  {label:<40} main thread {busy:.2f} s, quiet after {quiet:.2f} s")


if __name__ == "__main__":
    main()
