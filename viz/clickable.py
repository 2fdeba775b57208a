"""Click targets on heatmaps: a transparent marker at the centre of every cell (or overview tile).

plotly.js reports no selection for clicks on a heatmap, but it does for scatter points; a layer of
invisible markers makes each cell (each tile of the all-heads overview) a point the app can read
back from a click on the chart (ui/chart.py sends the selection in the shape that
`st.plotly_chart(..., on_select="rerun")` gives). The markers carry the decoration role, so CSV
exports leave them out, and no hover of their own, so the heatmap's hover text still shows.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._common import DECORATION_META

CELL_TARGET = "cell target"
TILE_TARGET = "tile target"
# Beyond this many cells a heatmap is not made clickable (the page says so; the head view and the worked
# example's boxes still choose a cell). Each cell is an invisible marker that chromium styles on every redraw:
# at 128 × 128 that took about 4 s of the browser's main thread per toggle (CDP profile, python -m bench --browser).
MAX_CELL_TARGETS = 64 * 64


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


def add_cell_targets(fig: go.Figure, n_query: int, n_key: int, *, xaxis: str = "x", yaxis: str = "y") -> bool:
    """Make the cells of a `[query_pos, key_pos]` heatmap on these axes clickable; False when it is too big."""
    if n_query * n_key > MAX_CELL_TARGETS:
        return False
    keys, queries = np.meshgrid(np.arange(n_key), np.arange(n_query))
    fig.add_trace(_targets(keys.ravel(), queries.ravel(), CELL_TARGET, 6, xaxis, yaxis))
    fig.update_layout(clickmode="event+select")
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
    """(query, key) of a clicked cell target of `fig`, from a click's selection ({"points": [...]})."""
    for point in _points(selection):
        curve = point.get("curve_number")
        if curve is not None and curve < len(fig.data) and fig.data[curve].name == CELL_TARGET:
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
