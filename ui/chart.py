"""Plotly figures drawn by our own chart component (ui/components/chart), updated in place.

`st.plotly_chart` gives a chart a new identity whenever its figure changes, so the browser remounts it
and draws it from scratch. This component keeps its chart and calls `Plotly.react`; a chart outside the
window is drawn after the ones in it have been painted, or when it scrolls into view, or before printing
(docs/performance.md). It loads the plotly.js that ui/assets.py serves. The chart looks as in a standalone
export (the figure's own template).

Under the plot, the component draws its own export buttons: PNG and SVG rendered by plotly.js in the
browser, HTML and CSV made by the server when clicked and sent once with the chart's next data.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ui import assets

FOLDER = Path(__file__).parent / "components"
CSS = (FOLDER / "chart" / "chart.css").read_text(encoding="utf-8") + (FOLDER / "exports.css").read_text(encoding="utf-8")
DEFAULT_HEIGHT = 450  # plotly's, for a figure without its own


def static_serving() -> bool:
    """Whether this server serves the app's static/ at app/static/ (.streamlit/config.toml): then the
    components' code and plotly.js are files there, not sent with every element."""
    return bool(st.get_option("server.enableStaticServing"))


SERVED = static_serving()
_component = st.components.v2.component("attention_viz.chart", js=assets.component_js("av-chart", SERVED), css=CSS, isolate_styles=False)
PLOTLY = {"script": assets.plotly_script()} if SERVED else None


def chart_data(figure: dict, spec: str | bytes, config: dict, *, clickable: bool, export: dict | None = None, live: dict | None = None) -> bytes:
    """What the component receives for `figure` (a plotly dict), given its JSON `spec`: one line of JSON
    about the chart, then the spec. Bytes, made once per figure and view (Streamlit sends bytes as they are).

    `export`: {name, width, height, scale} of the chart's PNG and SVG, rendered by the browser, and its
    HTML and CSV buttons; None: no buttons. `live`: what the browser needs to redraw a stages figure as
    soon as a control changes (viz.content.attention.stages_in_browser, with `controls` added: see
    ui/components/chart/live.js). Neither is part of the version: the chart is not redrawn for them."""
    spec_bytes = spec if isinstance(spec, bytes) else spec.encode("utf-8")
    # the camera button's options (file name, PNG scale) are set in place by the browser (chart.js)
    plotted = {name: value for name, value in config.items() if name != "toImageButtonOptions"}
    drawn_with = json.dumps([plotted, clickable], sort_keys=True).encode("utf-8")
    layout = figure.get("layout", {})
    about = {
        "version": hashlib.blake2b(spec_bytes + drawn_with, digest_size=8).hexdigest(),
        "config": config,
        "width": "content" if layout.get("width") else "stretch",
        "height": int(layout.get("height") or DEFAULT_HEIGHT),
        "clickable": clickable,
        "plotly": PLOTLY,
        "export": export,
    }
    if live is not None:
        about["live"] = live
    return json.dumps(about).encode("utf-8") + b"\n" + spec_bytes


def placeholder_data(live: dict | None) -> bytes:
    """What the component receives for the hidden chart of a head not shown (ui.head_view): no figure,
    only `live` with that head's own part and where its pill is. When the pill is clicked, the browser
    draws the head from a shown head's figure (live.js). `live` None: the browser cannot draw the head;
    the element stays, hidden, with its last drawing."""
    return json.dumps({"version": None, "placeholder": True, "live": live}).encode("utf-8") + b"\n"


def with_file(data: bytes, file: dict) -> bytes:
    """`data` (`chart_data`) carrying a file for the browser to save once: the JSON line gets
    file = {name, mime, nonce, length} and the file's bytes follow the spec. The version is unchanged,
    so the chart is not redrawn."""
    head, _, rest = data.partition(b"\n")
    about = json.loads(head)
    about["file"] = {"name": file["name"], "mime": file["mime"], "nonce": file["nonce"], "length": len(file["bytes"])}
    return json.dumps(about).encode("utf-8") + b"\n" + rest + file["bytes"]


EARLY_KEY = "av_plotly_early"  # the hidden element that loads plotly.js (chart.css hides it)


def load_plotly() -> None:
    """A hidden chart element at the top of every page that only loads plotly.js: the browser fetches and
    evaluates it while the server computes the page (docs/performance.md). chart.css hides it."""
    if PLOTLY is not None:
        _component(key=EARLY_KEY, data=json.dumps({"preload": True, "plotly": PLOTLY}).encode("utf-8") + b"\n")


FILES = "chart_files"  # session state: {component key: the file made on the server, waiting for its next data}
FILE_TTL_S = 60.0  # a file whose chart was not drawn again within a minute is dropped, not saved later by surprise
SERVER_FORMATS = ("html", "csv")  # made by Python when clicked; PNG and SVG are rendered by the browser


def keep_file(key: str, made: tuple[bytes, str, str]) -> None:
    """A file made on the server when component `key`'s export button was clicked ((bytes, name, mime)):
    kept in the session until that component's next data, which carries it once (`file_to_send`)."""
    content, name, mime = made
    st.session_state.setdefault(FILES, {})[key] = {"bytes": content, "name": name, "mime": mime, "nonce": secrets.token_hex(8), "made": time.monotonic()}


def file_to_send(key: str) -> dict | None:
    """The file kept for component `key`, taken out: a rerun or a new page load does not save it again.
    None when there is none, or it was made more than FILE_TTL_S ago."""
    file = st.session_state.get(FILES, {}).pop(key, None)
    return file if file is not None and time.monotonic() - file["made"] < FILE_TTL_S else None


def draw_chart(
    data: bytes,
    *,
    key: str,
    on_click: Callable[[dict], None] | None = None,
    on_export: Callable[[str], tuple[bytes, str, str] | None] | None = None,
) -> None:
    """Draw the chart described by `data` (`chart_data`); `on_click(selection)` runs on a click, with the
    selection in the shape of `st.plotly_chart`'s ({"points": [{"curve_number", "point_index", "x", "y", "customdata"}]}).
    `on_export(format)`: run when the chart's HTML or CSV button is clicked; it returns (bytes, file name,
    mime type), sent once with the chart's data in the rerun that follows."""

    def event(name: str):
        value = st.session_state.get(key)
        return value.get(name) if isinstance(value, dict) else None

    def clicked():
        value = event("click")
        if on_click is not None and isinstance(value, dict) and isinstance(value.get("points"), list):
            on_click(value)

    def exported():
        value = event("export")
        form = value.get("format") if isinstance(value, dict) else None
        if on_export is not None and form in SERVER_FORMATS:
            made = on_export(form)
            if made is not None:
                keep_file(key, made)

    file = file_to_send(key)
    if file is not None:
        data = with_file(data, file)
    _component(key=key, data=data, on_click_change=clicked, on_export_change=exported)
