"""Click targets on heatmaps and overview tiles, and reading a click back from a selection."""

import numpy as np
import plotly.io as pio

from model import load_model
from viz import plain
from viz._common import is_decoration
from viz.clickable import clicked_cell, clicked_tile, with_cell_targets, with_tile_targets
from viz.export import figure_to_csv
from viz.overview import heads_overview
from viz.content.attention import pattern_of_head


def sent(fig: dict) -> str:
    """The figure as the browser receives it."""
    return pio.to_json(plain.plotly_dict(fig), validate=False)


def test_a_click_on_a_cell_or_on_a_masked_cell_reads_back_query_and_key():
    trace = load_model("toy").trace(["The cat sat on the mat."])  # causal: the cells above the diagonal are masked
    fig = pattern_of_head(trace, 0, 0, 1)
    before = (figure_to_csv(fig), len(fig["data"]), [t["type"] for t in fig["data"]])
    shared = sent(fig)
    fig, clickable = with_cell_targets(pattern := fig)
    assert clickable and sent(pattern) == shared  # the figure given (shared by sessions) is unchanged
    assert (figure_to_csv(fig), len(fig["data"]), [t["type"] for t in fig["data"]]) == before  # nothing added, no data changed
    assert fig["layout"]["clickmode"] == "event"  # a click selects nothing: no trace is dimmed
    heat = next(i for i, t in enumerate(fig["data"]) if t["type"] == "heatmap" and not is_decoration(t))
    masked = next(i for i, t in enumerate(fig["data"]) if t["type"] == "heatmap" and is_decoration(t))  # gaps but on masked cells
    assert clicked_cell({"points": [{"curve_number": heat, "point_index": [2, 1], "x": 1, "y": 2}]}, fig) == (2, 1)
    assert clicked_cell({"points": [{"curve_number": masked, "point_index": [1, 4], "x": 4, "y": 1}]}, fig) == (1, 4)
    assert clicked_cell({"points": [{"curve_number": len(fig["data"]), "x": 3, "y": 2}]}, fig) is None  # no such trace
    assert clicked_cell(None, fig) is None


def test_only_the_heatmap_on_the_given_axes_answers_clicks():
    fig = plain.figure([dict(type="heatmap", z=np.eye(3)), dict(type="heatmap", z=np.eye(3), xaxis="x2", yaxis="y2")], {})
    before = sent(fig)
    unchanged, clickable = with_cell_targets(fig, xaxis="x3", yaxis="y3")  # no heatmap there
    assert not clickable and unchanged is fig and sent(fig) == before
    fig, clickable = with_cell_targets(fig, xaxis="x2", yaxis="y2")
    assert clickable
    assert clicked_cell({"points": [{"curve_number": 0, "x": 1, "y": 0}]}, fig) is None
    assert clicked_cell({"points": [{"curve_number": 1, "x": 1, "y": 0}]}, fig) == (0, 1)


def test_overview_tiles_name_their_layer_and_head():
    patterns = np.random.default_rng(0).random((3, 5, 6, 6))
    fig = heads_overview(patterns, list("abcdef"), list("abcdef"))
    fig = with_tile_targets(overview := fig)
    assert len(fig["data"]) == len(overview["data"]) + 1 and fig["layout"]["clickmode"] == "event+select"
    targets = fig["data"][-1]
    assert len(targets["x"]) == 15
    index = 2 * 5 + 4  # layer 2, head 4
    selection = {"points": [{"curve_number": len(fig["data"]) - 1, "point_index": index, "x": targets["x"][index], "y": targets["y"][index]}]}
    assert clicked_tile(selection, fig) == (2, 4)
    meta = fig["data"][0]["meta"]
    assert targets["x"][index] == 4 * (meta["panel_cols"] + meta["gap"]) + (meta["panel_cols"] - 1) / 2
    # the grid's own extent, layer 0 on top: the tiles' markers (as large as a tile) must not widen the axes,
    # which shrank the grid and left blank space above it in the page
    width, height = 5 * (meta["panel_cols"] + meta["gap"]) - meta["gap"], 3 * (meta["panel_rows"] + meta["gap"]) - meta["gap"]
    assert list(fig["layout"]["xaxis"]["range"]) == [-0.5, width - 0.5] and list(fig["layout"]["yaxis"]["range"]) == [height - 0.5, -0.5]
    assert fig["layout"]["xaxis"].get("autorange") is None and fig["layout"]["yaxis"].get("autorange") is None
    assert fig["layout"]["yaxis"]["constraintoward"] == "top"  # room a narrow grid leaves goes below it
