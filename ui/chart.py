"""Plotly figures drawn by our own chart component (ui/components/chart), updated in place.

`st.plotly_chart` gives a chart a new identity whenever its figure changes, so the browser remounts it
and draws it from scratch, twice (again once its width is known). With eight charts on the Attention
page that was about 1.2 s of the browser's main thread per toggle at 16 tokens (CDP profile, quiet
machine), where the server had sent every change within 0.22 s. This component keeps its chart and
calls `Plotly.react`; a chart outside the window is drawn after the ones in it have been painted, or when
it scrolls into view, or before printing. It uses the plotly.js that Streamlit's frontend ships (its chart chunk), so nothing is fetched
from elsewhere; the chart looks as in a standalone export (the figure's own template).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

ASSETS = Path(__file__).parent / "components" / "chart"
JS = (ASSETS / "chart.js").read_text(encoding="utf-8")
CSS = (ASSETS / "chart.css").read_text(encoding="utf-8")
DEFAULT_HEIGHT = 450  # plotly's, for a figure without its own

_component = st.components.v2.component("attention_viz.chart", js=JS, css=CSS, isolate_styles=False)


def plotly_chunk() -> str | None:
    """The file name of the chunk of Streamlit's frontend that holds plotly.js (it sets window.Plotly)."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(folder.glob("PlotlyChart.*.js"))
    return found[0].name if found else None


PLOTLY_CHUNK = plotly_chunk()


def chart_data(fig: go.Figure, spec: str, config: dict, *, clickable: bool) -> bytes:
    """What the component receives for `fig`, given its JSON `spec`: one line of JSON about the chart,
    then the spec. Bytes, made once per figure: Streamlit sends bytes as they are, where a dict would be
    serialised twice on every run (once sorted, for the element's identity)."""
    spec_bytes = spec.encode("utf-8")
    drawn_with = json.dumps([config, clickable], sort_keys=True).encode("utf-8")  # a new file name or PNG scale redraws too
    about = {
        "version": hashlib.blake2b(spec_bytes + drawn_with, digest_size=8).hexdigest(),
        "config": config,
        "width": "content" if fig.layout.width else "stretch",
        "height": int(fig.layout.height or DEFAULT_HEIGHT),
        "clickable": clickable,
        "plotly": PLOTLY_CHUNK,
    }
    return json.dumps(about).encode("utf-8") + b"\n" + spec_bytes


def read_chart_data(data: bytes) -> tuple[dict, dict]:
    """(about, figure) from what `chart_data` made: what the browser reads."""
    about, _, spec = data.partition(b"\n")
    return json.loads(about), json.loads(spec)


EARLY_KEY = "av_plotly_early"  # chart.css hides its element


def load_plotly_early() -> None:
    """A hidden chart element at the top of every page that only loads plotly.js: on a cold start the chart
    component fetched Streamlit's 4.7 MB chunk only when the first chart's data arrived, then spent ~2 s
    evaluating it and drawing (CDP timeline, load ~6); started at once, first chart data → drawn went
    from 3.6–4.8 s to 1.1–1.4 s. Nothing when the chunk was not found."""
    if PLOTLY_CHUNK:
        _component(key=EARLY_KEY, data=json.dumps({"preload": True, "plotly": PLOTLY_CHUNK}).encode("utf-8") + b"\n")


def draw_chart(data: bytes, *, key: str, on_click: Callable[[dict], None] | None = None) -> None:
    """Draw the chart described by `data` (`chart_data`); `on_click(selection)` runs on a click, with
    the selection in the shape of `st.plotly_chart`'s ({"points": [{"curve_number", "point_index", "x", "y", "customdata"}]})."""

    def clicked():
        try:
            value = st.session_state[key]["click"]
        except (KeyError, TypeError):
            return
        if on_click is not None and isinstance(value, dict) and isinstance(value.get("points"), list):
            on_click(value)

    _component(key=key, data=data, on_click_change=clicked)
