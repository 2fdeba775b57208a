"""Plotly figures drawn by our own chart component (ui/components/chart), updated in place.

`st.plotly_chart` gives a chart a new identity whenever its figure changes, so the browser remounts it
and draws it from scratch, twice (again once its width is known). With eight charts on the Attention
page that was about 1.2 s of the browser's main thread per toggle at 16 tokens (CDP profile, quiet
machine), where the server had sent every change within 0.22 s. This component keeps its chart and
calls `Plotly.react`; a chart outside the window is drawn after the ones in it have been painted, or when
it scrolls into view, or before printing. It uses the cartesian bundle of the plotly package's plotly.js
that `make install` fetched (deploy/plotly_js.py), served by the app; without it, the plotly.js inside
Streamlit's own chart chunk. The chart looks as in a standalone export (the figure's own template).

Under the plot, the component draws its own export buttons: PNG and SVG rendered by plotly.js in the
browser (no Chromium on the server), HTML and CSV made by the server when clicked and sent once with the
chart's data. They replaced four `st.download_button`s and a container per figure, which Streamlit's
frontend re-rendered on every rerun (about 0.2 s of a toggle on the Attention page before its first chart
changed).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from deploy import component_js

if TYPE_CHECKING:  # this module is imported before torch and plotly are (ui/__init__.py): only for hints
    import plotly.graph_objects as go

ASSETS = Path(__file__).parent / "components" / "chart"  # its code (chart.js, live.js, save_file.js): deploy/component_js.py
CSS = (ASSETS / "chart.css").read_text(encoding="utf-8") + (ASSETS.parent / "exports.css").read_text(encoding="utf-8")
DEFAULT_HEIGHT = 450  # plotly's, for a figure without its own
TEXT_PARTS = "av_text"  # in a trace sent: {"rows", "cols"}, its text per cell as rows[i] + cols[j] (chart.js joins them)
DECIMAL_Z = "av_z"  # in a trace sent: {"shape", "bdata"}, its z to 4 significant digits (ui.figures.decimal_digits)
NAN_DIGITS = -32768  # the digits of a gap (NaN) in DECIMAL_Z
POWERS = tuple(float(f"1e{k}") for k in range(80))  # the doubles nearest 10^k (exact to 10^22), as chart.js's POWERS


def serves_app_static(main_script: str | None) -> bool:
    """Whether this server serves the app's static/ (beside app.py) at app/static/: static serving on
    (.streamlit/config.toml) and app.py the main script. Then the components' code is imported from
    there (deploy/component_js.py) rather than sent with every element. Not for another main script (a
    test app elsewhere), whose app/static/ is another folder: its components get their code inline."""
    if not main_script or not st.config.get_option("server.enableStaticServing"):
        return False
    return Path(main_script).resolve().parent / "static" == component_js.STATIC


def static_serving() -> bool:
    """`serves_app_static` for the script now running (False outside a script run)."""
    return serves_app_static(getattr(get_script_run_ctx(suppress_warning=True), "main_script_path", None))


_component = st.components.v2.component("attention_viz.chart", js=component_js.component_js("av-chart", static_serving()), css=CSS, isolate_styles=False)


def plotly_chunk() -> str | None:
    """The file name of the chunk of Streamlit's frontend that holds plotly.js (it sets window.Plotly)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(folder.glob("PlotlyChart.*.js"))
    return found[0].name if found else None


PLOTLY_CHUNK = plotly_chunk()


def plotly_source() -> dict | None:
    """Where the browser gets plotly.js: {"script": path} for the cartesian bundle that `make install`
    put in static/ (deploy/plotly_js.py; a third of the code to evaluate), served at app/static/;
    otherwise {"chunk": name} for Streamlit's chart chunk; None when neither is there."""
    from deploy.plotly_js import installed

    bundle = installed()
    if bundle is not None:
        return {"script": f"app/static/{bundle.name}"}
    return {"chunk": PLOTLY_CHUNK} if PLOTLY_CHUNK else None


PLOTLY = plotly_source()

# The element types of the app's pages whose code Streamlit's frontend fetches only when the first one
# arrives (dynamic imports, names as in its build manifest). On a cold start these came as a waterfall:
# the text area after the first run's sidebar arrived, radio and checkbox after it, then the data frame,
# slider and multiselect, each a round trip to a server still busy importing and running the first page.
# The loader (`load_plotly_early`) asks for all of them at once. Left to its page: the Train page's loss
# chart (ArrowVegaLiteChart, 1 MB of code that a first visit to any other page would evaluate for nothing).
FRONTEND_PARTS = (
    "PageLink", "TextArea", "TextInput", "NumberInput", "Selectbox", "Radio", "Checkbox", "Slider", "Multiselect",
    "Html", "Button", "ButtonGroup", "DownloadButton", "DataFrame", "rehype-katex",
)  # fmt: skip
LEFT_TO_THEIR_PAGE = ("ArrowVegaLiteChart",)


