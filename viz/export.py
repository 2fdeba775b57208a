"""Save figures as HTML, PNG, SVG, CSV, or all of them in one zip.

* **HTML** embeds plotly.js, so the file opens offline and stays interactive.
* **PNG/SVG** are rendered by kaleido in a headless Chromium. Starting the
  browser takes about two seconds, so the first export starts kaleido's
  persistent server (``kaleido.start_sync_server``) and later exports reuse it
  (about 0.2 s each). Calls are serialised by a lock, because that server
  answers requests in order and is not safe for concurrent callers; for the
  same reason use these helpers rather than ``fig.to_image`` in the app. If
  the server fails or stops answering, a one-off browser renders the image
  instead.
* **CSV** gives the numbers behind a chart, ready for a spreadsheet.

Nothing here imports streamlit; the app passes the bytes to its download
buttons.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import html
import io
import json
import os
import re
import shutil
import threading
import time
import unicodedata
import zipfile
from collections.abc import Iterable

import numpy as np
import plotly.graph_objects as go

from ._common import is_decoration, meta_labels

DEFAULT_WIDTH = 900
DEFAULT_HEIGHT = 600
RENDER_TIMEOUT = 60.0

NO_CHROMIUM_MESSAGE = (
    "PNG/SVG need Chromium: apt-get install chromium; "
    "HTML and the chart's camera button still work"
)

_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# --- which browser kaleido would use -----------------------------------------


def _find_browser() -> str | None:
    """The Chromium kaleido would start, or None (honours ``BROWSER_PATH``)."""
    try:
        from choreographer.browsers import Chromium

        found = Chromium.find_browser(skip_local=False)
    except Exception:
        found = os.environ.get("BROWSER_PATH") or next(
            (path for path in map(shutil.which, _BROWSER_NAMES) if path), None
        )
    if found and os.path.isfile(found) and os.access(found, os.X_OK):
        return found
    return None


def static_export_available() -> tuple[bool, str]:
    """Whether PNG/SVG export can work here, and a message for the user.

    Kaleido 1.x no longer ships a browser: it drives an installed Chromium
    (found on ``PATH``, at the usual install paths or via ``BROWSER_PATH``).
    """
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "PNG/SVG need the kaleido package; HTML and the chart's camera button still work"
    browser = _find_browser()
    if browser is None:
        return False, NO_CHROMIUM_MESSAGE
    return True, f"PNG/SVG export uses Chromium at {browser}"


# --- kaleido rendering -------------------------------------------------------

_render_lock = threading.Lock()
_server = {"usable": True}


def _in_thread(function, timeout: float, *, keep_waiting=lambda: True) -> tuple[str, object]:
    """Run ``function`` in a daemon thread, waiting at most ``timeout`` seconds.

    Returns ``("ok", value)``, ``("error", exception)`` or ``("timeout", None)``.
    Waiting stops early once ``keep_waiting()`` turns False. A daemon thread
    never blocks the interpreter from exiting, even if it hangs.
    """
    result: dict = {}

    def run() -> None:
        try:
            result["ok"] = function()
        except BaseException as error:  # noqa: BLE001 - handed back to the caller
            result["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    deadline = time.monotonic() + timeout
    while worker.is_alive() and time.monotonic() < deadline and keep_waiting():
        worker.join(0.1)
    if "ok" in result:
        return "ok", result["ok"]
    if "error" in result:
        return "error", result["error"]
    return "timeout", None


def _server_thread_alive() -> bool:
    """False once kaleido's server thread has died (e.g. Chromium failed to start).

    ``kaleido.calc_fig_sync`` would then wait forever, so this check lets the
    caller give up early. It reads a private attribute defensively: if a
    future kaleido renames it, the timeout still applies.
    """
    import kaleido

    thread = getattr(getattr(kaleido, "_global_server", None), "_thread", None)
    not_started_yet = thread is not None and thread.ident is None
    return thread is None or not_started_yet or thread.is_alive()


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
    if status != "ok":
        _server["usable"] = False


def _render_bytes(fig_dict: dict, opts: dict) -> bytes:
    """Render with the persistent server, falling back to a one-off browser.

    * the server answers: done (about 0.2 s);
    * the server hangs or its thread died: it is not used again in this
      process, the one-off browser renders instead;
    * the server raises: the one-off browser tries too. If it succeeds, the
      server was at fault and is restarted on the next call; if it fails as
      well, the figure is at fault and its error is raised.
    """
    with _render_lock:
        if _server["usable"]:
            status, value = _in_thread(
                lambda: _server_render(fig_dict, opts), RENDER_TIMEOUT, keep_waiting=_server_thread_alive
            )
            if status == "ok":
                return value
            if status == "timeout":
                _server["usable"] = False
                if not _server_thread_alive():
                    _stop_server()
        status, value = _in_thread(lambda: _oneshot_render(fig_dict, opts), RENDER_TIMEOUT)
        if status == "ok":
            if _server["usable"]:
                _stop_server()
            return value
        if status == "timeout":
            raise TimeoutError(f"static export took longer than {RENDER_TIMEOUT:.0f} s")
        raise RuntimeError(f"static export failed: {value}") from value


def _render(fig: go.Figure, fmt: str, *, scale: float, width: int | None, height: int | None) -> bytes:
    ok, message = static_export_available()
    if not ok:
        raise RuntimeError(message)
    fig_dict = go.Figure(fig).to_plotly_json()
    layout = fig_dict.get("layout", {})
    opts = dict(
        format=fmt,
        width=int(width or layout.get("width") or DEFAULT_WIDTH),
        height=int(height or layout.get("height") or DEFAULT_HEIGHT),
        scale=float(scale),
    )
    return _render_bytes(fig_dict, opts)


def figure_to_png(fig: go.Figure, *, scale: float = 2.0, width: int | None = None, height: int | None = None) -> bytes:
    """PNG bytes of ``fig``: ``width × height`` layout pixels times ``scale``.

    Width and height default to the figure's layout size, else 900 × 600.
    ``scale=2`` gives crisp images for slides. Raises ``RuntimeError`` with a
    readable message when no Chromium is installed.
    """
    return _render(fig, "png", scale=scale, width=width, height=height)


def figure_to_svg(fig: go.Figure, *, width: int | None = None, height: int | None = None) -> bytes:
    """SVG bytes of ``fig`` (vector: sharp at any size, editable in Inkscape)."""
    return _render(fig, "svg", scale=1.0, width=width, height=height)


# --- HTML --------------------------------------------------------------------


def plotly_config(filename: str, *, scale: float = 2.0) -> dict:
    """Chart config whose camera button downloads an SVG named ``filename``.

    Pass it as ``config=`` to ``st.plotly_chart`` or ``fig.show``; the browser
    renders the SVG itself, so this works without Chromium on the server.
    """
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "svg", "filename": safe_filename(filename), "scale": scale},
    }


def figure_to_html(fig: go.Figure, *, filename: str = "figure") -> bytes:
    """A standalone UTF-8 HTML page showing ``fig``, usable offline.

    plotly.js (about 4.5 MB) is embedded rather than loaded from a CDN, and
    no MathJax is referenced, so the page needs no network.
    """
    page = fig.to_html(
        include_plotlyjs=True,
        include_mathjax=False,
        full_html=True,
        config=plotly_config(filename),
    )
    return page.encode("utf-8")


# --- CSV ---------------------------------------------------------------------

_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value) -> str:
    """A CSV cell as text: numbers in shortest form, missing values empty,
    and text that a spreadsheet would run as a formula neutralised with a
    leading apostrophe (negative numbers are left alone)."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return ""
        return str(value) if isinstance(value, np.floating) else repr(value)
    text = str(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _axis(fig: go.Figure, ref: str | None, letter: str):
    suffix = (ref or letter)[1:]
    return fig.layout[f"{letter}axis{suffix}"]


def _tick_names(axis) -> dict:
    """Map tick values to their tick text (labels unescaped for a spreadsheet)."""
    if axis.tickvals is None or axis.ticktext is None:
        return {}
    return {_key(v): html.unescape(str(t)) for v, t in zip(axis.tickvals, axis.ticktext)}


def _key(value):
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return value


def _coords(values, n: int, start, step) -> list:
    if values is not None:
        return _as_list(values, n)
    start = 0 if start is None else start
    step = 1 if step is None else step
    return [start + i * step for i in range(n)]


def _axis_title(axis, fallback: str) -> str:
    text = axis.title.text if axis.title is not None else None
    return html.unescape(text) if text else fallback


def _row_title(fig: go.Figure, axis, letter: str) -> str:
    """The axis title, else the title of an axis beside it in the same subplot
    row (y) or column (x): side-by-side panels often title only the first."""
    own = _axis_title(axis, "")
    if own or axis.domain is None:
        return own or letter
    for name in fig.layout:
        other = fig.layout[name]
        if name.startswith(f"{letter}axis") and other.domain == axis.domain and _axis_title(other, ""):
            return _axis_title(other, "")
    return letter


def _heatmap_rows(fig: go.Figure, trace) -> list[list]:
    z = trace.z if isinstance(trace.z, np.ndarray) else np.array(trace.z, dtype=object)
    z = np.atleast_2d(z)  # [y, x]
    xaxis, yaxis = _axis(fig, trace.xaxis, "x"), _axis(fig, trace.yaxis, "y")
    xs = _coords(trace.x, z.shape[1], trace.x0, trace.dx)
    ys = _coords(trace.y, z.shape[0], trace.y0, trace.dy)
    x_labels = _labels(trace, xaxis, "x", xs)
    y_labels = _labels(trace, yaxis, "y", ys)
    corner = f"{_row_title(fig, yaxis, 'y')} \\ {_row_title(fig, xaxis, 'x')}"
    rows = [[corner, *x_labels]]
    for label, values in zip(y_labels, z):
        rows.append([label, *values])
    return rows


def _labels(trace, axis, letter: str, coords: list) -> list:
    """Names for the coordinates: full labels kept in the trace's meta, else
    the axis tick text, else the coordinates themselves."""
    stored = meta_labels(trace, letter, len(coords))
    if stored is not None:
        return [html.unescape(str(label)) for label in stored]
    names = _tick_names(axis)
    return [names.get(_key(c), c) for c in coords]


def _as_list(values, n: int) -> list:
    """Values as a list; numpy scalars are kept so float32 prints short."""
    if values is None:
        return [None] * n
    if isinstance(values, str):
        return [values] * n
    return list(values)


def _series_rows(fig: go.Figure, trace, name: str) -> list[list]:
    xs = _as_list(trace.x, 0)
    ys = _as_list(trace.y, len(xs))
    if not xs:
        xs = list(range(len(ys)))
    texts = trace.text if trace.text is not None else trace.hovertext
    texts = _as_list(texts, len(xs))
    x_names = _tick_names(_axis(fig, trace.xaxis, "x"))
    rows = [["trace", "x", "y", "text"]]
    for x, y, text in zip(xs, ys, texts):
        if x is None and y is None:
            continue
        if text is None:
            text = x_names.get(_key(x))
        rows.append([name, x, y, None if text is None else html.unescape(str(text))])
    return rows


_CSV_TYPES = ("heatmap", "scatter", "scattergl", "bar")


def _section_names(fig: go.Figure, traces: list) -> list[str]:
    """A distinct name per trace: its name, then its y axis title, then its index."""
    names = [html.unescape(str(t.name or f"{t.type} {i}")) for i, t in traces]
    repeated = {name for name in names if names.count(name) > 1}
    for position, (_, trace) in enumerate(traces):
        axis_title = _axis_title(_axis(fig, trace.yaxis, "y"), "")
        if names[position] in repeated and axis_title:
            names[position] = f"{names[position]} · {axis_title}"
    repeated = {name for name in names if names.count(name) > 1}
    for position, (index, _) in enumerate(traces):
        if names[position] in repeated:
            names[position] = f"{names[position]} ({index})"
    return [" ".join(name.split()) for name in names]


def figure_to_csv(fig: go.Figure) -> str:
    """The numbers behind ``fig`` as CSV text.

    * A heatmap becomes a matrix: the header row holds the x labels, the
      first column the y labels (tick text of numeric axes, so tokens rather
      than positions), the corner names both axes. Gaps (masked cells) are
      empty cells.
    * Scatter and bar traces become long format with columns
      ``trace, x, y, text``.
    * With several traces, each gets a section that starts with a
      ``# trace name`` line; sections are separated by a blank line
      (``pandas.read_csv(..., comment="#")`` skips those lines).

    Decorations (the "×" marks on masked cells) are left out. Cells that a
    spreadsheet would execute as a formula get a leading apostrophe.
    """
    traces = [(i, t) for i, t in enumerate(fig.data) if not is_decoration(t) and t.type in _CSV_TYPES]
    names = _section_names(fig, traces)
    sections = [
        (name, _heatmap_rows(fig, trace) if trace.type == "heatmap" else _series_rows(fig, trace, name))
        for name, (_, trace) in zip(names, traces)
    ]

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for number, (name, rows) in enumerate(sections):
        if len(sections) > 1:
            if number:
                buffer.write("\n")
            buffer.write(f"# {name}\n")
        writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue()


# --- file names and the zip --------------------------------------------------

_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
MAX_FILENAME = 80


def safe_filename(name: str) -> str:
    """A file name made only of ``a-z 0-9 . _ -``, at most 80 characters.

    Accents are dropped ("Köpfe" → "kopfe"), every other character becomes
    "-", so "../../etc/passwd" becomes "etc-passwd": no path separators, no
    leading dot. A name with nothing usable left becomes "figure" (plus a
    short hash of the original, so different names stay different).
    """
    original = str(name)
    text = unicodedata.normalize("NFKD", original).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"[^a-z0-9._-]+", "-", text)
    text = re.sub(r"\.{2,}", ".", text)
    text = re.sub(r"-{2,}", "-", text)
    text = text.strip("._-")[:MAX_FILENAME].strip("._-")
    if not text:
        if not original:
            return "figure"
        return "figure-" + hashlib.sha1(original.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    if text.split(".")[0] in _WINDOWS_RESERVED:
        text = ("file-" + text)[:MAX_FILENAME]
    return text


def _unique(stem: str, taken: set[str]) -> str:
    candidate, number = stem, 2
    while candidate in taken:
        suffix = f"-{number}"
        candidate = stem[: MAX_FILENAME - len(suffix)] + suffix
        number += 1
    taken.add(candidate)
    return candidate


def _figure_title(fig: go.Figure) -> str:
    title = fig.layout.title.text if fig.layout.title is not None else None
    return html.unescape(title) if title else ""


_FORMATS = ("png", "svg", "html", "csv")


def figures_zip(
    figures: dict[str, go.Figure],
    *,
    formats: Iterable[str] = _FORMATS,
    scale: float = 2.0,
) -> bytes:
    """A zip (bytes, built in memory) holding every figure in every format.

    Entries are ``{safe_filename(id)}.{ext}`` at the top level, plus
    ``manifest.json`` listing for each figure its id, title and files.
    Without Chromium, PNG and SVG are skipped and the manifest says why; a
    figure that fails to render is noted the same way, the other files are
    still written. Entry timestamps are fixed, so the same figures give the
    same bytes.
    """
    formats = tuple(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in _FORMATS]
    if unknown:
        raise ValueError(f"unknown formats {unknown}; choose from {_FORMATS}")
    static_ok, static_message = static_export_available()
    wants_static = any(f in ("png", "svg") for f in formats)

    manifest: dict = {"figures": [], "notes": []}
    if wants_static and not static_ok:
        manifest["notes"].append(static_message)

    taken: set[str] = {"manifest"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:

        def write(name: str, data: bytes) -> None:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)

        for figure_id, fig in figures.items():
            stem = _unique(safe_filename(figure_id), taken)
            files = []
            for fmt in formats:
                name = f"{stem}.{fmt}"
                try:
                    if fmt == "png":
                        if not static_ok:
                            continue
                        data = figure_to_png(fig, scale=scale)
                    elif fmt == "svg":
                        if not static_ok:
                            continue
                        data = figure_to_svg(fig)
                    elif fmt == "html":
                        data = figure_to_html(fig, filename=stem)
                    else:
                        data = figure_to_csv(fig).encode("utf-8")
                except (RuntimeError, TimeoutError) as error:
                    manifest["notes"].append(f"{name} skipped: {error}")
                    continue
                write(name, data)
                files.append(name)
            manifest["figures"].append({"id": str(figure_id), "title": _figure_title(fig), "files": files})
        write("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8"))
    return buffer.getvalue()


if __name__ == "__main__":  # python -m viz.export …: the command line lives in viz/cli.py
    from viz.cli import main

    raise SystemExit(main())
