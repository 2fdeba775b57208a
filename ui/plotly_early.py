"""Make the browser fetch and evaluate plotly.js as soon as a page starts, before its first chart.

Our chart component (ui/chart.py) loads Streamlit's 4.7 MB plotly chunk when the first chart's data
arrives. On a cold start the browser then spent ~1 s fetching it and ~2 s (one long task, CDP timeline,
load ~6) evaluating it and drawing, while the server had been busy for seconds before: this element,
sent at the top of every page, starts that work while the server still builds the page. The chart
component's own `import()` of the same chunk then resolves to the module already evaluated. The
element takes no space (its container is hidden).
"""

from __future__ import annotations

import streamlit as st

from ui.chart import PLOTLY_CHUNK

KEY = "av_plotly_early"

JS = """
export default function plotlyEarly({ data }) {
  if (window.Plotly || !data) return;
  const entry = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (entry) import(new URL(data, entry.src).href).catch(() => {});
}
"""
CSS = f".st-key-{KEY} {{ display: none; }}"

_component = st.components.v2.component("attention_viz.plotly_early", js=JS, css=CSS, isolate_styles=False)


def load_plotly_early() -> None:
    """The hidden element that starts loading plotly.js (nothing when the chunk was not found)."""
    if PLOTLY_CHUNK:
        _component(key=KEY, data=PLOTLY_CHUNK)