def frontend_parts(names: tuple[str, ...] = FRONTEND_PARTS) -> dict[str, list[str]]:
    """{"entries": files, "modules": files}: the files (under Streamlit's static/js/) of the dynamically
    imported parts of its frontend named `names`, and of every module they import, however deep (the
    browser would find those one level at a time), read from the frontend's build manifest. A name this
    Streamlit does not have is left out."""
    manifest = Path(st.__file__).parent / "static" / "manifest.json"
    try:
        items = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"entries": [], "modules": []}
    dynamic = {source for item in items.values() for source in item.get("dynamicImports", ())}
    found = {}
    for source, item in items.items():
        if item.get("name") in names and item.get("file", "").startswith("static/js/") and (item.get("isDynamicEntry") or source in dynamic):
            found.setdefault(item["name"], source)
    entries = [found[name] for name in names if name in found]
    modules, todo = set(), list(entries)
    while todo:
        source = todo.pop()
        if source not in modules and source in items:
            modules.add(source)
            todo.extend(items[source].get("imports", ()))

    def file(source: str) -> str:
        return items[source]["file"].removeprefix("static/js/")

    return {"entries": [file(source) for source in entries], "modules": sorted({file(source) for source in modules})}


FRONTEND_FILES = frontend_parts()


def chart_data(fig: go.Figure, spec: str | bytes, config: dict, *, clickable: bool, export: dict | None = None, live: dict | None = None) -> bytes:
    """What the component receives for `fig`, given its JSON `spec` (text or UTF-8): one line of JSON about the chart,
    then the spec. Bytes, made once per figure: Streamlit sends bytes as they are, where a dict would be
    serialised twice on every run (once sorted, for the element's identity).

    `export`: {name, width, height, scale} of the chart's PNG and SVG, rendered by the browser (file
    `name`.png, width × height layout pixels, PNG at `scale`), and its HTML and CSV buttons; None: no
    buttons. Not part of the version: the buttons read it when clicked, the chart is not redrawn for it.

    `live`: what the browser needs to redraw a stages figure for another mask, scaling, temperature or
    set of hidden keys as soon as that control changes (viz.content.attention.stages_in_browser, with
    `controls` added: see ui/components/chart/live.js); made from the same trace as the figure, so not
    part of the version."""
    spec_bytes = spec if isinstance(spec, bytes) else spec.encode("utf-8")
    # the camera button's options (its file name names the view, its scale is the PNG resolution) are set
    # in place by the browser (chart.js): a figure that did not change is not drawn again for them
    plotted = {name: value for name, value in config.items() if name != "toImageButtonOptions"}
    drawn_with = json.dumps([plotted, clickable], sort_keys=True).encode("utf-8")
    about = {
        "version": hashlib.blake2b(spec_bytes + drawn_with, digest_size=8).hexdigest(),
        "config": config,
        "width": "content" if fig.layout.width else "stretch",
        "height": int(fig.layout.height or DEFAULT_HEIGHT),
        "clickable": clickable,
        "plotly": PLOTLY,
        "export": export,
    }
    if live is not None:
        about["live"] = live
    return json.dumps(about).encode("utf-8") + b"\n" + spec_bytes


def placeholder_data(live: dict | None) -> bytes:
    """What the component receives for the hidden chart of a head not shown (ui.head_view,
    show_stages_placeholder): no figure, only `live` with that head's own part (its number, raw scores and
    title start; viz.content.attention.head_in_browser) and where its pill is. When the head's pill
    is clicked, the browser draws it from a shown head's figure (live.js). The same bytes whatever the
    mask, scaling or temperature, so a toggle does not send them again. `live` None: the browser cannot
    draw the head (a later layer, blocks of tokens); the element stays, hidden, with its last drawing."""
    return json.dumps({"version": None, "placeholder": True, "live": live}).encode("utf-8") + b"\n"  # the version first (chart_version)


VERSION_START = b'{"version": '  # how the first line of `chart_data` and `placeholder_data` begins
_DECODER = json.JSONDecoder()


def chart_version(data: bytes) -> str | None:
    """The version of `data` (`chart_data`, `placeholder_data`), read from the start of its first line alone:
    the rest of that line may hold a stages chart's `live`, megabytes at 512 tokens, which `chart_about` parsed
    for every chart of every rerun."""
    if not data.startswith(VERSION_START):
        return chart_about(data)["version"]
    return _DECODER.raw_decode(data[len(VERSION_START) : len(VERSION_START) + 64].decode("utf-8", "replace"))[0]


