"""Import what a page's first run needs while the first visitor's browser is still loading the frontend,
and start the PNG exporter's browser once that visitor's page is drawn.

`streamlit run` runs nothing before the first session, so the first visitor paid every import of the
first run (torch ~1.1-1.8 s, numpy, pandas, the model and figure code: ~2.5 s of the first run's script
thread, py-spy) and the first PNG export paid kaleido's Chromium start (~3 s). `python -m deploy.run`
(deploy/run.py) calls `start()`: a daemon thread waits for Streamlit's server to be up, imports MODULES
and warms plotly's subplot machinery, then, once a first browser session has connected and had time
to draw its page (EXPORT_DELAY_S), starts kaleido's server (viz.export.image.warm_up).

`ui/__init__.py` calls `wait()` before it imports anything heavy, so the script thread never imports a
module at the same time as this thread (no partly initialised module, no import-lock cycle); if the
preload failed or takes longer than WAIT_S, the script thread imports what is missing itself. Plain
`streamlit run app.py` (Hugging Face Spaces) starts no preload: `wait()` returns at once.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time

log = logging.getLogger("attention_viz")

# What the Attention page's first run imports besides Streamlit (torch comes with `model`).
MODULES = ("torch", "numpy", "pandas", "plotly.graph_objects", "plotly.subplots", "model", "viz", "viz.content", "viz.plain", "viz.export")
WAIT_S = 60.0  # a preload that hangs never blocks the app for longer
SERVER_WAIT_S = 15.0
EXPORT_DELAY_S = 6.0  # after the first session connects: its page is drawn before kaleido's Chromium starts

_done = threading.Event()
_state: dict = {"started": False, "error": None, "seconds": None, "modules": (), "exports_warm": None}


def _runtime_state() -> str | None:
    from streamlit.runtime import Runtime

    return Runtime.instance().state.name if Runtime.exists() else None


def _wait_for(states: tuple[str, ...], timeout: float | None) -> bool:
    deadline = None if timeout is None else time.monotonic() + timeout
    while deadline is None or time.monotonic() < deadline:
        if _runtime_state() in states:
            return True
        time.sleep(0.05)
    return False


def _warm_plotly() -> None:
    # the first figure of a process loads plotly's layout validators and default template (the first
    # page's script thread spent ~0.2 s plain to 0.6 s under py-spy there, when figures were made with
    # make_subplots; viz.plain now lays out grids itself)
    from viz import plain

    layout, _ = plain.subplots(1, 2, titles=["", ""])
    plain.figure([], layout)


def _preload(modules: tuple[str, ...], after_server: bool, exports: bool) -> None:
    # Importing torch holds the GIL for long stretches (loading its shared libraries): begun beside the
    # server's own start it delayed the server's first answer by 2-3 s (measured), so it waits for it.
    if after_server:
        _wait_for(("NO_SESSIONS_CONNECTED", "ONE_OR_MORE_SESSIONS_CONNECTED"), SERVER_WAIT_S)
    t = time.perf_counter()
    try:
        for name in modules:
            importlib.import_module(name)
        _warm_plotly()
        _state["modules"] = modules
    except BaseException as error:  # never fatal: the first run imports what is missing itself
        _state["error"] = f"{error.__class__.__name__}: {error}"
        log.warning("preload failed (%s); the first page view imports it instead", _state["error"])
    finally:
        _state["seconds"] = time.perf_counter() - t
        _done.set()
    if exports and _state["error"] is None:
        _wait_for(("ONE_OR_MORE_SESSIONS_CONNECTED",), None)
        time.sleep(EXPORT_DELAY_S)
        try:
            from viz.export.image import warm_up

            _state["exports_warm"] = warm_up()
        except Exception as error:
            _state["exports_warm"] = False
            log.warning("could not start the PNG exporter early (%s); the first export starts it", error)


def start(modules: tuple[str, ...] = MODULES, after_server: bool = True, exports: bool = True) -> threading.Thread | None:
    """The preload in a daemon thread, once per process: `modules` imported once Streamlit's server has
    started (`after_server`, at most SERVER_WAIT_S later), then kaleido warmed after a first visit (`exports`)."""
    if _state["started"]:
        return None
    _state["started"] = True
    thread = threading.Thread(target=_preload, args=(modules, after_server, exports), name="attention-viz-preload", daemon=True)
    thread.start()
    return thread


def wait(timeout: float = WAIT_S) -> dict:
    """Block until the imports are done (at once when no preload was started); what the preload did."""
    if _state["started"]:
        _done.wait(timeout)
    return dict(_state, done=_done.is_set())
