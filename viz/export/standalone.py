"""A figure as one standalone HTML page: plotly.js embedded, no network needed."""

from __future__ import annotations

import plotly.graph_objects as go

from .names import safe_filename


def plotly_config(filename: str, *, scale: float = 2.0) -> dict:
    """Chart config whose camera button downloads an SVG named ``filename``.

    Pass it as ``config=`` to ``st.plotly_chart`` or ``fig.show``; the browser
    renders the SVG itself, so this works without Chromium on the server.
    """
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "svg", "filename": safe_filename(filename), "scale": scale},
    }


def figure_to_html(fig: dict, *, filename: str = "figure") -> bytes:
    """A standalone UTF-8 HTML page showing ``fig`` (a figure dict, or a ``go.Figure``), usable offline.

    plotly.js (about 4.5 MB) is embedded rather than loaded from a CDN, and
    no MathJax is referenced, so the page needs no network.
    """
    page = go.Figure(fig).to_html(  # validated once, and arrays written as typed arrays, as the browser gets them
        include_plotlyjs=True,
        include_mathjax=False,
        full_html=True,
        config=plotly_config(filename),
    )
    return page.encode("utf-8")