def chart_about(data: bytes) -> dict:
    """The first line of `data` (`chart_data`): the JSON about the chart (its version, config, file, …)."""
    return json.loads(data.partition(b"\n")[0])


def with_file(data: bytes, file: dict) -> bytes:
    """`data` (`chart_data`) carrying a file for the browser to save once: the JSON line gets
    file = {name, mime, nonce, length} and the file's bytes follow the spec. The version is unchanged,
    so the chart is not redrawn."""
    head, _, rest = data.partition(b"\n")
    about = json.loads(head)
    about["file"] = {"name": file["name"], "mime": file["mime"], "nonce": file["nonce"], "length": len(file["bytes"])}
    return json.dumps(about).encode("utf-8") + b"\n" + rest + file["bytes"]


def read_chart_data(data: bytes) -> tuple[dict, dict]:
    """(about, figure) from what `chart_data` made: what the browser reads, a trace's text per cell joined
    again from its row and column parts (`TEXT_PARTS`) as chart.js joins it."""
    about, _, spec = data.partition(b"\n")
    about = json.loads(about)
    if about.get("file"):
        spec = spec[: len(spec) - about["file"]["length"]]
    return about, join_text(json.loads(spec))


def join_text(figure: dict) -> dict:
    """`figure` as chart.js hands it to plotly (`unpack`): each trace's `TEXT_PARTS` replaced by the text per
    cell it stands for, and its `DECIMAL_Z` by the float32 values it stands for (as plotly's {dtype, bdata, shape})."""
    for trace in figure.get("data", []):
        parts = trace.pop(TEXT_PARTS, None)
        if parts is not None:
            trace["text"] = [[row + col for col in parts["cols"]] for row in parts["rows"]]
        decimal = trace.pop(DECIMAL_Z, None)
        if decimal is not None:
            trace["z"] = decimal_values(decimal)
    return figure


def decimal_values(decimal: dict) -> dict:
    """The float32 values that a `DECIMAL_Z` stands for, as plotly's typed array: digits × 10^power (as chart.js computes them)."""
    import base64

    import numpy as np

    rows, cols = decimal["shape"]
    packed = base64.b64decode(decimal["bdata"])
    digits = np.frombuffer(packed, dtype="<i2", count=rows * cols).astype(np.float64)
    power = np.frombuffer(packed, dtype="i1", offset=2 * rows * cols).astype(np.float64)
    factor = np.array(POWERS)[np.abs(power).astype(np.int64)]
    values = np.where(power >= 0, digits * factor, digits / factor)
    values[digits == NAN_DIGITS] = np.nan
    return {"dtype": "f4", "bdata": base64.b64encode(values.astype("<f4").tobytes()).decode("ascii"), "shape": f"{rows}, {cols}"}


def read_chart_file(data: bytes) -> bytes | None:
    """The bytes of the file that `data` carries (`with_file`), or None."""
    about = chart_about(data)
    return data[len(data) - about["file"]["length"] :] if about.get("file") else None


EARLY_KEY = "av_plotly_early"  # chart.css hides its element


