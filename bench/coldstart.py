"""A cold start of the app until the Attention page has drawn its first chart in chromium.

The server is started as `make run` starts it: `python -m streamlit run app.py` (app.py's st.App imports the
page layer when the server starts); `script="home.py"` runs the home page itself, without that import at
start (the A/B of docs/performance.md).

The browser is launched first (a visitor's browser is already open), then the clock starts with the
server process. Every wait is bounded; the server is stopped at the end whatever happens.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deploy.serve import free_port, healthy, streamlit_command

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHART = ".js-plotly-plot"

# When the title and the first chart are first on screen, on the page's clock (epoch milliseconds), checked
# on every animation frame. Playwright's own wait polls ever more slowly (20, 50, 100, 100, then every
# 500 ms): it saw the chart up to half a second after it was drawn (0.5-0.8 s late, measured).
# Its wait still bounds the run; the figures come from these marks.
SEEN_JS = (
    """
(() => {
  const M = window.__seen = {};
  const shown = (selector) => {
    const element = document.querySelector(selector);
    if (!element) return false;
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  };
  const frame = () => {
    const now = performance.timeOrigin + performance.now();
    if (!M.title && shown('h1')) M.title = now;
    if (!M.chart && shown('%s')) M.chart = now;
    if (!M.title || !M.chart) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})();
"""
    % CHART
)


def _stop(process: subprocess.Popen) -> None:
    """Stop the server this module started (its own process group), politely first."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def import_time(timeout_s: float = 60) -> float | None:
    """Seconds a fresh interpreter takes to import what app.py's first run imports."""
    code = "import time; t = time.perf_counter(); import streamlit, ui, model, viz.content; print(time.perf_counter() - t)"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
        return float(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def cold_start(timeout_s: float = 90, path: str = "/Attention", script: str = "app.py") -> dict:
    """Seconds from starting the server until `path` shows its title and its first chart."""
    chromium = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not chromium:
        return dict(error="chromium not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return dict(error="playwright not installed")

    result: dict = dict(path=path, script=script)
    log = tempfile.NamedTemporaryFile(prefix="bench-streamlit-", suffix=".log", delete=False)
    with sync_playwright() as p:
        t = time.perf_counter()
        browser = p.chromium.launch(executable_path=chromium, args=BROWSER_ARGS, timeout=30_000)
        result["browser_launch_s"] = time.perf_counter() - t
        process = None
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.add_init_script(SEEN_JS)
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            env = dict(os.environ, HF_HUB_OFFLINE="1")
            command = streamlit_command(port, script=script)
            start, start_epoch = time.perf_counter(), time.time()
            deadline = start + timeout_s
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            while not healthy(url):
                if process.poll() is not None:
                    raise RuntimeError(f"streamlit exited with {process.returncode}")
                if time.perf_counter() > deadline:
                    raise TimeoutError("the server did not answer its health check")
                time.sleep(0.05)
            result["server_ready_s"] = time.perf_counter() - start
            remaining = lambda: max(1.0, deadline - time.perf_counter()) * 1000  # noqa: E731  (ms)
            page.goto(url + path, wait_until="commit", timeout=remaining())
            page.wait_for_selector("h1", timeout=remaining())
            page.wait_for_selector(CHART, timeout=remaining())
            result["first_chart_polled_s"] = time.perf_counter() - start  # as Playwright's wait saw it
            seen = page.evaluate("window.__seen")
            result["title_s"], result["first_chart_s"] = (seen[name] / 1000 - start_epoch for name in ("title", "chart"))
            # The same page again on the warm server: what is left once imports and the model are cached.
            t = time.time()
            page.goto(url + path, wait_until="commit", timeout=remaining())
            page.wait_for_selector(CHART, timeout=remaining())
            result["warm_reload_s"] = page.evaluate("window.__seen")["chart"] / 1000 - t
        except Exception as error:  # a bounded wait ran out, the server died, …
            result["error"] = f"{error.__class__.__name__}: {str(error).splitlines()[0][:200]}"
        finally:
            browser.close()
            if process is not None:
                _stop(process)
    log.close()
    if "error" in result:
        tail = Path(log.name).read_text(errors="replace")[-600:]
        result["server_log_tail"] = tail
    Path(log.name).unlink(missing_ok=True)
    return result
