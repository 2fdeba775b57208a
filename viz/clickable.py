"""Clicks on heatmap cells and overview tiles, read back from the chart's click.

A cell of an attention heatmap is clicked on the heatmap itself: plotly.js reports the cell's column and
row as the point's x and y (the axes are positions). Masked cells are gaps without hover, so there the
click lands on the transparent heatmap of the masked cells over it (``viz.heatmap.mask_marks``). The
traces that answer a click say so in their ``meta`` ("click"). The tiles of the all-heads overview
get a layer of invisible markers, one per tile. ui/chart.py sends a click in the shape that
`st.plotly_chart(..., on_select="rerun")` gives.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._common import DECORATION_META

CELL_TARGET = "cell target"
TILE_TARGET = "tile target"


def _targets(x, y, name: str, size: float, xaxis: str = "x", yaxis: str = "y", customdata=None) -> go.Scatter:
    return go.Scatter(
        x=np.asarray(x, dtype=np.float32),
        y=np.asarray(y, dtype=np.float32),
        customdata=customdata,
        mode="markers",
        marker=dict(size=size, opacity=0, color="black"),
        hoverinfo="none",
        showlegend=False,
        name=name,
        xaxis=xaxis,
        yaxis=yaxis,
        meta={**DECORATION_META, "click": name},
    )


def add_cell_targets(fig: go.Figure, *, xaxis: str = "x", yaxis: str = "y") -> bool:
    """Make the cells of the heatmap on these axes clickable (and its masked cells'); False when
    there is no heatmap there. Nothing is added to the figure: an invisible marker on every cell, as this
    once was, made the redraw of the stages chart at 16 tokens take 45-50 ms instead of 26-32 ms, and 4 s
    at 128 × 128 (chromium: markers are styled one by one)."""

    def on_axes(trace) -> bool:
        return (trace.xaxis or "x") == xaxis and (trace.yaxis or "y") == yaxis

    heatmaps = [trace for trace in fig.data if trace.type == "heatmap" and on_axes(trace)]  # the masked cells' too
    if not heatmaps:
        return False
    for trace in heatmaps:
        trace.meta = {**(trace.meta or {}), "click": CELL_TARGET}
    fig.update_layout(clickmode="event")
    return True


def add_tile_targets(fig: go.Figure) -> None:
    """Make every tile of a `heads_overview` figure clickable (one marker as large as the tile)."""
    meta = fig.data[0].meta  # the tiled heatmap says how its panels are laid out
    rows, cols, gap = meta["panel_rows"], meta["panel_cols"], meta["gap"]
    layers, heads = np.meshgrid(np.arange(meta["n_layers"]), np.arange(meta["n_heads"]), indexing="ij")
    x = heads.ravel() * (cols + gap) + (cols - 1) / 2
    y = layers.ravel() * (rows + gap) + (rows - 1) / 2
    size = max(12, int(0.8 * (fig.layout.height - 140) / max(meta["n_layers"], 1)))
    custom = np.stack([layers.ravel(), heads.ravel()], axis=1)
    fig.add_trace(_targets(x, y, TILE_TARGET, size, customdata=custom))
    fig.update_layout(clickmode="event+select")


def _points(selection) -> list[dict]:
    if selection is None:
        return []
    points = selection.get("points") if isinstance(selection, dict) else getattr(selection, "points", None)
    return list(points or [])


def clicked_cell(selection, fig: go.Figure) -> tuple[int, int] | None:
    """(query, key) of a clicked cell of `fig` (see `add_cell_targets`), from a click's selection ({"points": [...]})."""
    for point in _points(selection):
        curve = point.get("curve_number")
        if curve is None or not 0 <= curve < len(fig.data):
            continue
        trace = fig.data[curve]
        if not isinstance(trace.meta, dict) or trace.meta.get("click") != CELL_TARGET:
            continue
        return int(round(point["y"])), int(round(point["x"]))
    return None


def clicked_tile(selection, fig: go.Figure) -> tuple[int, int] | None:
    """(layer, head) of a clicked overview tile of `fig`."""
    for point in _points(selection):
        curve = point.get("curve_number")
        if curve is not None and curve < len(fig.data) and fig.data[curve].name == TILE_TARGET:
            index = point.get("point_index", point.get("point_number"))
            layer, head = fig.data[curve].customdata[index]
            return int(layer), int(head)
    return None


def mark_cell(fig: go.Figure, query: int, key: int, *, xaxis: str = "x", yaxis: str = "y") -> None:
    """Outline the chosen cell (the worked example's query and key)."""
    fig.add_trace(
        go.Scatter(
            x=[key],
            y=[query],
            mode="markers",
            marker=dict(symbol="square-open", size=14, color="#ff4b4b", line=dict(width=3)),
            unselected=dict(marker=dict(opacity=1)),  # a click elsewhere must not dim it
            hoverinfo="skip",
            showlegend=False,
            name="worked example",
            xaxis=xaxis,
            yaxis=yaxis,
            meta=dict(DECORATION_META),
        )
    )
