"""PNG and SVG of a figure, rendered by kaleido in a headless Chromium.

Starting the browser takes about two seconds, so the first export starts
kaleido's persistent server (``kaleido.start_sync_server``) and later exports
reuse it (about 0.2 s each). Calls are serialised by a lock, because that
server answers requests in order and is not safe for concurrent callers; for
the same reason use these helpers rather than ``fig.to_image`` in the app. If
the server fails or stops answering, a one-off browser renders the image
instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import threading
import time

import plotly.graph_objects as go

DEFAULT_WIDTH = 1280
DEFAULT_HEIGHT = 720
RENDER_TIMEOUT = 60.0  # a one-off browser's render, and the persistent server's first (it starts its Chromium)
SERVER_TIMEOUT = 20.0  # the persistent server's render once it has answered (about 0.2 s; a thread it lost hangs)

NO_CHROMIUM_MESSAGE = "PNG/SVG need Chromium: apt-get install chromium; HTML and the chart's camera button still work"

_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# --- which browser kaleido would use -----------------------------------------


def _executable(path: str | None) -> str | None:
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def _find_browser() -> str | None:
    """The Chromium kaleido would start, or None (honours ``BROWSER_PATH``).

    ``BROWSER_PATH`` and the usual names on ``PATH`` first: importing choreographer to ask it costs
    ~0.2 s before a page's first chart, and is done only when neither finds a browser (it also knows
    its own downloaded Chrome and the usual install paths)."""
    found = _executable(os.environ.get("BROWSER_PATH")) or next((path for path in map(shutil.which, _BROWSER_NAMES) if _executable(path)), None)
    if found:
        return found
    try:
        from choreographer.browsers import Chromium

        return _executable(Chromium.find_browser(skip_local=False))
    except Exception:
        return None


def static_export_available() -> tuple[bool, str]:
    """Whether PNG/SVG export can work here, and a message for the user.

    Kaleido 1.x no longer ships a browser: it drives an installed Chromium
    (found on ``PATH``, at the usual install paths or via ``BROWSER_PATH``).
    """
    if importlib.util.find_spec("kaleido") is None:  # not imported here: kaleido loads when a figure is exported
        return False, "PNG/SVG need the kaleido package; HTML and the chart's camera button still work"
    browser = _find_browser()
    if browser is None:
        return False, NO_CHROMIUM_MESSAGE
    return True, f"PNG/SVG export uses Chromium at {browser}"


# --- kaleido rendering -------------------------------------------------------

_render_lock = threading.Lock()
_server = {"usable": True, "answered": False}


def _in_thread(function, timeout: float) -> tuple[str, object]:
    """Run ``function`` in a daemon thread, waiting at most ``timeout`` seconds.

    Returns ``("ok", value)``, ``("error", exception)`` or ``("timeout", None)``.
    A daemon thread never blocks the interpreter from exiting, even if it hangs.
    """
    result: dict = {}

    def run() -> None:
        try:
            result["ok"] = function()
        except BaseException as error:
            result["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    deadline = time.monotonic() + timeout
    while worker.is_alive() and time.monotonic() < deadline:
        worker.join(0.1)
    if "ok" in result:
        return "ok", result["ok"]
    if "error" in result:
        return "error", result["error"]
    return "timeout", None


def _on_server(fig_dict: dict, opts: dict) -> tuple[str, object]:
    """``_in_thread`` of a render on the persistent server. ``kaleido.calc_fig_sync`` waits forever on a
    server whose thread has died (e.g. its Chromium failed), so a server that has answered before is given
    ``SERVER_TIMEOUT``; a hung server is not used again in this process and is stopped."""
    status, value = _in_thread(lambda: _server_render(fig_dict, opts), SERVER_TIMEOUT if _server["answered"] else RENDER_TIMEOUT)
    if status == "ok":
        _server["answered"] = True
    elif status == "timeout":
        _server["usable"] = False
        _stop_server()
    return status, value


def _server_render(fig_dict: dict, opts: dict) -> bytes:
    """Render on kaleido's persistent server, starting it on first use."""
    import kaleido

    kaleido.start_sync_server(mathjax=False, silence_warnings=True)
    return kaleido.calc_fig_sync(fig_dict, opts=opts)


