"""Clicks on heatmap cells and overview tiles, read back from the chart's click.

A cell of an attention heatmap is clicked on the heatmap itself: plotly.js reports the cell's column and
row as the point's x and y (the axes are positions). Masked cells are gaps without hover, so there the
click lands on the transparent heatmap of the masked cells over it (``viz.heatmap.mask_marks``). The
traces that answer a click say so in their ``meta`` ("click"). The tiles of the all-heads overview
get a layer of invisible markers, one per tile. Figures are dicts (viz.plain), and the ones given may be
shared by sessions: `with_cell_targets` and `with_tile_targets` return new figures. A click comes in the
shape that `st.plotly_chart(..., on_select="rerun")` gives.
"""

from __future__ import annotations

import numpy as np

from . import plain
from ._common import DECORATION_META

CELL_TARGET = "cell target"
TILE_TARGET = "tile target"


def _targets(x, y, name: str, size: float, xaxis: str = "x", yaxis: str = "y", customdata=None) -> dict:
    """Invisible markers that answer clicks, as plotly JSON (viz.plain: as plotly's validators write them)."""
    trace = {
        "type": "scatter",
        "x": np.asarray(x, dtype=np.float32),
        "y": np.asarray(y, dtype=np.float32),
        "mode": "markers",
        "marker": {"size": size, "opacity": 0, "color": "black"},
        "hoverinfo": "none",
        "showlegend": False,
        "name": name,
        "xaxis": xaxis,
        "yaxis": yaxis,
        "meta": {**DECORATION_META, "click": name},
    }
    if customdata is not None:
        trace["customdata"] = np.asarray(customdata)
    return trace


def with_cell_targets(fig: dict, *, xaxis: str = "x", yaxis: str = "y", cell: tuple = (None, None)) -> tuple[dict, bool]:
    """A copy of `fig` whose heatmap cells on these axes answer clicks (and its masked cells', whose
    transparent heatmap lies over the gaps), the chosen `cell` (query, key) outlined, and True; `fig`
    itself and False when there is no heatmap there (nothing to add). `fig` is never changed: it may be
    shared by sessions.

    Written as plotly JSON (viz.plain), not by editing a validated copy: a new view's two clickable
    figures took 9.7 ms that way, of a new view's ~110 ms of server CPU. Nothing is added to the heatmap
    itself: an invisible marker on every cell would make the redraw of the stages chart at 16
    tokens take 45-50 ms instead of 26-32 ms, and 4 s at 128 × 128 (chromium: markers are styled one by one)."""
    data = list(fig["data"])
    on_axes = lambda trace: (trace.get("xaxis") or "x") == xaxis and (trace.get("yaxis") or "y") == yaxis  # noqa: E731
    found = [i for i, trace in enumerate(data) if trace.get("type") == "heatmap" and on_axes(trace)]
    if not found:
        return fig, False
    for i in found:
        data[i] = {**data[i], "meta": {**(data[i].get("meta") or {}), "click": CELL_TARGET}}
    if cell[0] is not None:
        data.append(_cell_mark(*cell, xaxis=xaxis, yaxis=yaxis))
    return plain.figure(data, {**fig["layout"], "clickmode": "event"}), True  # a click selects nothing: no trace is dimmed


def with_tile_targets(fig: dict) -> dict:
    """A copy of a `heads_overview` figure whose tiles answer clicks: one invisible marker as large as
    each tile, its (layer, head) in `customdata`. `fig` is not changed."""
    meta = fig["data"][0]["meta"]  # the tiled heatmap says how its panels are laid out
    rows, cols, gap = meta["panel_rows"], meta["panel_cols"], meta["gap"]
    layers, heads = np.meshgrid(np.arange(meta["n_layers"]), np.arange(meta["n_heads"]), indexing="ij")
    x = heads.ravel() * (cols + gap) + (cols - 1) / 2
    y = layers.ravel() * (rows + gap) + (rows - 1) / 2
    size = max(12, int(0.8 * (fig["layout"]["height"] - 140) / max(meta["n_layers"], 1)))
    custom = np.stack([layers.ravel(), heads.ravel()], axis=1)
    targets = _targets(x, y, TILE_TARGET, size, customdata=custom)
    return plain.figure([*fig["data"], targets], {**fig["layout"], "clickmode": "event+select"})


def _points(selection) -> list[dict]:
    if selection is None:
        return []
    points = selection.get("points") if isinstance(selection, dict) else getattr(selection, "points", None)
    return list(points or [])


def clicked_cell(selection, fig: dict) -> tuple[int, int] | None:
    """(query, key) of a clicked cell of `fig` (see `with_cell_targets`), from a click's selection ({"points": [...]})."""
    data = fig["data"]
    for point in _points(selection):
        curve = point.get("curve_number")
        if curve is None or not 0 <= curve < len(data):
            continue
        meta = data[curve].get("meta")
        if not isinstance(meta, dict) or meta.get("click") != CELL_TARGET:
            continue
        return int(round(point["y"])), int(round(point["x"]))
    return None


def clicked_tile(selection, fig: dict) -> tuple[int, int] | None:
    """(layer, head) of a clicked overview tile of `fig` (see `with_tile_targets`)."""
    data = fig["data"]
    for point in _points(selection):
        curve = point.get("curve_number")
        if curve is not None and 0 <= curve < len(data) and data[curve].get("name") == TILE_TARGET:
            index = point.get("point_index", point.get("point_number"))
            layer, head = data[curve]["customdata"][index]
            return int(layer), int(head)
    return None


def _cell_mark(query: int, key: int, *, xaxis: str = "x", yaxis: str = "y") -> dict:
    """The outline of the chosen cell (the worked example's query and key), as plotly JSON."""
    return {
        "type": "scatter",
        "x": [int(key)],
        "y": [int(query)],
        "mode": "markers",
        "marker": {"symbol": "square-open", "size": 14, "color": "#ff4b4b", "line": {"width": 3}},
        "unselected": {"marker": {"opacity": 1}},  # a click elsewhere must not dim it
        "hoverinfo": "skip",
        "showlegend": False,
        "name": "worked example",
        "xaxis": xaxis,
        "yaxis": yaxis,
        "meta": dict(DECORATION_META),
    }