def _keys_this_run():
    """The keys of the elements drawn so far in this script run (Streamlit's own set; None outside a run)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return getattr(getattr(ctx, "shared", None), "widget_user_keys_this_run", None)


def drawn_this_run(key: str) -> bool:
    """Whether an element with this key was already drawn in the current script run."""
    keys = _keys_this_run()
    return keys is not None and key in keys


# The head start. A toggle's rerun sent all of its messages within 3 ms, and the browser took them in one
# React render (the sidebar, options, formulas, the charts and tables below: 24 ms at 16 tokens on the toy
# model) before the first chart's data reached the chart component, then painted (7 ms). Waiting a moment
# after the first chart that changed lets the browser render that chart alone (13 ms) and start drawing it
# while the rest of the page is still on its way: scaling toggle 0.14 → 0.12 s, hidden token
# 0.18 → 0.15 s (chromium, the page's clock; see README). Only with a browser to draw (not in AppTest):
# the script thread waits, the CPU does not.
HEAD_START_S = 0.03
SENT = "_chart_versions_sent"  # session state: {chart key: the version of the figure last sent under it}
HEAD_START_GIVEN = "\x00av-head-start"  # put among the run's keys: this run gave its head start


def wants_head_start(sent: dict, key: str, version: str, keys_this_run) -> bool:
    """Whether the chart `key`, now sent `version`, is the first chart of this run whose figure changed
    (or that is new). Records the version in `sent` and the head start among `keys_this_run`
    (Streamlit's set of the run's keys, cleared at the start of every run: at most one per run)."""
    changed = sent.get(key) != version
    sent[key] = version
    return changed and keys_this_run is not None and keys_this_run.check_and_add(HEAD_START_GIVEN)


def forget_charts_sent() -> None:
    """A full run of a page: its first chart gets the head start whether or not it changed."""
    st.session_state.pop(SENT, None)


pause = time.sleep  # (a test counts the waits)


def served() -> bool:
    """Whether this run is served to a browser (Streamlit's runtime exists; not in AppTest)."""
    from streamlit import runtime

    return runtime.exists()


def give_head_start(key: str, version: str) -> None:
    """After drawing chart `key`: if it is the first changed chart of the run, wait `HEAD_START_S` before the
    rest of the page is sent (a browser draws it alone first)."""
    if wants_head_start(st.session_state.setdefault(SENT, {}), key, version, _keys_this_run()) and served():
        pause(HEAD_START_S)


def load_plotly_early() -> None:
    """A hidden chart element at the top of every page that only loads plotly.js: on a cold start the chart
    component fetched Streamlit's 4.7 MB chunk only when the first chart's data arrived, then spent ~2 s
    evaluating it and drawing (CDP timeline, load ~6); started at once, first chart data → drawn went
    from 3.6–4.8 s to 1.1–1.4 s. Nothing when no plotly.js was found, or when this run already drew it
    (the first run of a process draws it from ui/__init__.py, before torch is imported, then calls `page`)."""
    if PLOTLY and not drawn_this_run(EARLY_KEY):
        _component(key=EARLY_KEY, data=json.dumps({"preload": True, "plotly": PLOTLY, "parts": FRONTEND_FILES}).encode("utf-8") + b"\n")


FILES = "_chart_files"  # session state: {component key: the file made on the server, waiting for its next data}
FILE_TTL_S = 60.0  # a file whose chart was not drawn again within a minute is dropped, not saved later by surprise
SERVER_FORMATS = ("html", "csv")  # made by Python when clicked; PNG and SVG are rendered by the browser


def keep_file(key: str, made: tuple[bytes, str, str]) -> None:
    """A file made on the server when component `key`'s export button was clicked ((bytes, name, mime)):
    kept in the session until that component's next data, which carries it once (`file_to_send`). The
    charts and the head view (ui.head_view) both send their files this way."""
    content, name, mime = made
    st.session_state.setdefault(FILES, {})[key] = {"bytes": content, "name": name, "mime": mime, "nonce": secrets.token_hex(8), "made": time.monotonic()}


def file_to_send(key: str) -> dict | None:
    """The file kept for component `key` ({bytes, name, mime, nonce, made}), taken out: a rerun or a new
    page load does not save it again. None when there is none, or it was made more than FILE_TTL_S ago."""
    file = st.session_state.get(FILES, {}).pop(key, None)
    return file if file is not None and time.monotonic() - file["made"] < FILE_TTL_S else None


def draw_chart(
    data: bytes,
    *,
    key: str,
    on_click: Callable[[dict], None] | None = None,
    on_export: Callable[[str], tuple[bytes, str, str] | None] | None = None,
) -> None:
    """Draw the chart described by `data` (`chart_data`); `on_click(selection)` runs on a click, with
    the selection in the shape of `st.plotly_chart`'s ({"points": [{"curve_number", "point_index", "x", "y", "customdata"}]}).

    `on_export(format)`: run when the chart's HTML or CSV button is clicked ("html" or "csv"); it returns
    (bytes, file name, mime type). The file is kept in the session and sent once with the chart's data in
    the rerun that follows (`with_file`); the browser saves it."""

    def clicked():
        try:
            value = st.session_state[key]["click"]
        except (KeyError, TypeError):
            return
        if on_click is not None and isinstance(value, dict) and isinstance(value.get("points"), list):
            on_click(value)

    def exported():
        try:
            value = st.session_state[key]["export"]
        except (KeyError, TypeError):
            return
        form = value.get("format") if isinstance(value, dict) else None
        if on_export is None or form not in SERVER_FORMATS:
            return
        made = on_export(form)
        if made is not None:
            keep_file(key, made)

    file = file_to_send(key)
    if file is not None:
        data = with_file(data, file)
    _component(key=key, data=data, on_click_change=clicked, on_export_change=exported)
    version = chart_version(data)
    if version is not None:  # not a placeholder (nothing drawn)
        give_head_start(key, version)