def _oneshot_render(fig_dict: dict, opts: dict) -> bytes:
    """Render with a browser of its own: slow, but independent of the server."""
    import kaleido

    return asyncio.run(kaleido.calc_fig(fig_dict, opts=opts, kopts={"mathjax": False}))


def _stop_server() -> None:
    import kaleido

    status, _ = _in_thread(lambda: kaleido.stop_sync_server(silence_warnings=True), 15)
    _server["answered"] = False  # a server started again starts its Chromium: its first render gets RENDER_TIMEOUT
    if status != "ok":
        _server["usable"] = False


def _render_bytes(fig_dict: dict, opts: dict) -> bytes:
    """Render with the persistent server, falling back to a one-off browser.

    * the server answers: done (about 0.2 s);
    * the server hangs (its thread died, or it does not answer): it is not
      used again in this process, the one-off browser renders instead;
    * the server raises: the one-off browser tries too. If it succeeds, the
      server was at fault and is restarted on the next call; if it fails as
      well, the figure is at fault and its error is raised.
    """
    with _render_lock:
        if _server["usable"]:
            status, value = _on_server(fig_dict, opts)
            if status == "ok":
                return value
        status, value = _in_thread(lambda: _oneshot_render(fig_dict, opts), RENDER_TIMEOUT)
        if status == "ok":
            if _server["usable"]:
                _stop_server()
            return value
        if status == "timeout":
            raise TimeoutError(f"static export took longer than {RENDER_TIMEOUT:.0f} s")
        raise RuntimeError(f"static export failed: {value}") from value


# the smallest figure that makes kaleido start its Chromium and load plotly.js in its tab
_WARM_FIGURE = {"data": [{"type": "heatmap", "z": [[0, 1]]}], "layout": {}}


def warm_up() -> bool:
    """Start kaleido's server now and render a tiny figure on it, so the first export a user asks for
    does not wait ~3 s for kaleido's Chromium. True if the server answered; never raises. Costs an
    idle Chromium (its RSS is in the README's speed section) for the life of the process."""
    ok, _ = static_export_available()
    if not ok:
        return False
    with _render_lock:
        if not _server["usable"]:
            return False
        status, _ = _on_server(_WARM_FIGURE, dict(format="png", width=20, height=20, scale=1.0))  # hung: one-off browsers from now on
        return status == "ok"


def export_size(layout) -> tuple[int, int]:
    """(width, height) in layout pixels of a figure's PNG and SVG: its layout's own size, else 1280 × 720.
    The app's chart component renders its PNG and SVG in the browser at this size too (ui.chart)."""
    get = layout.get if isinstance(layout, dict) else lambda name: getattr(layout, name, None)
    return int(get("width") or DEFAULT_WIDTH), int(get("height") or DEFAULT_HEIGHT)


def _render(fig: dict, fmt: str, *, scale: float, width: int | None, height: int | None) -> bytes:
    ok, message = static_export_available()
    if not ok:
        raise RuntimeError(message)
    fig_dict = go.Figure(fig).to_plotly_json()  # validated once (a dict or a go.Figure), a copy kaleido may keep
    own_width, own_height = export_size(fig_dict.get("layout", {}))
    opts = dict(format=fmt, width=int(width or own_width), height=int(height or own_height), scale=float(scale))
    return _render_bytes(fig_dict, opts)


def figure_to_png(fig: dict, *, scale: float = 2.0, width: int | None = None, height: int | None = None) -> bytes:
    """PNG bytes of ``fig`` (a figure dict, or a ``go.Figure``): ``width × height`` layout pixels times ``scale``.

    Width and height default to the figure's layout size, else 1280 × 720 (``export_size``).
    ``scale=2`` gives crisp images for slides. Raises ``RuntimeError`` with a
    readable message when no Chromium is installed.
    """
    return _render(fig, "png", scale=scale, width=width, height=height)


def figure_to_svg(fig: dict, *, width: int | None = None, height: int | None = None) -> bytes:
    """SVG bytes of ``fig`` (vector: sharp at any size, editable in Inkscape)."""
    return _render(fig, "svg", scale=1.0, width=width, height=height)
